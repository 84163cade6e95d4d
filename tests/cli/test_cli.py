"""The command line: ``python -m oclclust devices`` and ``example``."""
import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oclclust as oc
from conftest import run_cli
from oclclust.runtime import devices as dv
from oclclust.runtime.profiles import PROFILE_TERMS
from oclclust.__main__ import main
from oclclust.cli.example import adjusted_rand_index, make_blobs

# the command line's own work is the host's (arguments, files, messages); the
# fits it runs are the estimators', which every runtime's run of the suite
# covers: these run on one runtime (153 s of PoCL's run, cold caches, here)
pytestmark = pytest.mark.one_runtime


def test_devices_verbose_lists_every_device_with_its_profile():
    proc = run_cli("devices", "-v")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    profiles = oc.list_devices()
    assert f"OpenCL devices: {len(profiles)}" in proc.stdout
    for p in profiles:
        assert p.name in proc.stdout and p.platform in proc.stdout
        for entry in p.profile_entries:
            assert entry in proc.stdout
    for term in PROFILE_TERMS:
        assert f"{term}=" in proc.stdout
    for field in ("compute_units", "local_mem_size", "max_work_group_size", "fp64",
                  "global_mem_size", "max_alloc_size"):
        assert f"{field}=" in proc.stdout


def test_devices_json_has_every_profile_field():
    proc = run_cli("devices", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    profiles = oc.list_devices()
    assert [d["name"] for d in data["devices"]] == [p.name for p in profiles]
    fields = {f.name for f in dataclasses.fields(dv.DeviceProfile)}
    for d in data["devices"]:
        assert set(d) == fields
    assert isinstance(data["discovery_errors"], list)


def test_devices_reports_platforms_that_failed(monkeypatch, capsys):
    real = dv.list_devices

    def with_a_broken_platform():
        profiles = real()
        dv.DISCOVERY_ERRORS.append("OpenCL platform 'Broken' skipped: clGetDeviceIDs failed")
        return profiles
    monkeypatch.setattr(dv, "list_devices", with_a_broken_platform)
    assert main(["devices"]) == 0
    assert "skipped: OpenCL platform 'Broken'" in capsys.readouterr().out


def test_example_on_the_platform_under_test(devices, tmp_path):
    platform = devices[0].platform
    out = tmp_path / "example.json"
    proc = run_cli("example", "--n", "2000", "--k", "4", "--devices", platform,
                   "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    for p in devices:
        assert p.name in proc.stdout
    assert "adjusted Rand index" in proc.stdout
    results = json.loads(out.read_text())["results"]
    assert [r["platform"] for r in results] == [platform] * len(devices)
    for r in results:
        assert "error" not in r
        assert r["ari"] > 0.99 and r["n_iter"] >= 1 and r["inertia"] > 0 and r["fit_s"] > 0


@pytest.mark.one_runtime   # argparse's and the devices' names: no runtime's work
@pytest.mark.parametrize("argv", [
    [],
    ["bogus"],
    ["example", "--n", "-3"],
    ["example", "--k", "0"],
    ["example", "--k", "many"],
    ["example", "--n", "10", "--k", "40"],
    ["example", "--std", "nan"],
    ["example", "--frob"],
    ["example", "--devices", "no-such-device-anywhere"],
    ["devices", "extra"],
], ids=lambda a: " ".join(a) or "no-command")
def test_mistakes_give_one_line_and_status_2(argv, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = [l for l in captured.err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("oclclust: error: "), captured.err
    assert captured.out == ""


@pytest.mark.one_runtime   # no device matches: none is opened
def test_a_mistake_has_no_traceback_from_the_shell():
    proc = run_cli("example", "--devices", "no-such-device-anywhere")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no OpenCL device matches" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.one_runtime   # argparse alone
@pytest.mark.parametrize("argv", [["--help"], ["devices", "--help"], ["example", "--help"]])
def test_help(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    assert "usage: oclclust" in capsys.readouterr().out


def test_adjusted_rand_index_matches_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.RandomState(0)
    for n, a, b in [(1, 1, 1), (2, 2, 1), (50, 3, 5), (1000, 10, 7), (300, 1, 4)]:
        x, y = rng.randint(0, a, n), rng.randint(0, b, n)
        assert adjusted_rand_index(x, y) == pytest.approx(metrics.adjusted_rand_score(x, y),
                                                          abs=1e-12)
    y = rng.randint(0, 6, 500)
    assert adjusted_rand_index(y, (y + 1) % 6) == pytest.approx(1.0)


def test_make_blobs_shape_and_seed():
    X, y, c = make_blobs(100, 3, 4, seed=1)
    assert X.shape == (100, 3) and X.dtype == np.float32 and y.shape == (100,)
    assert c.shape == (4, 3) and set(np.unique(y)) <= set(range(4))
    X2, y2, _ = make_blobs(100, 3, 4, seed=1)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)


def test_fit_then_predict_round_trip(devices, tmp_path):
    X = make_blobs(300, 3, 4, seed=1)[0]
    np.save(tmp_path / "x.npy", X)
    platform = devices[0].platform
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-k", "4", "--random-state", "0",
                   "--devices", platform, "--out", str(tmp_path / "m.npz"),
                   "--labels", str(tmp_path / "fit.csv"))
    assert proc.returncode == 0, proc.stderr
    assert "KMeans" in proc.stdout and "model written" in proc.stdout
    proc = run_cli("predict", str(tmp_path / "m.npz"), str(tmp_path / "x.npy"),
                   "--devices", platform, "--labels", str(tmp_path / "pred.npy"))
    assert proc.returncode == 0, proc.stderr
    fitted = np.loadtxt(tmp_path / "fit.csv", dtype=np.int64)
    assert (np.load(tmp_path / "pred.npy") == fitted).all()
    ref = oc.KMeans(n_clusters=4, random_state=0, devices=devices).fit(X)
    assert (fitted == ref.labels_).all()


def test_a_model_fitted_on_named_columns_reads_them_back(devices, tmp_path):
    """fit --columns a,c on a CSV with a header, then predict on the same file
    without --columns: the model's column names pick the same columns (the
    fit's labels); other columns of it are refused on one line, by name."""
    X = make_blobs(200, 4, 3, seed=2)[0]
    path = tmp_path / "data.csv"
    path.write_text("a,b,c,d\n" + "\n".join(",".join(map(str, r)) for r in X) + "\n")
    platform = devices[0].platform
    proc = run_cli("fit", str(path), "-k", "3", "--random-state", "0", "--columns", "a,c",
                   "--devices", platform, "--out", str(tmp_path / "m.npz"),
                   "--labels", str(tmp_path / "fit.npy"))
    assert proc.returncode == 0, proc.stderr
    from oclclust.io.modelio import load_model
    assert list(load_model(tmp_path / "m.npz").feature_names_in_) == ["a", "c"]
    proc = run_cli("predict", str(tmp_path / "m.npz"), str(path), "--devices", platform,
                   "--labels", str(tmp_path / "pred.npy"))
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.load(tmp_path / "pred.npy"), np.load(tmp_path / "fit.npy"))
    proc = run_cli("predict", str(tmp_path / "m.npz"), str(path), "--columns", "c,a",
                   "--devices", platform)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "feature names" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_fit_spherical_with_kmeans_parallel(devices, tmp_path):
    X = make_blobs(300, 3, 4, seed=1)[0]
    np.save(tmp_path / "x.npy", X)
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-k", "4", "--random-state", "0",
                   "--init", "k-means||", "--oversampling-factor", "1.5", "--spherical",
                   "--devices", devices[0].platform, "--out", str(tmp_path / "m.npz"),
                   "--labels", str(tmp_path / "fit.csv"))
    assert proc.returncode == 0, proc.stderr
    ref = oc.KMeans(n_clusters=4, random_state=0, init="k-means||", oversampling_factor=1.5,
                    spherical=True, devices=devices).fit(X)
    assert (np.loadtxt(tmp_path / "fit.csv", dtype=np.int64) == ref.labels_).all()


# refused before any device is opened (the usage errors, the data file and the model
# file read first): on one runtime; the two refused by the estimator's fit on each
BEFORE_DEVICES = pytest.mark.one_runtime


@pytest.mark.parametrize("args,status,message", [
    pytest.param(["fit", "{x}"], 2, "-k is needed", marks=BEFORE_DEVICES),
    pytest.param(["fit", "{x}", "-k", "2", "--linkage", "ward"], 2,
                 "does not apply to --algorithm kmeans", marks=BEFORE_DEVICES),
    pytest.param(["fit", "{bad}", "-k", "2"], 1, "bad.npy: not a valid .npy",
                 marks=BEFORE_DEVICES),
    (["fit", "{x}", "-k", "999"], 1, "should be >= n_clusters=999"),
    pytest.param(["predict", "{x}", "{x}"], 1, "not a readable .npz model",
                 marks=BEFORE_DEVICES),
    pytest.param(["fit", "{x}", "-k", "2", "-a", "gmm", "--spherical"], 2,
                 "--spherical does not apply to --algorithm gmm", marks=BEFORE_DEVICES),
    pytest.param(["fit", "{x}", "-k", "2", "--checkpoint-every", "0"], 2,
                 "--checkpoint-every: an integer of iterations must be >= 1",
                 marks=BEFORE_DEVICES),
    pytest.param(["fit", "{x}", "-k", "2", "--checkpoint-every", "soon"], 2,
                 "a string like '30s', '5min', '1h'", marks=BEFORE_DEVICES),
    pytest.param(["fit", "{x}", "-k", "2", "-a", "hierarchical", "--checkpoint", "{x}"], 2,
                 "--checkpoint does not apply to --algorithm hierarchical",
                 marks=BEFORE_DEVICES),
    (["fit", "{x}", "-k", "2", "--checkpoint", "{bad}"], 1,
     "not a readable oclclust checkpoint"),
])
def test_fit_mistakes_give_one_line(args, status, message, devices, tmp_path):
    np.save(tmp_path / "x.npy", make_blobs(40, 2, 2)[0])
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    args = [a.format(x=tmp_path / "x.npy", bad=tmp_path / "bad.npy") for a in args]
    proc = run_cli(*args, "--devices", devices[0].platform)
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stderr and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_fit_resumes_from_its_checkpoint(devices, tmp_path, monkeypatch):
    """``fit --checkpoint`` goes on from the checkpoint an interrupted fit of
    the same data and parameters left (its first iterations' history is
    the checkpoint's) and ends at the uninterrupted model."""
    from oclclust.cluster import checkpoint
    from oclclust.io.modelio import load_model
    X, ck = make_blobs(300, 3, 4, seed=1)[0], tmp_path / "fit.ckpt"
    np.save(tmp_path / "x.npy", X)

    def make(**kw):
        return oc.KMeans(4, random_state=0, max_iter=6, tol=0, devices=devices, **kw)
    real = checkpoint.Checkpoint.write

    def interrupted(self, state):   # the fit stops after its 2nd checkpoint
        real(self, state)
        if state["iteration"] == 2:
            raise KeyboardInterrupt
    monkeypatch.setattr(checkpoint.Checkpoint, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        make(checkpoint=ck).fit(X)
    monkeypatch.undo()
    saved = checkpoint.read(ck)[1]["history"]
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-k", "4", "--random-state", "0",
                   "--max-iter", "6", "--tol", "0", "--checkpoint", str(ck),
                   "--checkpoint-every", "1", "--devices", devices[0].platform,
                   "--out", str(tmp_path / "m.npz"))
    assert proc.returncode == 0, proc.stderr
    model, ref = load_model(tmp_path / "m.npz"), make().fit(X)
    assert model.history_[:2] == saved and len(saved) == 2
    for name in ("cluster_centers_", "inertia_", "n_iter_"):
        assert np.array_equal(getattr(model, name), getattr(ref, name)), name


@pytest.mark.parametrize("algorithm,extra", [
    ("ensemble", ["--n-models", "3"]), ("cmeans", ["-m", "1.5"]),
    ("gmm", ["--covariance-type", "diag"]), ("gmm", ["--covariance-type", "tied"]),
    ("gmm", ["--covariance-type", "spherical"]), ("hierarchical", ["--linkage", "average"])])
def test_fit_every_algorithm(algorithm, extra, devices, tmp_path):
    """Each algorithm fits from the command line; its model file (or, for
    hierarchical, its labels and linkage matrix) comes back usable."""
    X = make_blobs(200, 3, 4, seed=2)[0]
    np.save(tmp_path / "x.npy", X)
    platform = devices[0].platform
    args = ["fit", str(tmp_path / "x.npy"), "-a", algorithm, "-k", "4", "--devices", platform,
            "--out", str(tmp_path / "m.npz"), "--labels", str(tmp_path / "l.npy"), *extra]
    if algorithm == "hierarchical":
        args += ["--tree", str(tmp_path / "z.npy")]
    else:
        args += ["--random-state", "0"]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    labels = np.load(tmp_path / "l.npy")
    assert labels.shape == (200,) and len(np.unique(labels)) == 4
    if algorithm == "hierarchical":
        from scipy.cluster.hierarchy import fcluster, is_valid_linkage
        Z = np.load(tmp_path / "z.npy")
        assert is_valid_linkage(Z)
        assert len(np.unique(fcluster(Z, 4, "maxclust"))) == 4
        return
    proc = run_cli("predict", str(tmp_path / "m.npz"), str(tmp_path / "x.npy"),
                   "--devices", platform, "--labels", str(tmp_path / "p.npy"))
    assert proc.returncode == 0, proc.stderr
    assert (np.load(tmp_path / "p.npy") == labels).all()


@pytest.mark.parametrize("algorithm,extra", [("kmeans", ["--random-state", "0"]),
                                             ("gmm", ["--min-components", "2"]),
                                             ("hierarchical", [])])
def test_fit_plot(algorithm, extra, devices, tmp_path):
    """--plot writes a PNG: clusters (PCA of 3-D data), with the MDL path,
    or the dendrogram."""
    pytest.importorskip("matplotlib")
    np.save(tmp_path / "x.npy", make_blobs(150, 3, 3, seed=3)[0])
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-a", algorithm, "-k", "4",
                   "--devices", devices[0].platform, "--plot", str(tmp_path / "p.png"), *extra)
    assert proc.returncode == 0, proc.stderr
    png = (tmp_path / "p.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


@pytest.mark.parametrize("k", [None, "12"])
def test_fit_hdbscan(k, devices, tmp_path):
    """fit -a hdbscan: -k is min_cluster_size (optional); the labels and the
    model file are oc.HDBSCAN's; --plot draws its clusters."""
    from oclclust.io.modelio import load_model
    X = make_blobs(200, 3, 4, seed=2)[0]
    np.save(tmp_path / "x.npy", X)
    platform = devices[0].platform
    args = ["fit", str(tmp_path / "x.npy"), "-a", "hdbscan", "--devices", platform,
            "--out", str(tmp_path / "m.npz"), "--labels", str(tmp_path / "l.npy")]
    if k is not None:
        args += ["-k", k]
    if k is None and __import__("importlib.util").util.find_spec("matplotlib"):
        args += ["--plot", str(tmp_path / "p.png")]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    if "--plot" in args:
        assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    want = oc.HDBSCAN(min_cluster_size=int(k or 5), devices=devices).fit(X)
    np.testing.assert_array_equal(np.load(tmp_path / "l.npy"), want.labels_)
    assert found_words(want.labels_) in proc.stdout
    model = load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(model.probabilities_, want.probabilities_)


def test_fit_dbscan(devices, tmp_path):
    """fit -a dbscan: --eps and -k (min_samples); the labels and the model
    file are oc.DBSCAN's."""
    from oclclust.io.modelio import load_model
    X = make_blobs(200, 3, 4, seed=2)[0]
    np.save(tmp_path / "x.npy", X)
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-a", "dbscan", "--eps", "0.9", "-k", "4",
                   "--devices", devices[0].platform, "--out", str(tmp_path / "m.npz"),
                   "--labels", str(tmp_path / "l.npy"))
    assert proc.returncode == 0, proc.stderr
    want = oc.DBSCAN(0.9, min_samples=4, devices=devices).fit(X)
    np.testing.assert_array_equal(np.load(tmp_path / "l.npy"), want.labels_)
    assert found_words(want.labels_) in proc.stdout
    model = load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(model.core_sample_indices_, want.core_sample_indices_)


