"""make_index, save/load round trips, private indices, and bad input to the indices."""

from __future__ import annotations

import os
import stat
import sys
import time

import numpy as np
import pytest

from fastmwem.indices import (
    BitPackedIndex,
    FaissIndex,
    FlatIndex,
    HnswlibIndex,
    load_index,
    make_index,
)


def _ann(spec: str) -> None:
    pytest.importorskip("faiss" if spec.startswith("faiss") else "hnswlib")


def _keys(rng, n=60, d=12):
    return (rng.random((n, d)) < 0.5).astype(np.float64)


SPECS = ["flat", "bitpacked", "faiss:Flat", "faiss:IVF4,Flat", "faiss:HNSW8", "hnswlib"]


def _make(spec, keys, **kw):
    if spec.startswith("faiss") or spec == "hnswlib":
        _ann(spec)
        kw.setdefault("progress", False)
    return make_index(spec, keys, **kw)


@pytest.mark.parametrize("spec", SPECS)
def test_save_load_round_trip(spec, tmp_path):
    rng = np.random.default_rng(0)
    keys = _keys(rng)
    index = _make(spec, keys)
    path = tmp_path / "index.npz"
    index.save(path)
    assert os.listdir(tmp_path) == ["index.npz"]  # no temporary file left behind
    loaded = load_index(path)
    assert type(loaded) is type(index)
    assert loaded.n_keys == index.n_keys and loaded.dimension == index.dimension
    assert loaded.exact == index.exact
    v = rng.normal(size=keys.shape[1])
    a, b = index.search(v, 9), loaded.search(v, 9)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(index.score(np.arange(60), v), loaded.score(np.arange(60), v))


@pytest.mark.parametrize("spec", SPECS)
def test_private_index_is_never_saved(spec, tmp_path):
    index = _make(spec, _keys(np.random.default_rng(1)), private=True)
    with pytest.raises(ValueError, match="private"):
        index.save(tmp_path / "index.npz")
    assert os.listdir(tmp_path) == []


def test_save_refuses_to_overwrite_and_missing_folders(tmp_path):
    index = make_index("flat", np.eye(3))
    target = tmp_path / "a.npz"
    target.write_bytes(b"keep me")
    with pytest.raises(ValueError, match="overwrite"):
        index.save(target)
    assert target.read_bytes() == b"keep me"
    index.save(target, overwrite=True)
    assert load_index(target).n_keys == 3
    with pytest.raises(ValueError, match="folder"):
        index.save(tmp_path / "missing" / "a.npz")
    with pytest.raises(TypeError, match="path"):
        index.save(3)


def test_saved_index_gets_the_mode_a_plain_write_would(tmp_path):
    # Saved through a mkstemp file (0600): a new file gets 0666 less the umask, a replaced one
    # keeps its bits.
    index = make_index("flat", np.eye(3))
    before = os.umask(0o022)
    try:
        index.save(tmp_path / "new.npz")
    finally:
        os.umask(before)
    assert stat.S_IMODE(os.stat(tmp_path / "new.npz").st_mode) == 0o644
    old = tmp_path / "old.npz"
    old.write_bytes(b"x")
    os.chmod(old, 0o640)
    index.save(old, overwrite=True)
    assert stat.S_IMODE(os.stat(old).st_mode) == 0o640


def test_load_refuses_other_files(tmp_path):
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not an archive")
    with pytest.raises(ValueError, match="not a saved fastmwem index"):
        load_index(bad)
    np.savez(tmp_path / "y.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not a saved fastmwem index"):
        load_index(tmp_path / "y.npz")
    with pytest.raises(ValueError, match="does not exist"):
        load_index(tmp_path / "z.npz")


