"""Accountant exactness, composition formulas and thread safety.

Closed forms are checked against a 60-digit ``decimal`` reference, which is independent of the
float code under test; "outward" means the library's number is never on the unsafe side of it.
"""

from __future__ import annotations

import math
import sys
import threading
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from fastmwem.accounting import (
    ZCDP,
    Accountant,
    ApproxDP,
    BoundedRange,
    BudgetExceededError,
    PureDP,
    advanced_composition,
    approx_dp_to_zcdp_budget,
    per_round_epsilon,
    zcdp_to_approx_dp,
)

PREC = 60

# Hypothesis's example count under the loaded profile (tests/conftest.py): 100 by default, ten
# times more under HYPOTHESIS_PROFILE=explore. Counts below are multiples of it.
_N = settings.default.max_examples


def _dec(x: object) -> Decimal:
    f = Fraction(repr(x)) if isinstance(x, float) else Fraction(x)
    return Decimal(f.numerator) / Decimal(f.denominator)


def _ref_log_inverse(delta: object) -> Decimal:
    return -_dec(delta).ln()


def _ref_zcdp_to_dp(rho: object, delta: object) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = PREC
        r = _dec(rho)
        return r + 2 * (r * _ref_log_inverse(delta)).sqrt()


def _ref_advanced(eps0: object, rounds: int, delta: object) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = PREC
        e = _dec(eps0)
        return e * (2 * rounds * _ref_log_inverse(delta)).sqrt() + rounds * e * (e.exp() - 1)


def _state(acc: Accountant):
    return acc.spent(), acc.remaining(), acc.ledger


# -- exactness -------------------------------------------------------------------------------


def test_hundred_charges_of_one_hundredth_fill_one_exactly():
    acc = Accountant(epsilon=1)
    for i in range(100):
        acc.compose(PureDP(0.01), label=f"step {i}")
    assert acc.spent() == PureDP(1)
    assert acc.remaining() == PureDP(0)
    assert acc.spent().epsilon == Fraction(1)
    assert len(acc.ledger) == 100
    before = _state(acc)
    with pytest.raises(BudgetExceededError, match="exceed the budget"):
        acc.compose(PureDP(0.01), label="one too many")
    assert _state(acc) == before
    assert not acc.can_afford(PureDP(0.01))
    assert acc.can_afford(PureDP(0))


def test_float_sum_would_have_overspent_but_fractions_do_not():
    # The float sum of 100 x 0.01 is 1.0000000000000007 > 1 (diffprivlib's failure mode).
    assert sum([0.01] * 100) > 1.0
    acc = Accountant(epsilon=1.0)
    for _ in range(100):
        acc.compose(BoundedRange(0.01))
    assert acc.remaining().epsilon == 0


def test_ledger_records_labels_events_and_exact_strings():
    acc = Accountant(epsilon=1, delta=1e-6)
    acc.compose(ApproxDP(0.25, 1e-7), label="a")
    acc.compose(PureDP(Fraction(1, 3)), label="b")
    assert [e.label for e in acc.ledger] == ["a", "b"]
    assert acc.ledger[1].cost == (Fraction(1, 3), Fraction(0))
    recs = acc.ledger_records()
    assert recs[0]["epsilon_exact"] == "1/4" and recs[0]["delta_exact"] == "1/10000000"
    assert recs[1]["epsilon_exact"] == "1/3"


# -- display -------------------------------------------------------------------------------------

# A split of epsilon = 1 into a 1% count and 25 rounds of two halves, each share rounded down
# to the float below it (what MWEM charges): the exact total is a hair under 1.
_COUNT = Fraction(0.009999999999999998)  # the float just below 0.01
_STEP = Fraction(0.019799999999999998)  # the float just below 0.0198


def _split_plan() -> Accountant:
    acc = Accountant(epsilon=1)
    plan = [(PureDP(_COUNT), "record count")]
    plan += [(BoundedRange(_STEP), "select"), (PureDP(_STEP), "measure")] * 25
    return acc.compose_all(plan)


