"""One name per concept in the release API: ``k`` (the lazy mechanism's top-k size),
``to_dict``/``to_json(path)`` on session records, and any ``Workload``-protocol object as a
workload. Every old name still works for one release, warns naming the new one, and gives the
same result."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from fastmwem import mwem
from fastmwem.data import Dataset, Domain
from fastmwem.release import MWEMConfig, pmw_offline
from fastmwem.release._protocol import ProtocolWorkload
from fastmwem.release.pmw import PMWRecord, PMWSession
from fastmwem.workloads import Marginals, MatrixWorkload, Workload

DOMAIN = Domain(["a", "b", "c"], [2, 3, 2])


def _data(n: int = 400, seed: int = 5) -> Dataset:
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, s, n) for s in DOMAIN.shape], axis=1)
    return Dataset(codes, DOMAIN)


def _no_deprecation(call):
    """Run ``call`` with DeprecationWarning as an error: the new names never warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        return call()


def _same_run(a, b) -> None:
    assert a.selected == b.selected
    np.testing.assert_array_equal(a.histogram, b.histogram)
    assert a.ledger == b.ledger


# -- k, formerly top_k ---------------------------------------------------------------------------
def test_mwem_top_k_is_a_deprecated_alias_of_k():
    ds, w = _data(), Marginals.all_kway(DOMAIN, 2)
    kw = dict(epsilon=5.0, rounds=3, selection="lazy", index="flat", rng=1)
    new = _no_deprecation(lambda: mwem(ds, w, k=4, **kw))
    with pytest.warns(DeprecationWarning, match="top_k= is deprecated.*use k="):
        old = mwem(ds, w, top_k=4, **kw)
    _same_run(old, new)


def test_mwem_config_top_k_keyword_and_attribute_are_deprecated_aliases_of_k():
    new = _no_deprecation(lambda: MWEMConfig(epsilon=1.0, selection="lazy", k=7))
    with pytest.warns(DeprecationWarning, match="MWEMConfig: top_k= is deprecated.*use k="):
        old = MWEMConfig(epsilon=1.0, selection="lazy", top_k=7)
    assert old == new and old.k == 7 and old.round_selection == new.round_selection
    with pytest.warns(DeprecationWarning, match="MWEMConfig: top_k is deprecated.*use k "):
        assert new.top_k == 7
    with pytest.raises(ValueError, match="give k= only"), pytest.warns(DeprecationWarning):
        MWEMConfig(epsilon=1.0, selection="lazy", top_k=7, k=8)


def test_the_deprecation_warning_points_at_the_caller():
    """The warning names the user's line, not the library's, so default filters show it."""
    ds, w = _data(), Marginals.all_kway(DOMAIN, 2)
    with pytest.warns(DeprecationWarning) as caught:
        mwem(ds, w, epsilon=5.0, rounds=1, selection="lazy", top_k=3, rng=1)
    assert [r.filename for r in caught if r.category is DeprecationWarning] == [__file__]


def test_a_scan_selection_refuses_k_by_its_new_name():
    with pytest.raises(ValueError, match="index=, k= and allow_uncertified= are for"):
        MWEMConfig(epsilon=1.0, selection="exponential", k=3)


# -- PMWRecord: to_dict returns a dict, to_json(path) writes a file -----------------------------
def _record() -> PMWRecord:
    ds = Dataset([[0, 1, 0], [1, 2, 1], [1, 0, 0]] * 40, DOMAIN)
    s = PMWSession(ds, epsilon=1.0, alpha=0.05, max_updates=3, total=120, rng=4)
    for cell in ({"a": 0}, {"a": 1}, {"b": 2}):
        s.answer({"cell": cell})
    return s.record()


def test_pmw_record_to_json_without_a_path_is_a_deprecated_to_dict():
    record = _record()
    new = _no_deprecation(record.to_dict)
    with pytest.warns(DeprecationWarning, match=r"to_json\(\) without a path is deprecated.*"
                                                r"use to_dict\(\)"):
        old = record.to_json()
    assert old == new and new["format"] == "fastmwem-pmw-1"


