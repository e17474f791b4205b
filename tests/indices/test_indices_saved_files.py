"""Saved index files are not trusted: edited, damaged and hostile files are refused, one way.

Loads of damaged FAISS and hnswlib structures run in a subprocess: before the checks, a bad
neighbour id in an hnswlib file was followed out of bounds at the first search, and a crash
there must fail the test, not end pytest.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from fastmwem.indices import IndexFileError, load_index, make_index

N, D = 300, 12
_RUNNER = """
import json, sys
import numpy as np
from fastmwem.indices import load_index
for path in json.loads(sys.argv[1]):
    try:
        index = load_index(path)
        index.search(np.linspace(-1.0, 1.0, index.dimension), 5)
        index.search(np.ones(index.dimension), 20)
        print(json.dumps([path, "loaded", ""]), flush=True)
    except Exception as exc:
        print(json.dumps([path, type(exc).__name__, str(exc)]), flush=True)
"""


def _keys(seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).random((N, D)) < 0.5).astype(np.float64)


def _saved(tmp_path, spec: str, **options) -> tuple[str, dict[str, np.ndarray]]:
    if spec.startswith("faiss") or spec == "hnswlib":
        pytest.importorskip("faiss" if spec.startswith("faiss") else "hnswlib")
        options.setdefault("progress", False)
    path = str(tmp_path / f"{spec.replace(':', '-').replace(',', '-')}.npz")
    make_index(spec, _keys(), **options).save(path)
    with np.load(path, allow_pickle=False) as archive:
        return path, {key: archive[key] for key in archive.files}


def _write(tmp_path, name: str, arrays: dict[str, np.ndarray]) -> str:
    path = str(tmp_path / f"{name}.npz")
    np.savez(path, **arrays)
    return path


def _with_meta(arrays: dict[str, np.ndarray], **changes: object) -> dict[str, np.ndarray]:
    meta = json.loads(str(arrays["meta"]))
    meta.update(changes)
    return {**arrays, "meta": np.array(json.dumps(meta))}


def _load_in_subprocess(paths: list[str]) -> dict[str, tuple[str, str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run([sys.executable, "-c", _RUNNER, json.dumps(paths)], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"the loader died ({result.returncode}): {result.stderr[-800:]}"
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("[")]
    return {path: (kind, message) for path, kind, message in rows}


def _assert_all_refused(cases: dict[str, str]) -> None:
    outcome = _load_in_subprocess(list(cases))
    for path, case in cases.items():
        kind, message = outcome.get(path, ("missing", ""))
        assert kind == "IndexFileError", f"{case}: {kind} {message}"
        assert "is not a saved fastmwem index: " in message, case


# -- exactness comes from the structure, never from the settings -----------------------------
@pytest.mark.parametrize("spec", ["faiss:HNSW8", "faiss:IVF4,Flat"])
def test_an_approximate_faiss_index_edited_to_say_flat_is_refused(spec, tmp_path):
    # Before: the settings' factory was rebuilt and reported exact=True, so the lazy exponential
    # mechanism ran over a heuristic graph with an exact guarantee.
    _, arrays = _saved(tmp_path, spec)
    path = _write(tmp_path, "edited", _with_meta(arrays, factory="Flat"))
    with pytest.raises(IndexFileError, match="factory.*'Flat'"):
        load_index(path)


def test_a_flat_faiss_index_edited_to_say_hnsw_is_refused(tmp_path):
    _, arrays = _saved(tmp_path, "faiss:Flat")
    with pytest.raises(IndexFileError, match="factory"):
        load_index(_write(tmp_path, "edited", _with_meta(arrays, factory="HNSW8")))


@pytest.mark.parametrize(("spec", "metric", "exact"), [
    ("faiss:Flat", "ip", True), ("faiss:Flat", "l2", False), ("faiss:HNSW8", "ip", False),
    ("faiss:IVF4,Flat", "ip", False), ("hnswlib", None, False), ("flat", None, True),
])
def test_loaded_exactness_is_the_structure_s(spec, metric, exact, tmp_path):
    options = {} if metric is None else {"metric": metric}
    path, _ = _saved(tmp_path, spec, **options)
    loaded = load_index(path)
    assert loaded.exact is exact
    assert (loaded.certified_gap == 0.0) if exact else (loaded.certified_gap in (None, 0.0))


def test_an_exact_faiss_index_whose_vectors_differ_from_its_keys_is_refused(tmp_path):
    _, arrays = _saved(tmp_path, "faiss:Flat")
    blob = arrays["faiss"].copy()
    start = 4 + 33 + 8  # four-character code, index header, vector length
    blob[start:start + 4] = np.frombuffer(struct.pack("=f", 7.0), dtype=np.uint8)
    with pytest.raises(IndexFileError, match="does not hold the stored keys"):
        load_index(_write(tmp_path, "vectors", {**arrays, "faiss": blob}))


def test_the_exact_search_s_norms_are_computed_not_read(tmp_path):
    # The rounding window of the exact faiss search rests on the keys' norms: norms written in
    # the file (here understated) are ignored.
    path, arrays = _saved(tmp_path, "faiss:Flat")
    loaded = load_index(_write(tmp_path, "norms", _with_meta(arrays, norms=[0.0, 0.0, 0.0])))
    assert loaded._norms == load_index(path)._norms
    assert loaded._norms[1] > 0


# -- damaged and hostile structures ----------------------------------------------------------
def _faiss_hnsw_neighbors_at(blob: np.ndarray) -> int:
    """Byte offset of the first neighbour id of a serialised IndexHNSWFlat."""
    pos = 4 + 33
    for itemsize in (8, 4, 4, 8):  # assign_probas, cum_nneighbor_per_level, levels, offsets
        count = struct.unpack_from("=Q", blob, pos)[0]
        pos += 8 + count * itemsize
    return pos + 8


def test_damaged_faiss_structures_are_refused(tmp_path):
    cases: dict[str, str] = {}

    def case(name: str, arrays: dict[str, np.ndarray], blob: np.ndarray) -> None:
        cases[_write(tmp_path, name, {**arrays, "faiss": np.asarray(blob, dtype=np.uint8)})] = name

    for spec in ("faiss:Flat", "faiss:HNSW8", "faiss:IVF4,Flat"):
        _, arrays = _saved(tmp_path, spec)
        blob = arrays["faiss"]
        tag = spec.split(":")[1].replace(",", "-")
        for cut in (3, 20, 4 + 33, blob.size // 2, blob.size - 1):
            case(f"{tag}-truncated-{cut}", arrays, blob[:cut])
        case(f"{tag}-trailing", arrays, np.concatenate([blob, np.zeros(8, np.uint8)]))
        bad = blob.copy()
        bad[4:8] = np.frombuffer(struct.pack("=i", D + 1), dtype=np.uint8)  # dimension
        case(f"{tag}-dimension", arrays, bad)
        bad = blob.copy()
        bad[8:16] = np.frombuffer(struct.pack("=q", 10**12), dtype=np.uint8)  # ntotal
        case(f"{tag}-count", arrays, bad)
        bad = blob.copy()
        bad[:4] = np.frombuffer(b"IxPQ", dtype=np.uint8)
        case(f"{tag}-type", arrays, bad)
        if tag == "HNSW8":
            at = _faiss_hnsw_neighbors_at(blob)
            bad = blob.copy()
            bad[at:at + 4] = np.frombuffer(struct.pack("=i", N + 7), dtype=np.uint8)
            case("HNSW8-neighbour-id", arrays, bad)
        if tag == "IVF4-Flat":
            bad = blob.copy()
            bad[4 + 33:4 + 33 + 8] = np.frombuffer(struct.pack("=Q", 2**40), dtype=np.uint8)
            case("IVF-nlist", arrays, bad)
    _assert_all_refused(cases)


_HNSW_HEADER = struct.Struct("=QQQQQQiIQQQdQ")


def _hnswlib_layout(blob: np.ndarray) -> dict[str, int]:
    fields = _HNSW_HEADER.unpack_from(blob, 0)
    per_element, label_offset, data_offset, max_m0 = fields[3], fields[4], fields[5], fields[9]
    upper = _HNSW_HEADER.size + N * per_element
    return {"per": per_element, "label": label_offset, "data": data_offset, "m0": max_m0,
            "upper": upper, "maxM": fields[8]}


def _upper_lists(blob: np.ndarray, layout: dict[str, int]) -> tuple[list[int], list[int]]:
    """(byte offset of the first upper-layer list of each element that has one, ids of
    elements with level 0)."""
    pos, with_lists, level0 = layout["upper"], [], []
    for element in range(N):
        size = struct.unpack_from("=I", blob, pos)[0]
        (with_lists if size else level0).append(pos + 4 if size else element)
        pos += 4 + size
    return with_lists, level0


def test_damaged_hnswlib_files_are_refused_without_crashing(tmp_path):
    _, arrays = _saved(tmp_path, "hnswlib")
    blob = arrays["hnsw"]
    lay = _hnswlib_layout(blob)
    record0 = _HNSW_HEADER.size
    cases: dict[str, str] = {}

    def case(name: str, data: np.ndarray) -> None:
        cases[_write(tmp_path, name, {**arrays, "hnsw": np.asarray(data, dtype=np.uint8)})] = name

    def patched(offset: int, fmt: str, value: object) -> np.ndarray:
        out = blob.copy()
        packed = struct.pack("=" + fmt, value)
        out[offset:offset + len(packed)] = np.frombuffer(packed, dtype=np.uint8)
        return out

    for cut in (10, _HNSW_HEADER.size, record0 + lay["per"] // 2, lay["upper"], blob.size - 1):
        case(f"truncated-{cut}", blob[:cut])
    case("trailing", np.concatenate([blob, np.zeros(4, np.uint8)]))
    case("header-M", patched(72, "Q", 17))  # M_
    case("header-count", patched(16, "Q", N + 1))  # cur_element_count
    case("header-entry", patched(52, "I", N))  # enterpoint_node_
    case("level0-count", patched(record0, "H", lay["m0"] + 1))
    case("level0-id", patched(record0 + 4, "I", N + 1000))
    case("level0-id-max", patched(record0 + 4, "I", 2**32 - 1))
    case("deleted-flag", patched(record0 + 2, "B", 1))
    case("label", patched(record0 + lay["label"], "Q", N + 5))
    case("vector-nan", patched(record0 + lay["data"], "f", float("nan")))
    with_lists, level0 = _upper_lists(blob, lay)
    first = with_lists[0]
    below = patched(first, "H", 1)
    below[first + 4:first + 8] = np.frombuffer(struct.pack("=I", level0[0]), dtype=np.uint8)
    case("upper-link-below", below)
    case("upper-id", patched(first + 4, "I", N + 3))
    case("upper-size", patched(first - 4, "I", 4 * lay["maxM"] + 5))
    _assert_all_refused(cases)


# -- the archive itself ------------------------------------------------------------------------
def _bomb(path: str, arrays: dict[str, np.ndarray], shape: tuple[int, int]) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for key, value in arrays.items():  # stored, as save() writes them
            info = zipfile.ZipInfo(f"{key}.npy")
            info.compress_type = zipfile.ZIP_STORED
            with zf.open(info, "w") as handle:
                np.lib.format.write_array(handle, value, allow_pickle=False)
        with zf.open("keys.npy", "w", force_zip64=True) as handle:
            np.lib.format.write_array_header_1_0(
                handle, {"descr": "<f4", "fortran_order": False, "shape": shape})
            zeros = bytes(1 << 20)
            for _ in range(shape[0] * shape[1] * 4 >> 20):
                handle.write(zeros)


@pytest.mark.timeout(120)
def test_a_zip_bomb_is_refused_before_anything_is_unpacked(tmp_path):
    # About 5 MB on disk, 1 GiB unpacked. The loader runs with 512 MiB of address space above
    # what it had at start, so unpacking the member (as np.load did) fails it.
    path = str(tmp_path / "bomb.npz")
    _, arrays = _saved(tmp_path, "flat")
    _bomb(path, {k: v for k, v in arrays.items() if k != "keys"}, (2**18, 1024))
    assert os.path.getsize(path) < 16 << 20
    script = ("import resource, sys\n"
              "from fastmwem.indices import load_index\n"
              "size = int(open('/proc/self/statm').read().split()[0]) * 4096\n"
              "resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 29), size + (1 << 29)))\n"
              "try:\n"
              "    load_index(sys.argv[1])\n"
              "    print('loaded')\n"
              "except Exception as exc:\n"
              "    print(type(exc).__name__, exc)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run([sys.executable, "-c", script, path], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-800:]
    assert result.stdout.startswith("IndexFileError"), result.stdout
    assert "'keys.npy' is compressed" in result.stdout


def test_a_stored_archive_above_max_bytes_is_refused(tmp_path):
    path, _ = _saved(tmp_path, "flat")
    with pytest.raises(IndexFileError, match="max_bytes=1000"):
        load_index(path, max_bytes=1000)
    assert load_index(path, max_bytes=os.path.getsize(path)).n_keys == N


def test_a_header_declaring_more_data_than_the_member_holds_is_refused(tmp_path):
    _, arrays = _saved(tmp_path, "flat")
    path = str(tmp_path / "liar.npz")
    with zipfile.ZipFile(path, "w") as zf:
        for key, value in arrays.items():
            with zf.open(f"{key}.npy", "w") as handle:
                if key == "keys":  # a header promising 10^9 rows, followed by 3 of them
                    np.lib.format.write_array_header_1_0(
                        handle, {"descr": "<f4", "fortran_order": False, "shape": (10**9, D)})
                    handle.write(np.zeros((3, D), np.float32).tobytes())
                else:
                    np.lib.format.write_array(handle, value)
    with pytest.raises(IndexFileError, match="'keys.npy': its header declares"):
        load_index(path)


@pytest.mark.parametrize(("spec", "member"), [
    ("flat", "keys"), ("flat", "dimension"), ("flat", "kind"), ("bitpacked", "packed"),
    ("faiss:Flat", "meta"), ("faiss:Flat", "store_kind"), ("faiss:Flat", "faiss"),
    ("faiss:HNSW8", "store_packed"), ("hnswlib", "hnsw"), ("hnswlib", "meta"),
])
def test_missing_members_are_refused(spec, member, tmp_path):
    # Before: a KeyError, or faiss's own C++ error.
    _, arrays = _saved(tmp_path, spec)
    path = _write(tmp_path, "missing", {k: v for k, v in arrays.items() if k != member})
    with pytest.raises(IndexFileError, match="is not a saved fastmwem index: .*missing"):
        load_index(path)


def test_extra_members_are_refused(tmp_path):
    _, arrays = _saved(tmp_path, "flat")
    with pytest.raises(IndexFileError, match="unexpected member 'extra'"):
        load_index(_write(tmp_path, "extra", {**arrays, "extra": np.zeros(2)}))


@pytest.mark.parametrize(("spec", "member", "value", "match"), [
    ("flat", "keys", lambda a: a.astype(np.int64), "'keys' has dtype int64"),
    ("flat", "keys", lambda a: a.astype(np.complex128), "'keys.npy' holds complex128 data"),
    ("flat", "keys", lambda a: a[0], r"'keys' has shape \(12,\)"),
    ("flat", "keys", lambda a: a[:, :5], r"'keys' has shape \(300, 5\)"),
    ("flat", "keys", lambda a: np.where(a == 1, np.nan, a), "keys must be finite"),
    ("flat", "dimension", lambda a: np.array(12.0), "'dimension' has dtype float64"),
    ("flat", "dimension", lambda a: np.array(-3), "dimension must lie in"),
    ("flat", "format", lambda a: np.array(b"fastmwem-index-1"), r"'format.npy' holds \|S16"),
    ("flat", "kind", lambda a: np.array("annoy"), "unknown index kind 'annoy'"),
    ("bitpacked", "packed", lambda a: a.astype(np.int64), "'packed' has dtype int64"),
    ("faiss:Flat", "faiss", lambda a: a.astype(np.float32), "'faiss' has dtype float32"),
    ("faiss:Flat", "meta", lambda a: np.array("[1, 2]"), "settings must be a JSON object"),
    ("faiss:Flat", "meta", lambda a: np.array("{"), "not valid JSON"),
    ("faiss:Flat", "store_kind", lambda a: np.array("dense"), "unknown kind 'dense'"),
    ("hnswlib", "meta", lambda a: np.array('{"M": 1e9, "ef_construction": 100, "ef": null}'),
     "setting 'M'"),
    ("hnswlib", "meta", lambda a: np.array('{"M": 16, "ef_construction": 100, "ef": 1e12}'),
     "setting 'ef'"),
])
def test_wrong_dtypes_shapes_and_values_are_refused(spec, member, value, match, tmp_path):
    _, arrays = _saved(tmp_path, spec)
    path = _write(tmp_path, "wrong", {**arrays, member: value(arrays[member])})
    with pytest.raises(IndexFileError, match=match):
        load_index(path)


def test_object_arrays_are_refused_without_unpickling(tmp_path):
    _, arrays = _saved(tmp_path, "flat")
    path = str(tmp_path / "pickled.npz")
    np.savez(path, **{**arrays, "keys": np.array([object()] * 3, dtype=object)})
    with pytest.raises(IndexFileError, match="'keys.npy' holds object data"):
        load_index(path)


def test_faiss_settings_are_checked(tmp_path):
    _, arrays = _saved(tmp_path, "faiss:HNSW8", params={"efSearch": 32})
    for change, match in [({"metric": "cosine"}, "'metric'"), ({"metric": "l2", "max_norm": 9.0}, "faiss structure holds"),
                          ({"params": {"efSearch": 10**12}}, "'params'"),
                          ({"params": {"nosuch": 3}}, "nosuch"),
                          ({"factory": "x" * 1000}, "'factory'")]:
        with pytest.raises(IndexFileError, match=match):
            load_index(_write(tmp_path, "settings", _with_meta(arrays, **change)))


def test_save_refuses_faiss_structures_load_cannot_check(tmp_path):
    pytest.importorskip("faiss")
    index = make_index("faiss:PCA8,Flat", _keys(), progress=False)
    with pytest.raises(ValueError, match="save\\(\\) cannot write faiss index 'PCA8,Flat'"):
        index.save(tmp_path / "pca.npz")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("spec", ["flat", "bitpacked", "faiss:Flat", "faiss:IVF4,Flat",
                                  "faiss:HNSW8", "hnswlib"])
def test_every_refusal_is_one_error_type_naming_the_file(spec, tmp_path):
    path, arrays = _saved(tmp_path, spec)
    damaged = str(tmp_path / "damaged.npz")
    with open(path, "rb") as handle:
        data = handle.read()
    with open(damaged, "wb") as handle:
        handle.write(data[:len(data) // 2])
    with pytest.raises(IndexFileError) as info:
        load_index(damaged)
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(f"{damaged!r} is not a saved fastmwem index: ")