def test_display_shows_the_requested_numbers_and_keeps_the_exact_charge():
    acc = _split_plan()
    assert acc.spent().epsilon < 1  # the safe rounding stays inside ...
    assert acc.spent().epsilon == _COUNT + 50 * _STEP
    assert repr(acc.spent()) == "PureDP(epsilon=1)"  # ... and the display is what was asked
    assert str(acc.ledger[0].event) == "PureDP(epsilon=0.01)"
    assert repr(acc.ledger[1].event) == "BoundedRange(epsilon=0.0198)"
    recs = acc.ledger_records()
    assert recs[0]["epsilon"] == 0.01 and recs[1]["epsilon"] == 0.0198
    assert Fraction(recs[0]["epsilon_exact"]) == _COUNT


def test_display_of_exact_decimals_is_unchanged():
    assert repr(PureDP(0.01)) == "PureDP(epsilon=0.01)"
    assert repr(ApproxDP(0.25, 1e-7)) == "ApproxDP(epsilon=0.25, delta=1e-07)"
    assert repr(ZCDP(2)) == "ZCDP(rho=2)"
    assert repr(Accountant(epsilon=1).spent()) == "PureDP(epsilon=0)"


@pytest.mark.parametrize("value", [Fraction(1, 10**400), Fraction(10**400 + 1, 10**400),
                                   Fraction(1, 3), Fraction(2, 3) * Fraction(1, 10**320)])
def test_display_never_shows_less_than_the_exact_value(value):
    # A privacy parameter stays a true statement when rounded up, never when rounded down;
    # values beyond the float range must not print as 0 or 1.
    text = repr(PureDP(value)).removeprefix("PureDP(epsilon=").removesuffix(")")
    assert Fraction(Decimal(text)) >= value
    assert Fraction(Decimal(text)) <= value * (1 + Fraction(1, 10**11))


@settings(max_examples=3 * _N)
@given(st.fractions(min_value=0, max_value=10**6), st.integers(-400, 20))
def test_display_is_short_rounded_up_and_tight(value, shift):
    value = value * Fraction(10) ** shift
    for event, text in ((ZCDP(value), lambda e: repr(e)[len("ZCDP(rho="):-1]),
                        (ApproxDP(1, min(value, Fraction(1, 2))),
                         lambda e: repr(e).split("delta=")[1][:-1])):
        shown = Fraction(Decimal(text(event)))
        true = event.rho if isinstance(event, ZCDP) else event.delta
        assert true <= shown <= true * (1 + Fraction(1, 10**11))
        digits = Decimal(text(event)).normalize().as_tuple().digits
        assert len(digits) <= 12 or true.denominator == 1


def test_ledger_records_numbers_are_the_display():
    acc = Accountant(epsilon=1, delta=1e-6)
    acc.compose(ApproxDP(Fraction(1, 3), Fraction(1, 3 * 10**7)), label="third")
    rec = acc.ledger_records()[0]
    assert rec["epsilon"] == 0.333333333334 and rec["delta"] == 3.33333333334e-08
    assert rec["epsilon_exact"] == "1/3" and rec["delta_exact"] == "1/30000000"
    assert rec["event"] == "ApproxDP(epsilon=0.333333333334, delta=3.33333333334e-08)"


def test_refusal_message_gives_exact_figures_when_the_display_rounds():
    acc = _split_plan()
    with pytest.raises(BudgetExceededError) as info:
        acc.compose(PureDP(1e-15))
    message = str(info.value)
    assert "spent PureDP(epsilon=1) of PureDP(epsilon=1)" in message
    assert f"has {1 - acc.spent().epsilon} left" in message and "needs 1/1000000000000000" in message
    with pytest.raises(BudgetExceededError) as info:
        Accountant(epsilon=1).compose(PureDP(2))
    assert "exactly" not in str(info.value)  # nothing rounded, nothing to add