def found_words(labels):
    """What a density fit's summary says it found."""
    return (f"{len(np.unique(labels[labels >= 0]))} clusters, "
            f"{np.count_nonzero(labels < 0)} noise points")


@pytest.mark.parametrize("outputs", [[], ["--labels", "{tmp}/l.npy"], ["--out", "{tmp}/m.npz"]])
@pytest.mark.parametrize("algorithm,extra", [("hierarchical", ["-k", "3"]), ("kmeans", ["-k", "3"])])
@pytest.mark.covering(1)
def test_fit_summary_and_a_fit_not_saved(algorithm, extra, outputs, devices, tmp_path):
    """A hierarchical fit says how many clusters it found; a fit with no
    output option says on stderr that it was not saved (once it ran)."""
    X = make_blobs(120, 2, 3, seed=1)[0]
    np.save(tmp_path / "x.npy", X)
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-a", algorithm, *extra,
                   "--devices", devices[0].platform,
                   *[o.format(tmp=tmp_path) for o in outputs])
    assert proc.returncode == 0, proc.stderr
    assert ("3 clusters" in proc.stdout) == (algorithm == "hierarchical"), proc.stdout
    assert "noise points" not in proc.stdout
    assert ("the fit was not saved" in proc.stderr) == (not outputs), proc.stderr


