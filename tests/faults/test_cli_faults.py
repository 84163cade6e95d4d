"""The command line under bad outputs, bad model files and bad data: one
line on stderr and a non-zero exit each, no traceback, no warning before
it; an output that cannot be written is refused before the fit starts."""
import json
import os

import numpy as np
import pytest

import oclclust as oc
from conftest import make_blobs, run_cli
from oclclust.io.modelio import save_model

# flag -> (an accepted extension, the algorithm and flags that write it)
OUTPUTS = {"--out": (".npz", ["-a", "kmeans"]), "--labels": (".npy", ["-a", "kmeans"]),
           "--tree": (".npy", ["-a", "hierarchical", "--linkage", "average"]),
           "--plot": (".png", ["-a", "kmeans"])}


def one_line_error(proc, status, message):
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oclclust: error: "), proc.stderr
    assert message in lines[0], lines[0]


@pytest.fixture
def data(tmp_path):
    np.save(tmp_path / "x.npy", make_blobs(60, 3, 2)[0])
    return tmp_path / "x.npy"


def _bad_output(tmp_path, kind, ext):
    """(path, message) of an output path that cannot be written."""
    if kind == "missing-folder":
        return tmp_path / "no" / f"such{ext}", f"no folder {tmp_path / 'no'}"
    if kind == "a-folder":
        (tmp_path / f"dir{ext}").mkdir()
        return tmp_path / f"dir{ext}", "is a folder, not a file"
    if kind == "under-a-file":
        (tmp_path / "file.txt").write_text("")
        return tmp_path / "file.txt" / f"out{ext}", f"no folder {tmp_path / 'file.txt'}"
    return tmp_path / "out.xyz", "unknown extension .xyz (use "


# refused before any device work (the estimator is only constructed, --devices not yet
# resolved): the same on every runtime, so one runtime runs it (tools/test.sh)
@pytest.mark.one_runtime
@pytest.mark.parametrize("kind", ["missing-folder", "a-folder", "under-a-file",
                                  "unknown-extension"])
@pytest.mark.parametrize("flag", sorted(OUTPUTS))
def test_fit_refuses_an_output_before_fitting(flag, kind, data, devices, tmp_path):
    if flag == "--plot":
        pytest.importorskip("matplotlib")
    ext, algorithm = OUTPUTS[flag]
    path, message = _bad_output(tmp_path, kind, ext)
    proc = run_cli("fit", str(data), "-k", "2", *algorithm, "--devices", devices[0].platform,
                   flag, str(path))
    one_line_error(proc, 2, f"{flag} {path}: {message}")
    assert proc.stdout == ""   # no fit ran: it prints its summary first
    assert not (tmp_path / "out.xyz").exists() and not (tmp_path / "out.xyz.npy").exists()


@pytest.mark.one_runtime   # refused before predicting (the model is loaded, not run)
@pytest.mark.parametrize("flag", ["--labels", "--proba"])
@pytest.mark.parametrize("kind", ["missing-folder", "unknown-extension"])
def test_predict_refuses_an_output_before_predicting(flag, kind, data, devices, tmp_path):
    model = tmp_path / "m.npz"
    save_model(oc.FuzzyCMeans(n_clusters=2, random_state=0, devices=devices).fit(
        np.load(data)), model)
    path, message = _bad_output(tmp_path, kind, ".npy")
    proc = run_cli("predict", str(model), str(data), "--devices", devices[0].platform,
                   flag, str(path))
    one_line_error(proc, 2, f"{flag} {path}: {message}")
    assert proc.stdout == ""
    assert not (tmp_path / "out.xyz").exists() and not (tmp_path / "out.xyz.npy").exists()


