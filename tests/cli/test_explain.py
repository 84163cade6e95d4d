"""``python -m oclclust explain MODEL``: the kernels a saved model's fit ran."""
import json

import numpy as np
import pytest

import oclclust as oc
from conftest import run_cli
from oclclust.__main__ import main
from oclclust.cli.explain import explain
from oclclust.io.modelio import save_model
from oclclust.runtime.resources import resource_dir


@pytest.fixture
def saved(devices, blobs, tmp_path):
    model = oc.KMeans(n_clusters=4, random_state=0, devices=devices).fit(blobs[0])
    save_model(model, tmp_path / "m.npz")
    return model, tmp_path / "m.npz"


def test_explain_prints_each_kernel_per_device(saved):
    model, path = saved
    proc = run_cli("explain", str(path))
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    out = proc.stdout
    assert out.startswith(f"KMeans: {len(model.kernels_)} kernel(s) on 1 device(s)")
    templates = resource_dir("templates").resolve()
    for record in model.kernels_:
        assert f"device: {record['device']}" in out
        assert f"pass {record['pass']}, variant {record['variant']}" in out
        assert f"template  {record['template']}" in out
        assert f"file      {templates / record['template']}" in out
    lloyd = next(r for r in model.kernels_ if r["pass"] == "lloyd")
    assert f"k={lloyd['key']['k']}" in out and f"wg={lloyd['key']['wg']}" in out


def test_explain_of_an_estimator_is_the_files(saved):
    model, path = saved
    assert explain(model) == explain(path) == explain(str(path))


def test_explain_errors_are_one_line(saved, tmp_path, capsys):
    model, path = saved
    with np.load(path) as npz:
        files = {k: npz[k] for k in npz.files}
    meta = json.loads(str(files["__meta__"]))
    del meta["attributes"]["kernels_"]
    files["__meta__"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "before.npz", **files)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    (tmp_path / "folder.npz").mkdir()
    for args, message in (([str(tmp_path / "none.npz")], "none.npz: no such file"),
                          ([str(tmp_path / "folder.npz")], "folder.npz: is a folder, not a file"),
                          ([str(tmp_path / "junk.npz")], "not a readable .npz"),
                          ([str(tmp_path / "before.npz")], "no record of the kernels")):
        assert main(["explain", *args]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert main(["explain"]) == 2
    with pytest.raises(ValueError, match="is not fitted"):
        explain(oc.KMeans())