def test_approx_basic_composition_sums_both_parameters():
    acc = Accountant(epsilon=1, delta=1e-5)
    acc.compose(ApproxDP(0.5, 5e-6))
    acc.compose(ApproxDP(0.25, 5e-6))
    assert acc.spent() == ApproxDP(0.75, 1e-5)
    before = _state(acc)
    # epsilon fits (0.75 + 0.2 < 1) but delta does not: refused on delta alone.
    with pytest.raises(BudgetExceededError):
        acc.compose(ApproxDP(0.2, 1e-12))
    assert _state(acc) == before
    acc.compose(PureDP(0.25))  # pure DP is (eps, 0)
    assert acc.remaining() == ApproxDP(0, 0)


def test_rho_budget_composes_in_zcdp():
    acc = Accountant(rho=0.5)
    acc.compose(ZCDP(0.125))
    acc.compose(BoundedRange(1))  # eps^2 / 8
    acc.compose(PureDP(0.5))  # eps^2 / 2
    assert acc.spent() == ZCDP(Fraction(1, 8) + Fraction(1, 8) + Fraction(1, 8))
    acc.compose(ApproxDP(0.5, 0))  # delta = 0 is pure DP
    assert acc.remaining() == ZCDP(0)
    with pytest.raises(BudgetExceededError):
        acc.compose(ZCDP(1e-12))


def test_zcdp_composition_of_an_eps_delta_budget():
    eps, delta = 1.0, 1e-6
    acc = Accountant(epsilon=eps, delta=delta, composition="zcdp")
    rho = approx_dp_to_zcdp_budget(eps, delta)
    assert acc.budget() == ZCDP(rho)
    acc.compose(BoundedRange(0.1), label="em")
    assert acc.spent() == ZCDP(Fraction(1, 800))
    acc.compose(PureDP(0.1), label="laplace")
    assert acc.spent() == ZCDP(Fraction(1, 800) + Fraction(1, 200))
    assert zcdp_to_approx_dp(acc.budget().rho, delta) <= eps
    # How many eps=0.1 EM steps fit: floor(rho / (0.01 / 8)) in total.
    fresh = Accountant(epsilon=eps, delta=delta, composition="zcdp")
    n = 0
    while fresh.can_afford(BoundedRange(0.1)):
        fresh.compose(BoundedRange(0.1))
        n += 1
    assert n == math.floor(rho / Fraction(1, 800))
    assert n > 10  # zCDP beats basic composition's 10 steps here


@pytest.mark.parametrize(
    ("kwargs", "event"),
    [
        ({"epsilon": 1}, ApproxDP(0.1, 1e-9)),
        ({"epsilon": 1}, ZCDP(0.01)),
        ({"epsilon": 1, "delta": 1e-6}, ZCDP(0.01)),
        ({"rho": 1}, ApproxDP(0.1, 1e-9)),
        ({"epsilon": 1, "delta": 1e-6, "composition": "zcdp"}, ApproxDP(0.1, 1e-9)),
    ],
)
def test_events_that_do_not_convert_raise_value_error(kwargs, event):
    acc = Accountant(**kwargs)
    acc.compose(PureDP(0.001), label="before")
    before = _state(acc)
    with pytest.raises(ValueError, match="cost|convert"):
        acc.compose(event)
    with pytest.raises(ValueError):
        acc.can_afford(event)
    assert _state(acc) == before


@pytest.mark.parametrize("bad", [0.1, "0.1", None, (0.1,)])
def test_compose_rejects_non_events(bad):
    acc = Accountant(epsilon=1)
    with pytest.raises(TypeError, match="event"):
        acc.compose(bad)
    assert acc.spent() == PureDP(0)


def test_compose_all_is_atomic():
    acc = Accountant(epsilon=1)
    plan = [(BoundedRange(0.25), f"round {i}") for i in range(4)]
    acc.compose_all(plan)
    assert acc.remaining() == PureDP(0)
    acc2 = Accountant(epsilon=1)
    acc2.compose(PureDP(0.5))
    before = _state(acc2)
    with pytest.raises(BudgetExceededError):
        acc2.compose_all(plan)
    assert _state(acc2) == before


