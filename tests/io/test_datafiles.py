"""Data files: every format read back equal to what was written; bad and
truncated files give a DataFileError naming the file."""
import numpy as np
import pytest

import oclclust as oc
from oclclust.io.datafiles import DataFileError, load_data

X = np.arange(24, dtype=np.float32).reshape(6, 4) / 3


def write_vecs(path, rows, dtype):
    with open(path, "wb") as fh:
        for row in rows:
            np.array([len(row)], "<i4").tofile(fh)
            np.asarray(row, dtype).tofile(fh)


@pytest.mark.parametrize("ext,dtype", [(".fvecs", np.float32), (".ivecs", np.int32),
                                       (".bvecs", np.uint8)])
def test_vecs(tmp_path, ext, dtype):
    rows = (np.arange(20).reshape(5, 4) * 7 % 250).astype(dtype)
    write_vecs(tmp_path / f"a{ext}", rows, dtype)
    np.testing.assert_array_equal(load_data(tmp_path / f"a{ext}"), rows)
    raw = (tmp_path / f"a{ext}").read_bytes()
    (tmp_path / f"t{ext}").write_bytes(raw[:-1])
    with pytest.raises(DataFileError, match=f"t{ext}: truncated"):
        load_data(tmp_path / f"t{ext}")
    write_vecs(tmp_path / f"m{ext}", [rows[0], rows[1][:2], rows[1][:2]], dtype)
    with pytest.raises(DataFileError, match="m" + ext):
        load_data(tmp_path / f"m{ext}")


def test_npy_npz(tmp_path):
    np.save(tmp_path / "a.npy", X)
    np.testing.assert_array_equal(load_data(tmp_path / "a.npy"), X)
    np.savez(tmp_path / "b.npz", data=X, other=X[:2])
    np.testing.assert_array_equal(load_data(tmp_path / "b.npz", key="data"), X)
    with pytest.raises(DataFileError, match="name one"):
        load_data(tmp_path / "b.npz")
    (tmp_path / "c.npy").write_bytes((tmp_path / "a.npy").read_bytes()[:100])
    with pytest.raises(DataFileError, match="c.npy"):
        load_data(tmp_path / "c.npy")
    np.save(tmp_path / "d.npy", X.ravel())
    with pytest.raises(DataFileError, match="2-D"):
        load_data(tmp_path / "d.npy")


@pytest.mark.parametrize("ext,sep", [(".csv", ","), (".tsv", "\t")])
def test_text_with_and_without_header(tmp_path, ext, sep):
    plain = tmp_path / f"p{ext}"
    plain.write_text("\n".join(sep.join(f"{v:.6f}" for v in row) for row in X))
    np.testing.assert_allclose(load_data(plain), X, atol=1e-5)
    named = tmp_path / f"h{ext}"
    named.write_text(sep.join("abcd") + "\n" + plain.read_text())
    np.testing.assert_allclose(load_data(named, columns=["c", "a"]), X[:, [2, 0]], atol=1e-5)
    np.testing.assert_allclose(load_data(named, columns=["3"]), X[:, [3]], atol=1e-5)
    with pytest.raises(DataFileError, match="no column named 'z'"):
        load_data(named, columns=["z"])
    bad = tmp_path / f"b{ext}"
    bad.write_text(plain.read_text() + "\n1" + sep + "2")
    with pytest.raises(DataFileError, match=f"b{ext}: line 7 has 2 fields"):
        load_data(bad)
    (tmp_path / f"e{ext}").write_text("")
    with pytest.raises(DataFileError, match="empty"):
        load_data(tmp_path / f"e{ext}")


def test_unknown_and_missing(tmp_path):
    with pytest.raises(DataFileError, match="no such file"):
        load_data(tmp_path / "nope.npy")
    (tmp_path / "d.npy").mkdir()
    with pytest.raises(DataFileError, match="d.npy: is a folder, not a file"):
        load_data(tmp_path / "d.npy")
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    with pytest.raises(DataFileError, match="unknown data format"):
        load_data(tmp_path / "x.parquet")


def test_fcs_channels(tmp_path):
    flowio = pytest.importorskip("flowio")
    with open(tmp_path / "a.fcs", "wb") as fh:
        flowio.create_fcs(fh, X.ravel(), ["FSC-A", "SSC-A", "CD3", "CD4"])
    np.testing.assert_allclose(load_data(tmp_path / "a.fcs"), X)
    np.testing.assert_allclose(load_data(tmp_path / "a.fcs", columns=["CD4", "FSC-A"]),
                               X[:, [3, 0]])
    (tmp_path / "t.fcs").write_bytes((tmp_path / "a.fcs").read_bytes()[:-10])
    with pytest.raises(DataFileError, match="t.fcs: not a readable FCS"):
        load_data(tmp_path / "t.fcs")