@pytest.mark.one_runtime   # refused before the example opens a device
def test_example_refuses_its_json_output_before_running(devices, tmp_path):
    path = tmp_path / "no" / "results.json"
    proc = run_cli("example", "--n", "200", "--k", "2", "--devices", devices[0].platform,
                   "--json", str(path))
    one_line_error(proc, 2, f"--json {path}: no folder {tmp_path / 'no'}")
    assert proc.stdout == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("flag,ext", [("--out", ".npz"), ("--labels", ".npy"),
                                      ("--labels", ".csv")])
def test_a_failed_write_is_one_line(flag, ext, data, devices, tmp_path):
    """A disk that is full while the output is written: one line naming the file."""
    path = tmp_path / f"full{ext}"
    path.symlink_to("/dev/full")
    proc = run_cli("fit", str(data), "-k", "2", "--devices", devices[0].platform,
                   flag, str(path))
    one_line_error(proc, 1, f"{path}: cannot write it (No space left on device)")


def _truncated(path):
    path.write_bytes(path.read_bytes()[:300])


def _metadata_a_list(path):
    with np.load(path) as npz:
        files = {k: npz[k] for k in npz.files}
    files["__meta__"] = np.array("[]")
    np.savez(path, **files)


def _one_centre(path):
    with np.load(path) as npz:
        files = {k: npz[k] for k in npz.files}
    files["cluster_centers_"] = files["cluster_centers_"][:1]
    np.savez(path, **files)


def _sets_predict(path):
    with np.load(path) as npz:
        files = {k: npz[k] for k in npz.files}
    meta = json.loads(str(files["__meta__"]))
    meta["attributes"]["predict"] = None
    files["__meta__"] = np.array(json.dumps(meta))
    np.savez(path, **files)


@pytest.mark.one_runtime   # refused as the model is loaded (the fit only writes its file)
@pytest.mark.parametrize("damage,message", [
    (_truncated, "not a readable .npz model file"),
    (_metadata_a_list, "its metadata is a JSON array, not an object"),
    (_one_centre, "cluster_centers_ has shape (1, 3), expected (n_clusters=2"),
    (_sets_predict, "attribute(s) ['predict'] are not among a KMeans's"),
], ids=["truncated", "metadata-a-list", "one-centre", "sets-predict"])
def test_predict_refuses_a_bad_model_file(damage, message, data, devices, tmp_path):
    model = tmp_path / "m.npz"
    save_model(oc.KMeans(n_clusters=2, random_state=0, devices=devices).fit(np.load(data)),
               model)
    damage(model)
    proc = run_cli("predict", str(model), str(data), "--devices", devices[0].platform)
    one_line_error(proc, 1, f"{model}: ")
    assert message in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("algorithm", ["kmeans", "ensemble", "cmeans", "gmm"])
# an infinity: refused as the data is checked, before any device work (on one runtime);
# squares that overflow: found by the device's pass
@pytest.mark.parametrize("value", [pytest.param(np.inf, marks=pytest.mark.one_runtime), 1e300],
                         ids=["inf", "square-overflows"])
def test_non_finite_data_is_one_line_without_warnings(algorithm, value, devices, tmp_path):
    X = make_blobs(60, 3, 2)[0]
    X[7, 1] = value
    np.save(tmp_path / "x.npy", X)
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-a", algorithm, "-k", "2",
                   "--devices", devices[0].platform)
    one_line_error(proc, 1, "Input X contains NaN or infinity")


@pytest.mark.parametrize("algorithm", ["kmeans", "ensemble", "cmeans", "gmm"])
def test_float32_squares_that_overflow_are_one_line_without_warnings(algorithm, devices,
                                                                     tmp_path):
    """float32 rows whose squared norms pass float32's range (3e38): the
    centres' norms are inf, not a RuntimeWarning before the error."""
    X = make_blobs(60, 3, 2)[0].astype(np.float32)
    X[7, 1] = 3e38
    np.save(tmp_path / "x.npy", X)
    proc = run_cli("fit", str(tmp_path / "x.npy"), "-a", algorithm, "-k", "2",
                   "--devices", devices[0].platform)
    one_line_error(proc, 1, "Input X contains NaN or infinity")
