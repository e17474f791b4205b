"""Cases of the hardening pass: exact noise, the private LP solvers, where randomness comes from."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ._helpers import small_data
from ._runner import Ctx, bad, good

DISTINCT = "0.376543"
ROWS = 12345


def _keys_in(obj: object) -> set[str]:
    if isinstance(obj, dict):
        return {str(k) for k in obj} | set().union(*(_keys_in(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_keys_in(v) for v in obj))
    return set()


# -- exact noise -----------------------------------------------------------------------------


def _exact_noise() -> None:
    from fastmwem.mechanisms import Laplace

    def demo_report(*extra: object) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            ctx.cli("synth", "--demo", "--epsilon", "1", "--rounds", "3", "--out",
                    ctx.path("o.csv"), "--report", ctx.path("r.json"), "--no-progress", *extra)
            report = json.loads(Path(ctx.path("r.json")).read_text(encoding="utf-8"))
            values = [v for r in report["rounds"] for v in r["measurement"]]
            floats = [v for v in values if not isinstance(v, int)]
            ctx.check(values and not floats,
                      f"{len(floats)} of {len(values)} measurements are not integers "
                      f"(e.g. {floats[:2]})")
            ctx.check(isinstance(report["record_count"], int),
                      f"record_count {report['record_count']!r} is not an integer")
            ctx.check(report["private"] is True, f"report says private={report['private']}")
            return f"{len(values)} integer measurements, record_count an integer"
        return run

    good("synth_demo_report_integer_measurements", "valid cli", demo_report(), timeout=90)
    good("synth_demo_zcdp_report_integer_measurements", "valid cli",
         demo_report("--privacy", "zcdp", "--delta", "1e-6"), timeout=90)
    bad("laplace_epsilon_1e-100_release", "api mechanisms",
        lambda c: Laplace(epsilon=1e-100).release(0.0, rng=np.random.default_rng(0),
                                                  accountant=c.acc()), "2**56")
    bad("laplace_epsilon_1e-100_integer_release", "api mechanisms",
        lambda c: Laplace(epsilon=1e-100, integer=True).release(
            3, rng=np.random.default_rng(0), accountant=c.acc()), "2**56")

    def float_max(ctx: Ctx) -> str:
        # A representable scale (sensitivity 1e300): values at the top of the float range must
        # come back finite (the saturation bound of the grid release).
        out = Laplace(epsilon=1.0, sensitivity=1e300).release(
            np.full(4000, np.finfo(np.float64).max), rng=np.random.default_rng(0))
        bad = int(np.sum(~np.isfinite(out)))
        ctx.check(bad == 0, f"{bad} of 4000 outputs are infinite")
        return "finite"

    good("laplace_float_max_values_stay_finite", "valid api", float_max)


# -- the LP solvers --------------------------------------------------------------------------


def _simplex(m: int = 60, d: int = 7, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.random((m, d))
    b = A @ rng.dirichlet(np.ones(d)) + rng.random(m) * 0.05
    return rng.random(d), A, b


def _packing(m: int, d: int = 4, seed: int = 3
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.random((m, d))
    b = A @ rng.dirichlet(np.ones(d)) + rng.random(m) * 0.05
    return -rng.uniform(0.5, 1.5, d), A, b


def _lp() -> None:
    from fastmwem.lp import private_linprog, scalar_feasibility

    area = "api lp"
    scalar = dict(epsilon=1.0, delta=1e-6, sensitivity=0.01, width=2.0, rounds=20)

    def feasibility(A: object, rhs: object, markers: tuple[str, ...] = (),
                    **kw: object) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            ctx.markers.extend(markers)
            args = {**scalar, **kw}
            return scalar_feasibility(A, rhs, accountant=ctx.acc(100.0, delta=1e-3),
                                      rng=np.random.default_rng(1), **args)
        return run

    def constraint(A: np.ndarray, rhs: np.ndarray, c: np.ndarray,
                   markers: tuple[str, ...] = (), **kw: object) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            ctx.markers.extend(markers)
            args = dict(neighbors="constraint", epsilon=1.0, delta=1e-6, density=4,
                        entry_bound=1.0, max_constraints=2 * A.shape[0], width=50.0,
                        objective_range=(-2.0, 0.0), rounds=20)
            args.update(kw)
            return private_linprog(c, A, rhs, accountant=ctx.acc(100.0, delta=1e-3),
                                   rng=np.random.default_rng(1), **args)
        return run

    rows_markers = (str(ROWS), f"{ROWS:,}", str(ROWS - 2))
    wide = np.full((ROWS, 3), 0.5)
    nan_a = wide.copy()
    nan_a[ROWS - 2, 2] = np.nan
    bad("lp_nan_entry_in_A", area, feasibility(nan_a, np.ones(ROWS), rows_markers),
        "must be finite")
    inf_b = np.ones(ROWS)
    inf_b[ROWS - 2] = -np.inf
    bad("lp_infinite_entry_in_b", area, feasibility(wide, inf_b, rows_markers),
        "must be finite")
    bad("lp_b_one_entry_short", area, feasibility(wide, np.ones(ROWS - 1), rows_markers),
        "b_ub")
    narrow = np.array([0.1, -float(DISTINCT), 0.2, 0.0, 0.3])  # observable width 0.376543
    bad("lp_width_below_the_data", area,
        feasibility(np.zeros((5, 3)), narrow, (DISTINCT, "0.3765", "0.377"), width=0.25),
        "width")
    pc, pa, pb = _packing(ROWS)
    bad("lp_too_many_rows_for_max_constraints", area,
        constraint(pa, pb, pc, rows_markers, max_constraints=ROWS - 45), "max_constraints",
        timeout=60)
    high = pa.copy()
    high[17, 2] = 1.876543
    bad("lp_entry_above_entry_bound", area,
        constraint(high, pb, pc, ("1.876543", "1.87654", "1.88")), "entry_bound", timeout=60)
    negative = pb.copy()
    negative[17] = -float(DISTINCT)
    bad("lp_negative_b_in_packing", area,
        constraint(pa, negative, pc, (DISTINCT, "0.37654", "0.377")), "b_ub", timeout=60)

    c, A, rhs = _simplex()
    bad("lp_epsilon_1e300", area,
        lambda ctx: private_linprog(c, A, rhs, epsilon=1e300, delta=1e-6, sensitivity=0.01,
                                    width=2.5, rounds=20, probes=2,
                                    accountant=ctx.acc(1e300, delta=1e-6),
                                    rng=np.random.default_rng(6)), ("epsilon", "at most"))
    bad("lp_feasibility_epsilon_1e300", area, feasibility(A, rhs, epsilon=1e300),
        ("epsilon", "at most"))

    def large_epsilon(ctx: Ctx) -> str:
        res = private_linprog(c, A, rhs, epsilon=1e4, delta=1e-6, sensitivity=0.01, width=2.5,
                              rounds=40, probes=2, accountant=ctx.acc(1e4, delta=1e-6),
                              rng=np.random.default_rng(6))
        ctx.check(np.isfinite(res.x).all() and abs(res.x.sum() - 1.0) < 1e-9,
                  f"x is not a finite distribution: {res.x}")
        return f"status {res.status}, {res.nit} iterations"

    good("lp_epsilon_1e4_runs", "valid api", large_epsilon)

    def no_timing(ctx: Ctx) -> str:
        res = private_linprog(c, A, rhs, epsilon=1.0, delta=1e-6, sensitivity=0.01, width=2.5,
                              rounds=20, probes=2, rng=np.random.default_rng(4))
        for record in (res.report(), res.report(evaluate=True)):
            json.dumps(record)
            timing = {k for k in _keys_in(record) if "time" in k.lower() or "second" in k.lower()}
            ctx.check(not timing, f"the report holds timing: {sorted(timing)}")
        return "no timing in the report"

    good("lp_result_report_has_no_timing", "valid api", no_timing)


# -- randomness ------------------------------------------------------------------------------


def _randomness() -> None:
    from fastmwem.mechanisms.seeding import CallerRNGWarning
    from fastmwem.random import secure_rng
    from fastmwem.release import mwem
    from fastmwem.workloads import Marginals

    data, dom = small_data()

    def caller_generator(ctx: Ctx) -> str:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0, rounds=3,
                          rng=np.random.default_rng(0), accountant=ctx.acc())
        report = result.report()
        ctx.check(report["private"] is False, f"a caller's Generator gives private="
                  f"{report['private']}")
        ctx.check(report.get("not_private_because") == ["caller_rng"],
                  f"not_private_because {report.get('not_private_because')}")
        ctx.check(any(issubclass(w.category, CallerRNGWarning) for w in caught),
                  "no CallerRNGWarning")
        return "private false (caller_rng), warned"

    def secure(ctx: Ctx) -> str:
        result = mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0, rounds=3, rng=secure_rng(),
                      accountant=ctx.acc())
        report = result.report()
        ctx.check(report["private"] is True, f"secure_rng() gives private={report['private']} "
                  f"({report.get('not_private_because')})")
        return "private"

    good("mwem_caller_generator_not_private", "valid api", caller_generator)
    good("mwem_secure_rng_private", "valid api", secure)


def register() -> None:
    """Add this module's cases to the battery."""
    _exact_noise()
    _lp()
    _randomness()