def test_save_never_replaces_a_node_that_is_not_a_regular_file(tmp_path):
    # os.replace would swap a FIFO, a device (as root: /dev/null) or a symbolic link for the file.
    index = make_index("flat", np.eye(3))
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    link = tmp_path / "link.npz"
    link.symlink_to(tmp_path / "target.npz")
    for path, what in ((fifo, "not a regular file"), (link, "symbolic link")):
        with pytest.raises(ValueError, match=what):
            index.save(path, overwrite=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.islink(link)
    assert sorted(os.listdir(tmp_path)) == ["link.npz", "pipe.npz"]


@pytest.mark.timeout(10)
def test_load_names_directories_fifos_and_foreign_files(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        load_index(tmp_path)
    os.mkfifo(tmp_path / "pipe.npz")  # np.load would wait for a writer for ever
    with pytest.raises(ValueError, match="not a regular file"):
        load_index(tmp_path / "pipe.npz")
    (tmp_path / "x.npz").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="not a saved fastmwem index") as info:
        load_index(tmp_path / "x.npz")
    assert "pickle" not in str(info.value)  # numpy's advice to load it unsafely is not ours


def test_make_index_kinds_and_exactness():
    keys = _keys(np.random.default_rng(2))
    assert isinstance(make_index("flat", keys), FlatIndex)
    assert isinstance(make_index("bitpacked", keys), BitPackedIndex)
    assert make_index("bitpacked", dimension=5).n_keys == 0
    if pytest.importorskip("faiss"):
        assert isinstance(_make("faiss:Flat", keys), FaissIndex)
        assert _make("faiss:Flat", keys).exact
        assert not _make("faiss:HNSW8", keys).exact
        assert _make("faiss:HNSW8", keys).certified_gap is None


def test_hnswlib_is_approximate():
    index = _make("hnswlib", _keys(np.random.default_rng(3)))
    assert isinstance(index, HnswlibIndex)
    assert index.exact is False and index.certified_gap is None


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"spec": "annoy"}, ValueError, "spec"),
    ({"spec": 3}, TypeError, "spec"),
    ({"spec": "flat", "keys": None}, ValueError, "dimension"),
    ({"spec": "flat", "keys": np.eye(3), "dimension": 4}, ValueError, "dimension"),
    ({"spec": "flat", "keys": [[1.0, np.nan]]}, ValueError, "finite"),
    ({"spec": "flat", "keys": [[1.0, np.inf]]}, ValueError, "finite"),
    ({"spec": "flat", "keys": np.zeros((0, 3))}, ValueError, "at least one key"),
    ({"spec": "flat", "keys": [1.0, 2.0]}, ValueError, "2-D"),
    ({"spec": "flat", "keys": [["a", "b"]]}, TypeError, "keys"),
    ({"spec": "bitpacked", "keys": [[0.0, 0.5]]}, ValueError, "0/1"),
    ({"spec": "bitpacked", "keys": np.eye(3), "backend": "gpu"}, ValueError, "backend"),
    ({"spec": "bitpacked", "dimension": 0}, ValueError, "dimension"),
    ({"spec": "bitpacked", "dimension": 3, "threads": 0}, ValueError, "threads"),
    ({"spec": "flat", "keys": np.eye(3), "private": "yes"}, TypeError, "private"),
])
def test_bad_build_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_index(**kwargs)


@pytest.mark.parametrize("spec", SPECS)
def test_bad_search_input(spec):
    index = _make(spec, _keys(np.random.default_rng(4)))
    with pytest.raises(ValueError, match="columns"):
        index.search(np.zeros((1, 13)), 3)  # wrong dimension
    with pytest.raises(ValueError, match="k"):
        index.search(np.zeros(12), 0)
    with pytest.raises(ValueError, match="ids"):
        index.score([60], np.zeros(12))
    with pytest.raises(ValueError, match="finite"):
        index.score([0], np.full(12, np.nan))
    with pytest.raises(ValueError, match="columns"):
        index.add(np.zeros((2, 11)))


def test_add_packed_checks():
    index = BitPackedIndex(12)
    with pytest.raises(TypeError, match="uint8"):
        index.add_packed(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="shape"):
        index.add_packed(np.zeros((2, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match="beyond dimension"):
        index.add_packed(np.array([[0, 1]], dtype=np.uint8))


def test_missing_extra_names_the_install_command(monkeypatch):
    # A None entry in sys.modules makes the import fail as if the package were not installed.
    for name in ("faiss", "hnswlib"):
        monkeypatch.setitem(sys.modules, name, None)
    for spec in ("faiss:Flat", "faiss:HNSW32", "hnswlib"):
        with pytest.raises(ImportError, match=r'pip install "fastmwem\[ann\]"'):
            make_index(spec, np.eye(3))


def test_faiss_bad_factory_and_params():
    pytest.importorskip("faiss")
    with pytest.raises(ValueError, match="factory"):
        make_index("faiss:NotAnIndex", np.eye(3))
    with pytest.raises(ValueError, match="nprobe"):
        make_index("faiss:Flat", np.eye(3), params={"nprobe": 3})
    with pytest.raises(ValueError, match="train"):
        make_index("faiss:IVF64,Flat", np.eye(3), progress=False)


@pytest.mark.slow
def test_a_long_build_shows_progress_on_stderr(capsys):
    # The bar appears only after two seconds: a slow consumer of the row blocks stands in for a
    # long build.
    from fastmwem.indices._checks import row_blocks

    for _ in row_blocks(np.zeros((3, 2)), 1, progress="building test"):
        time.sleep(1.1)
    assert "building test" in capsys.readouterr().err
    for _ in row_blocks(np.zeros((3, 2)), 1):
        pass
    assert capsys.readouterr().err == ""