def test_devices_table_is_one_short_line_a_device(capsys):
    """``oclclust devices``: a count, a header and one line under 100
    characters a device; ``oc.show_devices()`` prints the same."""
    proc = run_cli("devices")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    profiles = oc.list_devices()
    assert lines[0] == f"OpenCL devices: {len(profiles)}"
    assert lines[1].split() == ["#", "device", "platform", "type", "units", "memory", "local",
                                "fp64"]
    for i, (line, p) in enumerate(zip(lines[2:], profiles)):
        assert len(line) < 100, line
        assert line.split()[0] == str(i) and p.type in line
        assert p.name[:20] in line and p.platform[:15] in line
    assert len(lines) == 2 + len(profiles) + len(dv.DISCOVERY_ERRORS)
    oc.show_devices()
    # the same table, but for figures a runtime reports anew in each process
    # (PoCL's global memory follows the memory free on the GPU host)
    def shape(text):
        return [re.sub(r"\d+(\.\d+)?", "N", line).split() for line in text.splitlines()]
    assert shape(capsys.readouterr().out) == shape(proc.stdout)


def no_opencl_env(tmp_path):
    """An environment whose ICD loader finds no OpenCL runtime."""
    empty = tmp_path / "no-vendors"
    empty.mkdir(exist_ok=True)
    env = dict(os.environ, OCL_ICD_VENDORS=str(empty))
    env.pop("OCLCLUST_DEVICES", None)
    return env