# -- closed forms ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("eps0", "rounds", "delta"),
    [(0.01, 100, 1e-6), (0.1, 10, 1e-5), (1.0, 1, 0.5), (1e-4, 10_000, 1e-9), (0.5, 50, 0.99)],
)
def test_advanced_composition_closed_form(eps0, rounds, delta):
    got, d = advanced_composition(eps0, rounds, delta)
    ref = _ref_advanced(eps0, rounds, delta)
    assert d == delta
    assert Decimal(got) >= ref  # rounded up
    assert abs(Decimal(got) - ref) <= ref * Decimal("1e-9")
    # A hand value: 0.01 * sqrt(200 ln 1e6) + 100 * 0.01 * (e^0.01 - 1).
    if (eps0, rounds, delta) == (0.01, 100, 1e-6):
        assert got == pytest.approx(0.01 * math.sqrt(200 * math.log(1e6)) + math.expm1(0.01))
        assert round(got, 6) == 0.535702


def test_extreme_deltas_stay_on_the_safe_side():
    tiny = Fraction(1, 10**400)  # below the float range
    ref = _ref_zcdp_to_dp(0.5, tiny)
    got = zcdp_to_approx_dp(0.5, tiny)
    assert Decimal(got) >= ref and Decimal(got) <= ref * (1 + Decimal("1e-9"))
    assert _ref_zcdp_to_dp(approx_dp_to_zcdp_budget(1, tiny), tiny) <= 1
    eps, delta = advanced_composition(0.01, 100, tiny)
    assert delta > 0  # a delta cost never underflows to "pure DP"
    assert Decimal(eps) >= _ref_advanced(0.01, 100, tiny)
    near_one = 1 - 1e-12
    assert Decimal(zcdp_to_approx_dp(0.5, near_one)) >= _ref_zcdp_to_dp(0.5, near_one)
    assert _ref_zcdp_to_dp(approx_dp_to_zcdp_budget(1, near_one), near_one) <= 1


def test_zcdp_to_approx_dp_closed_form():
    # rho = 0.5, delta = 1e-6: 0.5 + 2 sqrt(0.5 * 6 ln 10)
    assert zcdp_to_approx_dp(0.5, 1e-6) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * 6 * math.log(10)))
    assert 0 <= zcdp_to_approx_dp(0, 1e-6) < 1e-300
    with pytest.raises(ValueError, match="delta"):
        zcdp_to_approx_dp(0.5, 1)
    with pytest.raises(ValueError, match="delta"):
        zcdp_to_approx_dp(0.5, 0)


@settings(max_examples=3 * _N)
@given(
    eps=st.floats(1e-6, 100.0),
    log10_delta=st.floats(-300.0, -1e-4),
)
def test_zcdp_conversions_are_inverse_and_outward(eps, log10_delta):
    delta = 10.0**log10_delta
    rho = approx_dp_to_zcdp_budget(eps, delta)
    back = zcdp_to_approx_dp(rho, delta)
    assert back <= eps  # the rounded-down budget converts back inside epsilon
    assert back >= eps * (1 - 1e-9)  # ... and is tight
    # Exact: the real conversion of the returned rho is within epsilon, and of the float
    # conversion is >= the real value (rounded up).
    assert _ref_zcdp_to_dp(rho, delta) <= _dec(eps)
    assert Decimal(back) >= _ref_zcdp_to_dp(rho, delta)
    # Every accountant built on that budget converts within (eps, delta).
    assert Accountant(epsilon=eps, delta=delta, composition="zcdp").budget() == ZCDP(rho)


@settings(max_examples=2 * _N)
@given(
    eps0=st.floats(1e-6, 2.0),
    rounds=st.integers(1, 100_000),
    log10_delta=st.floats(-200.0, -1e-3),
)
def test_advanced_composition_rounds_up(eps0, rounds, log10_delta):
    delta = 10.0**log10_delta
    got, _ = advanced_composition(eps0, rounds, delta)
    ref = _ref_advanced(eps0, rounds, delta)
    assert Decimal(got) >= ref
    assert Decimal(got) <= ref * (1 + Decimal("1e-9"))


