"""How far numpy's floating-point Gumbel-max selection is from the exact exponential mechanism.

``docs/exactness.md`` proves a bound ``tau(m)`` on the total variation distance between the law
of ``ExponentialMechanism.select`` (log-weights in float64, ``rng.gumbel`` noise, ``np.argmax``)
and the exact exponential mechanism over ``m`` candidates. This script checks the facts the proof
rests on and measures the distance where it can be computed:

1. numpy's sampler: ``rng.gumbel()`` equals ``-log(-log(1 - next_double))`` bit for bit (PCG64
   and ChaCha20), ``next_double`` lies on the grid ``j 2**-53``; hence the noise takes finitely
   many values, all in ``[G_MIN, G_MAX]``.
2. libm's ``log`` (the one numpy's sampler calls) and ``np.log1p`` (permute-and-flip): the
   largest error in ulps on sample points, against 40-digit logarithms.
3. The bound ``tau(m)`` and ``delta = (1 + e^epsilon) tau`` for m = 10^2 .. 10^8.
4. The exact float law on coarser uniform grids (``2**b`` points, b = 10..20; same formula, same
   float64 arithmetic), computed in closed form by summing over the noise of each candidate with
   the step CDFs of the others: its TV to the softmax, beside the bound for that grid.
5. The truncation, exactly, at full 53-bit precision: two candidates ``d`` nats apart; the
   float probability of the low one is a ratio of integers (enumerating the few noise values of
   the low candidate that can win, counting the top candidate's below each by bisection). It is
   0 for ``d > G_MAX - G_MIN`` (about 40.34), e.g. at 45 nats, and positive at 35 nats.
6. Permute-and-flip's coins, exactly at 53 bits: ``|P_float(accept) - exp(y)|`` in units of
   ``2**-53`` (its TV is at most the sum over the coins).
7. A Monte Carlo check of the real sampler against the softmax (resolution ~1e-3 only).

Default run: about 10-20 s, one core. Writes ``results/float_selection_bound.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
from randomgen import ChaCha
from scipy import stats

from fastmwem.mechanisms import ExponentialMechanism
from fastmwem.mechanisms.exponential import _log_weights

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

N = 2**53  # next_double = (64-bit word >> 11) * 2**-53: N equally likely values
UNIT = 2.0**-53  # unit roundoff of float64, and the grid step of next_double
LIBM_LOG = np.frompyfunc(math.log, 1, 1)  # C's log, as numpy's random_gumbel calls it
getcontext().prec = 40


def libm_log(x: np.ndarray) -> np.ndarray:
    """Elementwise C ``log`` (``np.log`` has its own SIMD code and can differ by an ulp)."""
    return LIBM_LOG(np.asarray(x, dtype=np.float64)).astype(np.float64)


def gumbel_of(u: np.ndarray) -> np.ndarray:
    """numpy's ``random_gumbel`` for ``loc=0, scale=1`` at ``U = 1 - next_double``."""
    return -libm_log(-libm_log(u))


G_MAX = float(gumbel_of(np.array([1.0 - UNIT]))[0])  # U = 1 - 2**-53, the largest accepted
G_MIN = float(gumbel_of(np.array([UNIT]))[0])  # U = 2**-53, the smallest


# -- 1, 2: the sampler and its arithmetic ----------------------------------------------------------
def sampler_reading(draws: int) -> dict:
    """``rng.gumbel`` against ``-log(-log(1 - rng.random()))`` on the same stream, bit for bit."""
    makers = {"PCG64": lambda: np.random.PCG64(5),
              "ChaCha20": lambda: ChaCha(key=np.arange(4, dtype=np.uint64), counter=0, rounds=20)}
    out = {}
    for name, make in makers.items():
        noise = np.random.Generator(make()).gumbel(size=draws)
        words = np.random.Generator(make()).random(size=draws)
        out[name] = {
            "draws": draws,
            "bitwise_equal": bool(np.array_equal(noise, gumbel_of(1.0 - words))),
            "on_2^-53_grid": bool(np.all(words * 2.0**53 == np.rint(words * 2.0**53))),
            "min": float(noise.min()), "max": float(noise.max()),
        }
    return out


def _ulps(computed: float, exact: Decimal) -> float:
    return float(abs(Decimal(computed) - exact)) / math.ulp(float(exact))


