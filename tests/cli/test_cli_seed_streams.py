"""``synth --seed`` splits one seed into independent streams: workload, noise and sampling."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastmwem.cli import synth as synth_module
from fastmwem.data import Domain
from fastmwem.mechanisms.seeding import rng_provenance
from fastmwem.random import generator_origin, make_rng, split_seed
from fastmwem.workloads.spec import parse_workload

SEED = 4242
RUN = ("--workload", "counting:6", "--rounds", 2, "--reuse-passes", 2, "--rows", 300)


@pytest.fixture
def drawn(monkeypatch):
    """The workloads the runs parse, as their answers on a fixed histogram."""
    seen = []

    def parse(spec, domain, *, seed=None):
        workload = parse_workload(spec, domain, seed=seed)
        seen.append(workload.answer(np.arange(domain.size, dtype=float)))
        return workload

    monkeypatch.setattr(synth_module, "parse_workload", parse)
    return seen


def _synth(cli, coded_csv, tmp_path, name, *extra):
    csv, domain = coded_csv
    out, report = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
    code, _, err = cli("synth", csv, "--domain", domain, *RUN, "--out", out, "--report", report,
                       *extra)
    assert code == 0, err
    return out.read_text(), json.loads(report.read_text())


def test_the_same_seed_gives_the_same_outputs(cli, coded_csv, tmp_path):
    first = _synth(cli, coded_csv, tmp_path, "a", "--epsilon", 1, "--seed", SEED)
    second = _synth(cli, coded_csv, tmp_path, "b", "--epsilon", 1, "--seed", SEED)
    assert first == second
    assert first[1]["not_private_because"] == ["seeded"]


def test_the_workload_is_drawn_from_its_own_stream(cli, coded_csv, tmp_path, drawn):
    _synth(cli, coded_csv, tmp_path, "a", "--epsilon", 1, "--seed", SEED)
    _synth(cli, coded_csv, tmp_path, "b", "--epsilon", 0.2, "--seed", SEED)
    np.testing.assert_array_equal(drawn[0], drawn[1])  # the noise's budget does not move it
    # It is the workload child of the seed, not the seed's own stream (which the noise used to
    # share), nor a secure draw.
    _, domain = coded_csv
    dom = Domain.from_dict(json.loads(domain.read_text()))
    expected = parse_workload("counting:6", dom, seed=split_seed(SEED)[0])
    np.testing.assert_array_equal(drawn[0], expected.answer(np.arange(dom.size, dtype=float)))
    shared = parse_workload("counting:6", dom, seed=SEED)
    assert not np.array_equal(drawn[0], shared.answer(np.arange(dom.size, dtype=float)))


def test_split_seed_gives_independent_seeded_streams():
    streams = split_seed(SEED)
    assert [generator_origin(g) for g in streams] == ["seed"] * 3
    assert all(rng_provenance(g) == ("seeded",) for g in streams)
    draws = [g.integers(2**62, size=4).tolist() for g in streams]
    old = [make_rng(SEED).integers(2**62, size=4).tolist(),
           make_rng(SEED + 1).integers(2**62, size=4).tolist()]
    assert len({tuple(d) for d in draws + old}) == 5
    assert [g.integers(2**62, size=4).tolist() for g in split_seed(SEED)] == draws


def test_without_a_seed_every_stream_is_secure():
    streams = split_seed(None)
    assert [generator_origin(g) for g in streams] == ["os"] * 3
    assert all(rng_provenance(g) == () for g in streams)


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError)])
def test_split_seed_refuses_what_make_rng_refuses(bad, error):
    with pytest.raises(error):
        split_seed(bad)