# -- per-round epsilon ---------------------------------------------------------------------------


def _fits(eps0: float, rounds: int, acc: Accountant, event_type=PureDP) -> bool:
    try:
        acc.compose_all([(event_type(eps0), "r")] * rounds)
    except BudgetExceededError:
        return False
    return True


@pytest.mark.parametrize(("eps", "rounds"), [(1, 10), (1, 3), (0.3, 7), (2.5, 1000), (1e-3, 33)])
def test_per_round_epsilon_basic(eps, rounds):
    e0 = per_round_epsilon(eps, rounds, method="basic")
    assert _fits(e0, rounds, Accountant(epsilon=eps))
    assert not _fits(math.nextafter(e0, math.inf), rounds, Accountant(epsilon=eps))
    assert per_round_epsilon(eps, rounds) == e0  # best with delta = 0 is basic


@pytest.mark.parametrize(("eps", "rounds", "delta"), [(1, 100, 1e-6), (0.5, 1000, 1e-9), (4, 50, 1e-3)])
def test_per_round_epsilon_advanced(eps, rounds, delta):
    e0 = per_round_epsilon(eps, rounds, delta, method="advanced")
    assert advanced_composition(e0, rounds, delta)[0] <= eps
    assert advanced_composition(e0 * (1 + 1e-9), rounds, delta)[0] > eps


@pytest.mark.parametrize("bounded_range", [True, False])
@pytest.mark.parametrize(("eps", "rounds", "delta"), [(1, 100, 1e-6), (0.1, 7, 1e-9), (8, 2000, 1e-5)])
def test_per_round_epsilon_zcdp(eps, rounds, delta, bounded_range):
    e0 = per_round_epsilon(eps, rounds, delta, method="zcdp", bounded_range=bounded_range)
    event_type = BoundedRange if bounded_range else PureDP
    new = lambda: Accountant(epsilon=eps, delta=delta, composition="zcdp")  # noqa: E731
    assert _fits(e0, rounds, new(), event_type)
    assert not _fits(e0 * (1 + 1e-9), rounds, new(), event_type)


@pytest.mark.parametrize(("eps", "rounds", "delta"), [(1, 100, 1e-6), (1, 10, 1e-6), (3, 2, 1e-2)])
def test_per_round_epsilon_best_is_the_largest(eps, rounds, delta):
    for br in (True, False):
        methods = [per_round_epsilon(eps, rounds, delta, method=m, bounded_range=br)
                   for m in ("basic", "advanced", "zcdp")]
        assert per_round_epsilon(eps, rounds, delta, bounded_range=br) == max(methods)
    # For many EM rounds zCDP wins clearly over basic composition.
    if rounds == 100:
        assert per_round_epsilon(eps, rounds, delta, bounded_range=True) > 3 * eps / rounds


def test_per_round_epsilon_rejects_bad_arguments():
    with pytest.raises(ValueError, match="method"):
        per_round_epsilon(1, 10, 1e-6, method="renyi")
    with pytest.raises(ValueError, match="delta"):
        per_round_epsilon(1, 10, method="advanced")
    with pytest.raises(ValueError, match="delta"):
        per_round_epsilon(1, 10, 0, method="zcdp")
    with pytest.raises(ValueError, match="rounds"):
        per_round_epsilon(1, 0)
    with pytest.raises(TypeError, match="rounds"):
        per_round_epsilon(1, 2.5)


# -- stateful property test ------------------------------------------------------------------

_amounts = st.one_of(
    st.fractions(min_value=0, max_value=Fraction(1, 2), max_denominator=1000),
    st.sampled_from([0.01, 0.1, 0.05, 0.3, 1e-3]),
)