def test_pmw_record_from_json_of_a_dict_is_a_deprecated_from_dict():
    data = json.loads(json.dumps(_record().to_dict()))
    new = _no_deprecation(lambda: PMWRecord.from_dict(data))
    with pytest.warns(DeprecationWarning, match=r"from_json\(dict\) is deprecated.*"
                                                r"use from_dict\(dict\)"):
        old = PMWRecord.from_json(data)
    assert old == new


def test_pmw_record_to_json_writes_a_file_like_domain_and_schema(tmp_path):
    record = _record()
    path = tmp_path / "session.json"
    assert _no_deprecation(lambda: record.to_json(path)) is None
    assert json.loads(path.read_text(encoding="utf-8")) == record.to_dict()
    assert _no_deprecation(lambda: PMWRecord.from_json(path)) == record
    assert [p.name for p in tmp_path.iterdir()] == ["session.json"]  # no temporary left


# -- any Workload-protocol object ------------------------------------------------------------------
class Forwarding:
    """Every member of the Workload protocol, forwarded; not a LinearWorkload."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.domain = inner.domain
        self.nonnegative_queries = inner.nonnegative_queries

    n_queries = property(lambda self: self._inner.n_queries)
    group_offsets = property(lambda self: self._inner.group_offsets)
    query_sensitivity = property(lambda self: self._inner.query_sensitivity)
    group_sensitivity = property(lambda self: self._inner.group_sensitivity)

    def answer(self, h):
        return self._inner.answer(h)

    def answer_queries(self, h, ids):
        return self._inner.answer_queries(h, ids)

    def answer_group(self, h, g):
        return self._inner.answer_group(h, g)

    def answer_transpose(self, w):
        return self._inner.answer_transpose(w)

    def multiply_group(self, h, g, log_factors):
        self._inner.multiply_group(h, g, log_factors)

    def row(self, q):
        return self._inner.row(q)


def _matrix() -> MatrixWorkload:
    rng = np.random.default_rng(3)
    return MatrixWorkload(DOMAIN, rng.integers(0, 2, (30, DOMAIN.size)).astype(float),
                          groups=np.arange(0, 31, 3))


@pytest.mark.parametrize("selection", ["exponential", "lazy"])
def test_mwem_runs_any_workload_protocol_object_as_its_linear_workload(selection):
    ds, inner = _data(), _matrix()
    proto = Forwarding(inner)
    assert isinstance(proto, Workload)
    kw = dict(epsilon=5.0, rounds=4, selection=selection, rng=2)
    result = mwem(ds, proto, **kw)
    _same_run(result, mwem(ds, inner, **kw))
    assert isinstance(result.workload, ProtocolWorkload) and result.workload.wrapped is proto


def test_pmw_offline_runs_any_workload_protocol_object():
    ds, inner = _data(), _matrix()
    kw = dict(epsilon=5.0, delta=1e-6, rounds=5, rng=2)
    _same_run(pmw_offline(ds, Forwarding(inner), **kw), pmw_offline(ds, inner, **kw))


def test_a_workload_missing_protocol_members_is_refused_by_name():
    class Missing:
        domain = DOMAIN
        n_queries = 3

    with pytest.raises(TypeError, match="Missing lacks group_offsets, query_sensitivity"):
        mwem(_data(), Missing(), epsilon=1.0, rounds=1, rng=0)
    with pytest.raises(TypeError, match="must be a fastmwem workload.*got str"):
        mwem(_data(), "marginals", epsilon=1.0, rounds=1, rng=0)


def test_the_adapter_knows_every_member_of_the_protocol():
    from fastmwem.release._protocol import _MEMBERS

    declared = set(Workload.__annotations__) | {
        name for name in vars(Workload) if not name.startswith("_")}
    assert set(_MEMBERS) == declared