def test_hdf5_dataset_path(tmp_path):
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "a.h5", "w") as fh:
        fh["group/x"] = X
        fh["y"] = X[:2]
    np.testing.assert_array_equal(load_data(tmp_path / "a.h5", key="group/x"), X)
    np.testing.assert_array_equal(load_data(tmp_path / "a.h5", key="/group/x"), X)
    with pytest.raises(DataFileError, match=r"no dataset 'nope' \(has \['group/x', 'y'\]\)"):
        load_data(tmp_path / "a.h5", key="nope")
    with pytest.raises(DataFileError, match=r"holds datasets \['group/x', 'y'\]: name one"):
        load_data(tmp_path / "a.h5")
    with pytest.raises(DataFileError, match="no dataset 'group'"):   # a group is no dataset
        load_data(tmp_path / "a.h5", key="group")
    with h5py.File(tmp_path / "nested.h5", "w") as fh:   # one dataset, inside groups
        fh["run/1/events"] = X
    np.testing.assert_array_equal(load_data(tmp_path / "nested.h5"), X)
    (tmp_path / "bad.h5").write_bytes(b"not hdf5")
    with pytest.raises(DataFileError, match="bad.h5: not a readable HDF5"):
        load_data(tmp_path / "bad.h5", key="x")


@pytest.mark.parametrize("ext", [".npy", ".npz"])
@pytest.mark.parametrize("content,why", [
    (b"1.0,2.0\n3.0,4.0\n", "it holds text: name a text file .csv, .tsv or .txt"),
    (b"", "the file is empty"),
    (b"\x00\x01\x02\xff" * 20, "it has no {ext} header"),
])
def test_a_file_not_in_its_extensions_format_says_what_it_holds(tmp_path, ext, content, why):
    """Not numpy's message (on pickled data, for a text file named .npy)."""
    path = tmp_path / f"data{ext}"
    path.write_bytes(content)
    with pytest.raises(DataFileError) as caught:
        load_data(path)
    assert str(caught.value) == f"{path}: not a {ext} file ({why.format(ext=ext)})"
    assert "pickle" not in str(caught.value)


def test_column_names(tmp_path):
    """The names of the columns load_data keeps, where the file has them."""
    from oclclust.io.datafiles import column_names
    (tmp_path / "h.csv").write_text("a,b,c,d\n1,2,3,4\n5,6,7,8\n")
    (tmp_path / "h.tsv").write_text("x\ty\n1\t2\n")
    (tmp_path / "plain.csv").write_text("1,2\n3,4\n")
    np.save(tmp_path / "rows.npy", np.zeros((2, 2)))
    assert column_names(tmp_path / "h.csv") == ["a", "b", "c", "d"]
    assert column_names(tmp_path / "h.csv", ["c", "a"]) == ["c", "a"]
    assert column_names(tmp_path / "h.csv", ["0", "3"]) == ["a", "d"]
    assert column_names(tmp_path / "h.tsv") == ["x", "y"]
    assert column_names(tmp_path / "plain.csv") is None
    assert column_names(tmp_path / "rows.npy") is None
    with pytest.raises(DataFileError, match="no column named 'e'"):
        column_names(tmp_path / "h.csv", ["e"])


def test_a_model_reads_its_columns_of_the_same_file(devices, tmp_path):
    """A model fitted on columns a and c of a CSV keeps their names; given
    back as the columns to read, they pick the same columns of the file for
    predict (the command line's fit --columns a,c then predict)."""
    import warnings
    from oclclust.io.datafiles import column_names
    from oclclust.io.modelio import load_model, save_model
    from oclclust.runtime.columns import NamedRows
    rng = np.random.default_rng(0)
    rows = np.concatenate([rng.normal(c, 0.2, size=(20, 4)) for c in (0, 5)])
    path = tmp_path / "data.csv"
    path.write_text("a,b,c,d\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    fitted = NamedRows(load_data(path, ["a", "c"]), column_names(path, ["a", "c"]))
    km = oc.KMeans(2, random_state=0, devices=devices).fit(fitted)
    save_model(km, tmp_path / "m.npz")
    back = load_model(tmp_path / "m.npz")
    back.set_params(devices=devices)
    columns = list(back.feature_names_in_)
    X = NamedRows(load_data(path, columns), column_names(path, columns))
    assert X.shape == (40, 2)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*feature names")
        np.testing.assert_array_equal(back.predict(X), km.labels_)
    with pytest.raises(ValueError, match="unseen at fit time"):   # all four columns
        back.predict(NamedRows(load_data(path), column_names(path)))