def log_accuracy(points: int) -> dict:
    """Largest error in ulps of libm ``log`` (both steps of the sampler) and ``np.log1p``."""
    rng = np.random.Generator(np.random.PCG64(0))
    k = rng.integers(1, N, size=points).tolist() + [1, 2, 3, N - 3, N - 2, N - 1]
    worst = {"log(U)": 0.0, "log(-log(U))": 0.0, "log1p(-V)": 0.0}
    for ki in k:
        u = ki * UNIT
        first = math.log(u)
        worst["log(U)"] = max(worst["log(U)"], _ulps(first, Decimal(u).ln()))
        worst["log(-log(U))"] = max(worst["log(-log(U))"],
                                    _ulps(math.log(-first), Decimal(-first).ln()))
        v = (N - ki) * UNIT  # V = next_double; 1 - V = U exactly
        got = float(np.log1p(np.array([-v]))[0])
        worst["log1p(-V)"] = max(worst["log1p(-V)"], _ulps(got, (Decimal(1) - Decimal(v)).ln()))
    return {"points": len(k), "max_ulps": worst}


# -- 3: the bound ------------------------------------------------------------------------------------
def per_candidate_error(span: float, g_abs: float, log_ulps: float = 1.0) -> tuple[float, float]:
    """``(L, e)``: the relevance cut ``L`` and the float error ``e`` of one candidate's noisy value.

    A candidate more than ``L = span + 0.2`` nats below the best is never chosen in floating point.
    For the others ``|fl(y + g) - (x + G(U))| <= e``: ``y`` is ``x (1 + theta)`` with
    ``|theta| <= (1 + u)^3 - 1`` (one subtraction, two products), the two logarithms are within
    ``log_ulps`` ulps each, and the sum rounds once.
    """
    cut = span + 0.2
    u = UNIT
    weights = 3.0000001 * cut  # the log-weight
    weights += 2.0 * log_ulps * (1.0000001 + g_abs)  # log(U), then log(-log U)
    weights += cut + g_abs  # the final addition
    return cut, u * weights


def tv_bound(m: int, grid: int = N, span: float | None = None, g_abs: float | None = None,
             log_ulps: float = 1.0) -> float:
    """``tau(m)``: the proven TV bound of docs/exactness.md for ``m`` candidates and a uniform
    grid of ``grid`` points (``U = k / grid``, ``k = 1 .. grid - 1``)."""
    span = G_MAX - G_MIN if span is None else span
    g_abs = max(abs(G_MAX), abs(G_MIN)) if g_abs is None else g_abs
    _, e = per_candidate_error(span, g_abs, log_ulps)
    reject = m / grid
    return reject + ((m + 1) / grid + math.expm1(2.0 * e)) / (1.0 - reject)


def bound_table(sizes: list[int], epsilons: list[float]) -> list[dict]:
    rows = []
    for m in sizes:
        tau = tv_bound(m)
        rows.append({"m": m, "tau": tau, "tau_in_2^-53": tau / UNIT,
                     "delta": {str(eps): (1.0 + math.exp(eps)) * tau for eps in epsilons}})
    return rows