@pytest.mark.one_runtime   # no runtime at all
@pytest.mark.parametrize("argv", [["devices"], ["fit", "{x}", "-k", "2"],
                                  ["example", "--n", "100", "--k", "2"]])
def test_no_opencl_runtime_is_one_line_naming_what_to_install(argv, tmp_path):
    np.save(tmp_path / "x.npy", make_blobs(40, 2, 2)[0])
    argv = [a.format(x=tmp_path / "x.npy") for a in argv]
    proc = subprocess.run([sys.executable, "-m", "oclclust", *argv], capture_output=True,
                          text=True, timeout=300, env=no_opencl_env(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        "oclclust: error: no OpenCL runtime found: install pocl-opencl-icd (apt) or "
        "pocl-binary-distribution (pip) for the CPU, or your GPU's OpenCL driver"], proc.stderr
    assert "setup.sh" not in proc.stdout + proc.stderr
    if argv == ["devices"]:
        assert proc.stdout.startswith("OpenCL devices: 0\n")


@pytest.mark.one_runtime   # no runtime at all
def test_no_opencl_runtime_in_the_library(tmp_path):
    """An estimator's fit, select_devices: NoOpenCLError (a RuntimeError)
    naming what to install; list_devices: an empty list; show_devices: the
    count and the same words."""
    code = textwrap.dedent("""
        import numpy as np, oclclust as oc
        assert oc.list_devices() == []
        oc.show_devices()
        for call in (lambda: oc.KMeans(2).fit(np.zeros((10, 2))),
                     lambda: oc.select_devices("cpu")):
            try:
                call()
            except oc.NoOpenCLError as exc:
                assert isinstance(exc, RuntimeError)
                print("raised:", exc)
            else:
                raise SystemExit("no error")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=no_opencl_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "OpenCL devices: 0"
    assert sum(l.startswith("raised: no OpenCL runtime found: install pocl-opencl-icd")
               for l in lines) == 2, proc.stdout
    assert lines[-3].startswith("no OpenCL runtime found:"), proc.stdout


# an optional package made missing (None in sys.modules: its import fails) before the
# command line runs
WITHOUT = ("import sys; sys.modules[sys.argv.pop(1)] = None; "
           "from oclclust.cli.main import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.one_runtime   # refused before any device work
@pytest.mark.parametrize("module,argv,status,message", [
    ("h5py", ["fit", "{tmp}/x.h5", "-k", "2"], 1,
     "reading x.h5 requires h5py: pip install 'oclclust[formats]'"),
    ("flowio", ["fit", "{tmp}/x.fcs", "-k", "2"], 1,
     "reading x.fcs requires flowio: pip install 'oclclust[formats]'"),
    ("mpi4py", ["fit", "{tmp}/x.npy", "-k", "2", "--mpi", "on"], 1,
     "MPI (--mpi) requires mpi4py: pip install 'oclclust[mpi]'"),
    ("matplotlib", ["fit", "{tmp}/x.npy", "-k", "2", "--plot", "{tmp}/p.png"], 2,
     "--plot: plotting requires matplotlib: pip install 'oclclust[plot]'"),
])
def test_a_missing_optional_package_is_one_line_naming_its_extra(module, argv, status,
                                                                 message, devices, tmp_path):
    np.save(tmp_path / "x.npy", make_blobs(40, 2, 2)[0])
    for name in ("x.h5", "x.fcs"):
        (tmp_path / name).write_bytes(b"whatever")
    argv = [a.format(tmp=tmp_path) for a in argv] + ["--devices", devices[0].platform]
    env = dict(os.environ)
    env.pop("OCLCLUST_DEVICES", None)
    proc = subprocess.run([sys.executable, "-c", WITHOUT, module, *argv], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == status, proc.stderr
    assert proc.stderr.splitlines() == [f"oclclust: error: {message}"], proc.stderr


def closed_early(argv):
    """(status, stderr) of ``oclclust ARGV`` whose reader closes its end
    of the pipe at once (``| head -0``)."""
    env = dict(os.environ)
    env.pop("OCLCLUST_DEVICES", None)
    proc = subprocess.Popen([sys.executable, "-m", "oclclust", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=300), err


def test_a_reader_that_stops_early_is_no_error(devices, tmp_path):
    """``predict ... | head`` and ``explain ... | head``: no "Broken pipe"
    message, no traceback; the status of a process a closed pipe ends."""
    X = make_blobs(30_000, 2, 3)[0]
    np.save(tmp_path / "x.npy", X)
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-k", "3", "--devices", devices[0].platform,
                   "--out", str(tmp_path / "m.npz"))
    assert proc.returncode == 0, proc.stderr
    for argv in (["predict", str(tmp_path / "m.npz"), str(tmp_path / "x.npy")],
                 ["explain", str(tmp_path / "m.npz")]):
        status, err = closed_early(argv + ["--devices", devices[0].platform]
                                   if argv[0] == "predict" else argv)
        assert err == "" and status == 141, (argv[0], status, err)


@pytest.mark.one_runtime   # argparse alone
def test_compare_help_names_each_default_once():
    proc = run_cli("compare", "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "default:" not in text and "(default None)" not in text, text
    for option, default in (("--devices", "all"), ("--seed", "0"), ("--iters", "10")):
        after = text.split(f"{option} ")[-1]
        assert after.count("default") >= 1 and f"default {default}" in after, option
    assert text.count("(default 0)") == 1


# the fit only makes the model file (test_fit_every_algorithm fits an ensemble on each
# runtime); predict refuses --proba before reading the rows onto a device
@pytest.mark.one_runtime
def test_messages_name_estimators_without_a_wrong_article(devices, tmp_path):
    X = make_blobs(60, 2, 3)[0]
    np.save(tmp_path / "x.npy", X)
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-a", "ensemble", "-k", "3",
                   "--n-models", "2", "--devices", devices[0].platform,
                   "--out", str(tmp_path / "m.npz"))
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("predict", str(tmp_path / "m.npz"), str(tmp_path / "x.npy"),
                   "--proba", str(tmp_path / "p.npy"), "--devices", devices[0].platform)
    assert proc.returncode == 2
    assert "EnsembleKMeans models have no memberships" in proc.stderr
    assert "a EnsembleKMeans" not in proc.stderr


def test_a_warning_is_one_line_naming_its_kind(devices, tmp_path):
    """A fit's warning on the command line: "oclclust: warning: ... (Kind)",
    not a line of code inside the package or Python's runner."""
    np.save(tmp_path / "x.npy", make_blobs(200, 2, 3)[0])
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-a", "cmeans", "-k", "3", "--max-iter", "1",
                   "--tol", "0", "--devices", devices[0].platform,
                   "--out", str(tmp_path / "m.npz"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "oclclust: warning: FuzzyCMeans did not converge in max_iter=1 iterations (the last "
        f"centre shift {proc.stderr.split('shift ')[1].split(' ')[0]} is above tol's 0): "
        "increase max_iter or tol (ConvergenceWarning)"], proc.stderr