class AccountantMachine(RuleBasedStateMachine):
    """A model that keeps its own exact ledger and predicts every accept/refuse decision."""

    @initialize(mode=st.sampled_from(["pure", "approx", "rho", "zcdp"]))
    def make(self, mode):
        self.mode = mode
        if mode == "pure":
            self.acc = Accountant(epsilon=1)
            self.budget = (Fraction(1),)
        elif mode == "approx":
            self.acc = Accountant(epsilon=1, delta=1e-5)
            self.budget = (Fraction(1), Fraction(1, 100_000))
        elif mode == "rho":
            self.acc = Accountant(rho=0.25)
            self.budget = (Fraction(1, 4),)
        else:
            self.acc = Accountant(epsilon=2, delta=1e-6, composition="zcdp")
            self.budget = (approx_dp_to_zcdp_budget(2, 1e-6),)
        self.spent = tuple(Fraction(0) for _ in self.budget)
        self.n = 0

    def _model_cost(self, kind, a, b):
        fa = Fraction(repr(a)) if isinstance(a, float) else a
        fb = Fraction(repr(b)) if isinstance(b, float) else b
        if self.mode == "pure":
            return {"pure": (fa,), "br": (fa,), "approx": (fa,) if fb == 0 else None,
                    "zcdp": (Fraction(0),) if fa == 0 else None}[kind]
        if self.mode == "approx":
            return {"pure": (fa, 0), "br": (fa, 0), "approx": (fa, fb), "zcdp": None}[kind]
        return {"pure": (fa**2 / 2,), "br": (fa**2 / 8,),
                "approx": (fa**2 / 2,) if fb == 0 else None, "zcdp": (fa,)}[kind]

    @rule(kind=st.sampled_from(["pure", "br", "approx", "zcdp"]), a=_amounts,
          b=st.sampled_from([0, 1e-7, 1e-6, 3e-6]))
    def charge(self, kind, a, b):
        event = {"pure": lambda: PureDP(a), "br": lambda: BoundedRange(a),
                 "approx": lambda: ApproxDP(a, b), "zcdp": lambda: ZCDP(a)}[kind]()
        cost = self._model_cost(kind, a, b)
        before = _state(self.acc)
        if cost is None:
            with pytest.raises(ValueError):
                self.acc.compose(event)
            assert _state(self.acc) == before
            return
        new = tuple(s + c for s, c in zip(self.spent, cost))
        if all(x <= y for x, y in zip(new, self.budget)):
            self.acc.compose(event, label=str(self.n))
            self.spent = new
            self.n += 1
        else:
            with pytest.raises(BudgetExceededError):
                self.acc.compose(event)
            assert _state(self.acc) == before

    @invariant()
    def never_overspent_and_matches_model(self):
        spent = self.acc.spent()
        values = {"pure": lambda: (spent.epsilon,), "approx": lambda: (spent.epsilon, spent.delta),
                  "rho": lambda: (spent.rho,), "zcdp": lambda: (spent.rho,)}[self.mode]()
        assert values == self.spent
        assert all(s <= b for s, b in zip(values, self.budget))
        assert len(self.acc.ledger) == self.n