# -- 4: exact float laws on coarse grids ---------------------------------------------------------
def float_law(y: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Exact law of ``argmax(fl(y + g))`` (first index on ties), ``g`` uniform over ``noise``.

    ``noise`` is sorted, so each ``fl(y_j + noise)`` is too, and the chance that candidate ``j``
    stays below a value is a ``searchsorted`` count: strictly below for ``j < i``, at most equal
    for ``j > i`` (``np.argmax`` keeps the first maximum).
    """
    n = noise.size
    z = [yj + noise for yj in y]
    out = np.empty(y.size)
    for i in range(y.size):
        weight = np.ones(n)
        for j in range(y.size):
            if j != i:
                side = "left" if j < i else "right"
                weight *= np.searchsorted(z[j], z[i], side=side) / n
        out[i] = weight.sum() / n
    return out


def softmax(y: np.ndarray) -> np.ndarray:
    w = np.exp(y - y.max())
    return w / w.sum()


def coarse_grids(bits: list[int], vectors: dict[str, list[float]]) -> list[dict]:
    top = max(bits)
    k = np.arange(1, 2**top, dtype=np.int64)
    table = gumbel_of(k * 2.0**-top)
    if not np.all(np.diff(table) >= 0):
        raise RuntimeError("the computed Gumbel table is not monotone: the closed form needs it")
    rows = []
    for b in bits:
        noise = table[2 ** (top - b) - 1::2 ** (top - b)]  # U = j / 2**b, j = 1 .. 2**b - 1
        span_b = float(noise[-1] - noise[0])
        g_abs = float(max(abs(noise[-1]), abs(noise[0])))
        for name, scores in vectors.items():
            y = _log_weights(np.asarray(scores, dtype=np.float64), 1.0)
            law = float_law(y, noise)
            tv = 0.5 * float(np.abs(law - softmax(y)).sum())
            bound = tv_bound(y.size, 2**b, span_b, g_abs)
            rows.append({"bits": b, "vector": name, "m": int(y.size), "tv": tv, "bound": bound,
                         "tv_over_m_step": tv * 2**b / y.size, "span": span_b,
                         "float_law": law.tolist(), "softmax": softmax(y).tolist()})
    return rows


# -- 5: the truncation at 53 bits, exactly ---------------------------------------------------------
def _gumbel_at(k: np.ndarray) -> np.ndarray:
    """The noise at ``U = k 2**-53`` (``k`` int64); ``-inf`` at ``k = 0``, ``+inf`` at ``k = N``."""
    out = np.empty(k.size)
    low, high = k <= 0, k >= N
    mid = ~(low | high)
    out[low], out[high] = -np.inf, np.inf
    out[mid] = gumbel_of(k[mid] * UNIT)
    return out


def count_below(t: np.ndarray) -> np.ndarray:
    """``#{k in 1 .. N - 1 : g(k) < t}`` for each threshold, by bisection around the inverse CDF."""
    with np.errstate(over="ignore"):
        guess = np.floor(np.exp(-np.exp(-t)) * 2.0**53)
    guess = np.clip(guess, 0, N - 1).astype(np.int64)
    lo, hi = np.maximum(guess - 256, 0), np.minimum(guess + 256, N)
    for _ in range(60):  # widen until g(lo) < t <= g(hi)
        bad_lo = _gumbel_at(lo) >= t
        bad_hi = _gumbel_at(hi) < t
        if not (bad_lo.any() or bad_hi.any()):
            break
        lo = np.where(bad_lo, np.maximum(2 * lo - guess - 1, 0), lo)
        hi = np.where(bad_hi, np.minimum(2 * hi - guess + 1, N), hi)
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        below = _gumbel_at(mid) < t
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return lo


def two_candidate_tail(gaps: list[float]) -> list[dict]:
    """``P_float(the low candidate of [0, -d] wins)`` exactly, at numpy's 53-bit grid."""
    rows = []
    for d in gaps:
        y = _log_weights(np.array([0.0, -d]), 1.0)
        # the low candidate can only win with noise above d + G_MIN: U within e^-(d + G_MIN) of 1
        reach = int(2.0**53 * math.exp(-(d + G_MIN)) * 1.25) + 16
        k_low = N - np.arange(1, reach + 1, dtype=np.int64)
        t = y[1] + gumbel_of(k_low * UNIT)
        counts = count_below(t)  # top candidate's noise values strictly below (ties: index 0)
        if counts[-1] != 0:
            raise RuntimeError("enumeration too short")
        p_float = Fraction(sum(counts.tolist()), (N - 1) ** 2)
        p_exact = math.exp(-d) / (1.0 + math.exp(-d))
        rows.append({"gap": d, "p_float": float(p_float), "p_exact": p_exact,
                     "ratio": float(p_float) / p_exact, "tv": abs(float(p_float) - p_exact),
                     "noise_values_enumerated": reach})
    return rows


# -- 6: permute-and-flip's coins -----------------------------------------------------------------
def pnf_coins(log_accepts: list[float]) -> list[dict]:
    """``|#{V : log1p(-V) <= y} - N e^y|`` in units of ``2**-53``, for ``V = j 2**-53``."""
    rows = []
    for y in log_accepts:
        lo, hi = -1, N  # find the smallest j with log1p(-j/N) <= y (accepted from there on)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if float(np.log1p(np.array([-(mid * UNIT)]))[0]) <= y:
                hi = mid
            else:
                lo = mid
        accepted = N - hi
        exact = Decimal(N) * Decimal(y).exp()
        rows.append({"log_accept": y, "accepted_of_2^53": accepted,
                     "discrepancy_in_2^-53": float(abs(Decimal(accepted) - exact))})
    return rows


# -- 7: Monte Carlo with the real sampler -----------------------------------------------------------
def monte_carlo(draws: int, m: int) -> dict:
    y = _log_weights(-np.linspace(0.0, 3.0, m), 1.0)
    rng = np.random.Generator(np.random.PCG64(11))
    counts = np.zeros(m, dtype=np.int64)
    chunk = 200_000
    for start in range(0, draws, chunk):
        rows = min(chunk, draws - start)
        # the arithmetic of ExponentialMechanism.select, one row per draw
        pick = np.argmax(y + rng.gumbel(size=(rows, m)), axis=1)
        counts += np.bincount(pick, minlength=m)
    p = softmax(y)
    chi2 = float((((counts - draws * p) ** 2) / (draws * p)).sum())
    tv_hat = 0.5 * float(np.abs(counts / draws - p).sum())
    tv_null = 0.5 * float(np.sqrt(2.0 * p * (1.0 - p) / (math.pi * draws)).sum())
    return {"draws": draws, "m": m, "chi2": chi2, "p_value": float(stats.chi2.sf(chi2, m - 1)),
            "tv_hat": tv_hat, "tv_hat_expected_from_sampling_alone": tv_null}


def truncation_demo(draws: int, gap: float) -> dict:
    """The real ``ExponentialMechanism.select`` on ``[0, -gap]`` (log-weights, scale 1)."""
    mech = ExponentialMechanism(epsilon=2.0, sensitivity=1.0)
    rng = np.random.Generator(np.random.PCG64(2024))
    low = sum(mech.select([0.0, -gap], rng=rng) for _ in range(draws))
    return {"gap": gap, "draws": draws, "low_chosen": int(low),
            "p_exact": math.exp(-gap) / (1.0 + math.exp(-gap)),
            "p_float": 0.0 if gap > G_MAX - G_MIN else None}


# -- output --------------------------------------------------------------------------------------
def plot(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(18, 5.2))
    ax = axes[0]
    tail = result["two_candidates_53bit"]
    gaps = [r["gap"] for r in tail]
    ax.plot(gaps, [r["p_exact"] for r in tail], label="exact law")
    pos = [(r["gap"], r["p_float"]) for r in tail if r["p_float"] > 0]
    ax.plot([g for g, _ in pos], [p for _, p in pos], "o", label="numpy float law (exact)")
    zero = [r["gap"] for r in tail if r["p_float"] == 0]
    floor = min(r["p_exact"] for r in tail) / 10
    ax.plot(zero, [floor] * len(zero), "x", color="C3", label="float law = 0 exactly")
    ax.axvline(G_MAX - G_MIN, color="grey", linestyle=":", label="G_MAX - G_MIN = 40.34")
    ax.set_yscale("log")
    ax.set_xlabel("gap d of the low candidate (nats)")
    ax.set_ylabel("P(low candidate chosen)")
    ax.set_title("two candidates, numpy's 53-bit grid")
    ax.legend(fontsize=8)

    ax = axes[1]
    grids = result["coarse_grids"]
    for i, name in enumerate(dict.fromkeys(r["vector"] for r in grids)):
        rows = [r for r in grids if r["vector"] == name]
        ax.plot([r["bits"] for r in rows], [max(r["tv"], 1e-18) for r in rows], "o-",
                color=f"C{i}", label=f"TV measured: {name}")
        ax.plot([r["bits"] for r in rows], [r["bound"] for r in rows], "--", color=f"C{i}",
                alpha=0.6)
    ax.set_yscale("log")
    ax.set_xlabel("bits b of the uniform grid (numpy: 53)")
    ax.set_ylabel("TV(float law, exact law)")
    ax.set_title("exact float law on 2^b-point grids (dashed: bound)")
    ax.legend(fontsize=7)

    ax = axes[2]
    table = result["bound"]
    ms = [r["m"] for r in table]
    ax.plot(ms, [r["tau"] for r in table], "o-", label="tau(m), proven")
    ax.plot(ms, [r["delta"]["1.0"] for r in table], "s--", label="delta at epsilon = 1")
    worst = max(r["tv_over_m_step"] for r in grids if r["bits"] == max(x["bits"] for x in grids))
    ax.plot(ms, [worst * m * UNIT for m in ms], "^:", label="quantisation part measured at b = 20, as m 2^-53")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("candidates m")
    ax.set_title("bound at numpy's grid")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bits", type=int, nargs="+", default=[10, 12, 14, 16, 18, 20])
    parser.add_argument("--mc-draws", type=int, default=1_000_000)
    parser.add_argument("--demo-draws", type=int, default=100_000)
    parser.add_argument("--output", default="float_selection_bound")
    args = parser.parse_args()
    started = time.perf_counter()
    vectors = {"two, gap 1": [0.0, -1.0], "five ties": [0.0] * 5,
               "five spread": [0.0, -0.5, -1.5, -3.0, -6.0],
               "five deep": [0.0, -4.0, -8.0, -12.0, -16.0]}
    gaps = [29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 40.2, 40.3,
            40.33, 40.34, 40.35, 40.5, 41.0, 42.0, 45.0]
    result = {
        "constants": {"G_MAX": G_MAX, "G_MIN": G_MIN, "span": G_MAX - G_MIN,
                      "relevance_cut_L": per_candidate_error(G_MAX - G_MIN, G_MAX)[0],
                      "per_candidate_error_e": per_candidate_error(G_MAX - G_MIN, G_MAX)[1],
                      "e_in_2^-53": per_candidate_error(G_MAX - G_MIN, G_MAX)[1] / UNIT},
        "sampler": sampler_reading(100_000),
        "log_accuracy": log_accuracy(2000),
        "bound": bound_table([10**2, 10**4, 10**6, 10**8], [0.1, 1.0]),
        "coarse_grids": coarse_grids(args.bits, vectors),
        "two_candidates_53bit": two_candidate_tail(gaps),
        "pnf_coins_53bit": pnf_coins([-1e-3, -0.1, -0.5, -1.0, -2.0, -5.0, -10.0, -20.0, -30.0,
                                      -36.0, -36.7, -37.0, -40.0]),
        "monte_carlo": monte_carlo(args.mc_draws, 10),
        "truncation_demo": truncation_demo(args.demo_draws, 45.0),
    }
    result["meta"] = {"python": platform.python_version(), "numpy": np.__version__,
                      "seconds": time.perf_counter() - started, "args": vars(args)}
    os.makedirs(RESULTS, exist_ok=True)
    target = os.path.join(RESULTS, f"{args.output}.json")
    with open(target + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
    os.replace(target + ".tmp", target)
    plot(result, os.path.join(RESULTS, f"{args.output}.png"))
    summarise(result)


def summarise(result: dict) -> None:
    c = result["constants"]
    print(f"G_MAX {c['G_MAX']!r}  G_MIN {c['G_MIN']!r}  span {c['span']:.6f}  "
          f"e = {c['e_in_2^-53']:.1f} x 2^-53")
    print("sampler:", {k: v["bitwise_equal"] for k, v in result["sampler"].items()},
          "log ulps:", result["log_accuracy"]["max_ulps"])
    for r in result["bound"]:
        print(f"m = {r['m']:>9}: tau <= {r['tau']:.3e}  delta(eps=1) <= {r['delta']['1.0']:.3e}")
    for r in result["coarse_grids"]:
        print(f"b = {r['bits']:2d} {r['vector']:12s} TV {r['tv']:.3e}  bound {r['bound']:.3e}  "
              f"TV 2^b / m = {r['tv_over_m_step']:.3f}")
    for r in result["two_candidates_53bit"]:
        print(f"gap {r['gap']:6.2f}: float {r['p_float']:.4e}  exact {r['p_exact']:.4e}  "
              f"ratio {r['ratio']:.4f}")
    print("pnf coins, max discrepancy (x 2^-53):",
          max(r["discrepancy_in_2^-53"] for r in result["pnf_coins_53bit"]))
    print("monte carlo:", result["monte_carlo"])
    print("truncation demo:", result["truncation_demo"])
    print(f"{result['meta']['seconds']:.1f} s")


if __name__ == "__main__":
    main()
