"""The round-selection seam of MWEM (fastmwem.release.selection)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from fastmwem import Accountant, mwem
from fastmwem.accounting import BoundedRange, PureDP
from fastmwem.data import Dataset, Domain
from fastmwem.release import mwem_privacy_plan
from fastmwem.release.mwem import MWEMConfig
from fastmwem.release.selection import (
    RoundSelection,
    ScanSelection,
    register_selection,
    resolve_selection,
    selection_names,
)
from fastmwem.workloads import Marginals


@pytest.fixture()
def small():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    rng = np.random.default_rng(0)
    records = np.column_stack([rng.integers(0, s, 300) for s in domain.shape])
    return Dataset(records, domain), Marginals.all_kway(domain, 2)


def test_names_resolve_to_selections():
    assert set(selection_names()) >= {"exponential", "permute-and-flip", "lazy"}
    assert resolve_selection("exponential") == ScanSelection("exponential")
    assert resolve_selection("lazy").name == "lazy"


@pytest.mark.parametrize("bad", ["gumbel", "", "LAZY"])
def test_unknown_names_are_refused(bad):
    with pytest.raises(ValueError, match="selection must be one of"):
        MWEMConfig(epsilon=1.0, selection=bad)


def test_scan_selections_take_no_index():
    with pytest.raises(ValueError, match="takes no options"):
        MWEMConfig(epsilon=1.0, selection="exponential", index="flat")


@pytest.mark.parametrize("bad", ["kdtree", "", "faiss"])
def test_unknown_index_names_are_refused_by_the_config(bad):
    # Before, make_index said "spec must be one of ..." when the lazy round was set up: the
    # command line's --index was never named.
    with pytest.raises(ValueError, match="^index must be one of flat, bitpacked"):
        MWEMConfig(epsilon=1.0, selection="lazy", index=bad)


def test_objects_that_are_not_selections_are_refused():
    with pytest.raises(TypeError, match="RoundSelection"):
        MWEMConfig(epsilon=1.0, selection=object())


@pytest.mark.parametrize("name, event", [("exponential", BoundedRange),
                                         ("permute-and-flip", PureDP)])
def test_the_plan_charges_the_selection_event(small, name, event):
    _, workload = small
    plan = mwem_privacy_plan(MWEMConfig(epsilon=1.0, rounds=3, selection=name), workload)
    selects = [e for e, label in plan if "select" in label]
    assert len(selects) == 3 and all(type(e) is event for e in selects)
    assert all(name in label for _, label in plan if "select" in label)


@dataclass(frozen=True)
class FirstAvailable:
    """A (non-private) selection that always picks the first open candidate: plugs in unedited."""

    @property
    def name(self) -> str:
        return "first"

    def event(self, epsilon):
        return PureDP(epsilon)

    def check(self, workload, *, epsilon, group_mode, sensitivities):
        return None

    def prepare(self, workload, private, *, epsilon, group_mode, sensitivities, penalties):
        answers = private.answers()

        class Chooser:
            def choose(self, state, available, rng):
                return int(np.flatnonzero(available)[0])

            def true_answers(self, queries):
                return answers[queries]

        return Chooser()


def test_a_new_selection_plugs_in_without_editing_mwem(small):
    dataset, workload = small
    assert isinstance(FirstAvailable(), RoundSelection)
    result = mwem(dataset, workload, epsilon=1.0, rounds=3, rng=np.random.default_rng(1),
                  selection=FirstAvailable())
    assert result.selected == (0, 1, 2)
    register_selection("first-test", lambda **options: FirstAvailable())
    accountant = Accountant(epsilon=1.0)
    again = mwem(dataset, workload, epsilon=1.0, rounds=2, rng=np.random.default_rng(1),
                 selection="first-test", accountant=accountant)
    assert again.selected == (0, 1)
    assert any("select (first)" in entry.label for entry in accountant.ledger)


def test_register_refuses_empty_names():
    with pytest.raises(ValueError):
        register_selection("", lambda **options: FirstAvailable())