AccountantMachine.TestCase.settings = settings(max_examples=3 * _N // 5, stateful_step_count=50)
test_accountant_state_machine = AccountantMachine.TestCase


class AccountantMachineLong(AccountantMachine):
    """The same machine at the slow tier's size (200 steps x 500 runs)."""


AccountantMachineLong.TestCase.settings = settings(max_examples=5 * _N, stateful_step_count=200)
test_accountant_state_machine_long = pytest.mark.slow(AccountantMachineLong.TestCase)


# -- threads -------------------------------------------------------------------------------------


def _hammer(acc: Accountant, threads: int, per_thread: int, unit: Fraction) -> int:
    accepted = [0] * threads
    barrier = threading.Barrier(threads)

    def work(k: int) -> None:
        barrier.wait()
        for _ in range(per_thread):
            try:
                acc.compose(PureDP(unit))
                accepted[k] += 1
            except BudgetExceededError:
                pass

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # force frequent thread switches inside compose
    try:
        workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        sys.setswitchinterval(old)
    return sum(accepted)


@pytest.mark.parametrize("budget", [Fraction(1), Fraction(1, 10), Fraction(2, 7)])
def test_threads_accept_exactly_what_fits(budget):
    unit = Fraction(1, 80_000)
    acc = Accountant(epsilon=budget)
    # 8 threads, 10,000 charges in total.
    accepted = _hammer(acc, threads=8, per_thread=1250, unit=unit)
    expected = min(10_000, math.floor(budget / unit))
    assert accepted == expected
    assert acc.spent().epsilon == expected * unit <= budget
    assert len(acc.ledger) == expected


@pytest.mark.slow
def test_threads_full_spec_size():
    # 8 threads x 10,000 charges of 1/80,000 against budgets that fit all or part of them.
    for budget in (Fraction(1), Fraction(3, 4)):
        acc = Accountant(epsilon=budget)
        unit = Fraction(1, 80_000)
        accepted = _hammer(acc, threads=8, per_thread=10_000, unit=unit)
        assert accepted == math.floor(budget / unit)
        assert acc.spent().epsilon == accepted * unit


def test_accountant_copies_and_pickles_with_its_own_lock():
    import copy
    import pickle

    from fastmwem.accounting import Accountant, PureDP

    acc = Accountant(epsilon=1)
    acc.compose(PureDP(0.5), label="first")
    clone = pickle.loads(pickle.dumps(acc))
    copied = copy.deepcopy(acc)
    clone.compose(PureDP(0.25))
    assert acc.spent() == PureDP(0.5)
    assert copied.spent() == PureDP(0.5)
    assert clone.spent() == PureDP(0.75)
    assert [e.label for e in clone.ledger] == ["first", ""]


def test_memory_store_keeps_a_running_total_instead_of_summing_the_ledger(monkeypatch):
    import copy

    import fastmwem.accounting.ledger as ledger
    from fastmwem.accounting import LedgerEntry, MemoryLedgerStore

    passes_over_ledger = []
    real_total = ledger._total

    def counting_total(entries, width):
        entries = tuple(entries)
        passes_over_ledger.append(len(entries))
        return real_total(entries, width)

    monkeypatch.setattr(ledger, "_total", counting_total)
    store = MemoryLedgerStore()
    acc = Accountant(epsilon=1, store=store)
    for i in range(200):
        acc.compose(PureDP(Fraction(1, 1000)), label=str(i))
    assert acc.spent() == PureDP(Fraction(200, 1000))
    # one pass over the (then empty) ledger, then only the new entry of each charge
    assert max(passes_over_ledger) == 1
    assert store.spent(1) == real_total(store.entries(), 1)
    clone = copy.deepcopy(store)  # a copy rebuilds its total from its entries
    assert clone.spent(1) == (Fraction(1, 5),)
    before = store.entries()
    mixed = [LedgerEntry("a", PureDP(0.1), (Fraction(1, 10),)),
             LedgerEntry("b", ZCDP(0.1), (Fraction(1, 10), Fraction(0)))]
    with pytest.raises(ValueError, match="mixes currencies"):
        store.commit(mixed, lambda spent: None)
    assert store.entries() == before and store.spent(1) == (Fraction(1, 5),)


@pytest.mark.parametrize("epsilon", [1e4, 1e6, 1e300])
def test_per_round_epsilon_at_a_huge_budget_does_not_overflow(epsilon):
    # expm1(e0) overflowed in the bisection at e0 above ~710 (OverflowError: math range error)
    for method in ("advanced", "best") if epsilon <= 1e100 else ("advanced",):
        e0 = per_round_epsilon(epsilon, 100, 1e-6, method=method)
        assert 0 < e0 < math.inf
        if method == "advanced":
            assert advanced_composition(e0, 100, 1e-6)[0] <= epsilon
    assert advanced_composition(800.0, 3, 1e-6)[0] == math.inf


def test_zcdp_budget_of_a_huge_epsilon_is_refused_clearly():
    with pytest.raises(ValueError, match="at most 1e\\+100"):
        approx_dp_to_zcdp_budget(1e300, 1e-6)
    assert approx_dp_to_zcdp_budget(1e100, 1e-6) > 0
