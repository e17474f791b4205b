"""From any DataFrame to private synthetic data in one call: :class:`Synthesizer`.

>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> df = pd.DataFrame({"x": rng.normal(50, 10, 2000), "n": rng.integers(0, 5, 2000)})
>>> synth = Synthesizer(epsilon=2.0, rng=1).fit(df)  # a seed: for tests, not private
>>> synth.sample(5).dtypes.tolist()
[dtype('float64'), dtype('int64')]
>>> synth.report()["guarantee"]
{'definition': 'pure', 'epsilon': 2.0}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from fastmwem._validation import check_epsilon, check_probability
from fastmwem.accounting import (
    Accountant,
    ApproxDP,
    approx_dp_to_zcdp_budget,
    exact,
    ledger_records,
    show,
)
from fastmwem.data.io.checks import check_frame
from fastmwem.data.schema import ColumnSpec, Label, Schema
from fastmwem.data.schema.draft import (
    MAX_CATEGORIES,
    ColumnDraft,
    UndeclaredCategoriesError,
    check_columns,
    draft_schema,
    float_within,
    plan_columns,
)
from fastmwem.random import RNGLike, make_rng, secure_rng, split_seed

if TYPE_CHECKING:
    import pandas as pd

    from fastmwem.release.result import MWEMResult

__all__ = ["Synthesizer", "DENSE_CELLS", "DRAFT_FRACTION"]

#: Above this many cells the Synthesizer fits a junction tree rather than a dense histogram
#: (unless ``model`` is given). Measured at epsilon 1 on 20,000 rows (7 columns drafted to
#: 323,680 cells): the dense final fit took 32 s, the junction tree 4.6 s (x-y correlation
#: 0.93); MW passes over 8.9 million dense cells (palmer penguins at 16 bins) took 200 s.
DENSE_CELLS = 2**18
#: The draft's default share of the budget (without a schema). At 0.1, on a public table of
#: 4,360 records and 12 columns at epsilon 1, each quantile level had epsilon 0.002 and most
#: cuts landed outside the data; 0.3 recovered the integer columns' values.
DRAFT_FRACTION = 0.3

# Keywords of mwem_with_defaults that the Synthesizer sets itself.
_RESERVED = ("epsilon", "delta", "rho", "privacy", "accountant", "rng", "schema")
# Keywords of mwem_with_defaults that are not MWEMConfig options.
_RUN_KEYWORDS = ("count_fraction", "before_rounds", "progress", "memory_limit", "total")


class Synthesizer:
    """Private synthetic data with MWEM, for a DataFrame as it is.

    :meth:`fit` drafts a schema privately (:func:`~fastmwem.data.schema.draft.draft_schema`)
    unless one is given, encodes the table with it and runs
    :func:`~fastmwem.release.mwem_with_defaults` with the rest of the budget, all against one
    accountant holding the whole budget (:attr:`accountant`); :meth:`sample` gives records
    with the table's columns, order and dtypes.

    Privacy: ``epsilon``-DP (``privacy="pure"``, the default without ``delta``) or
    ``(epsilon, delta)``-DP, under adding or removing a record. With ``privacy="zcdp"`` (the
    default with ``delta``) the text columns' categories are found at ``(eps_c, delta / 2)``
    (``eps_c = draft_fraction * epsilon * texts / drafted columns``), and the rest,
    ``(epsilon - eps_c, delta - delta / 2)`` (all of ``delta`` without text columns), is
    converted to the largest zCDP ``rho`` that implies it (tight conversion, arXiv:2004.00010),
    which pays for the number columns' quantile cuts (``draft_fraction`` of ``rho``, times
    their share of the drafted columns) and MWEM (the rest): basic composition of the two
    parts. Under pure DP the draft gets ``draft_fraction * epsilon``, MWEM the rest; text
    columns then need declared ``categories`` (or a ``delta``). Declared and boolean columns
    cost nothing.

    Args:
        epsilon: the total budget.
        delta: the delta of an ``(epsilon, delta)`` guarantee, or None (pure DP).
        schema: a public :class:`~fastmwem.data.Schema`: nothing is drafted.
        privacy: ``"pure"`` or ``"zcdp"`` (MWEM's measurements; default from ``delta``).
        draft_fraction: the draft's share of the budget, in (0, 1).
        rng: ``None`` (operating-system entropy, for releases), or a seed or Generator for
            tests: the report then says the output is not private.
        bounds, categories, missing, bins, max_categories: public declarations for the draft
            (see :func:`~fastmwem.data.schema.draft.draft_schema`).
        workload: a workload spec (``"marginals:2"``); default
            :func:`~fastmwem.workloads.spec.default_workload_spec` of the domain.
        numeric: how sampled number bins become numbers: ``"uniform"`` (a uniform draw in the
            bin; integers uniformly among the bin's integers) or ``"midpoint"``.
        **mwem_options: keyword arguments of :func:`~fastmwem.release.mwem_with_defaults`;
            ``estimator`` defaults to ``"final-fit"`` here, and ``model`` to
            ``"junction-tree"`` on a domain of more than :data:`DENSE_CELLS` cells.

    Raises (before any budget is spent):
        TypeError, ValueError: bad arguments, here or in :meth:`fit`.
    """

    def __init__(self, epsilon: float, delta: float | None = None, *,
                 schema: Schema | None = None, privacy: str | None = None,
                 draft_fraction: float = DRAFT_FRACTION, rng: RNGLike = None,
                 bounds: Mapping[str, Sequence[object]] | None = None,
                 categories: Mapping[str, Sequence[Label]] | None = None,
                 missing: Mapping[str, bool] | None = None, bins: int = 16,
                 max_categories: int = MAX_CATEGORIES, workload: str | None = None,
                 numeric: str = "uniform", **mwem_options: Any) -> None:
        check_epsilon(epsilon)
        if delta is not None:
            d = exact(delta, "delta")
            if not 0 < d < 1:
                raise ValueError(f"delta must lie in (0, 1), got {float(d)}")
        privacy = ("pure" if delta is None else "zcdp") if privacy is None else privacy
        if privacy not in ("pure", "zcdp"):
            raise ValueError(f"privacy must be 'pure' or 'zcdp', got {privacy!r}")
        if privacy == "zcdp" and delta is None:
            raise ValueError("privacy='zcdp' needs delta (the delta of the (epsilon, delta)-DP "
                             "guarantee), e.g. delta=1e-9")
        if schema is not None and not isinstance(schema, Schema):
            raise TypeError(f"schema must be a Schema, got {type(schema).__name__}")
        check_probability(draft_fraction, "draft_fraction")
        if not 0 < draft_fraction < 1:
            raise ValueError(f"draft_fraction must lie in (0, 1), got {draft_fraction}")
        if numeric not in ("uniform", "midpoint"):
            raise ValueError(f"numeric must be 'uniform' or 'midpoint', got {numeric!r}")
        if workload is not None and not isinstance(workload, str):
            raise TypeError(f"workload must be a spec such as 'marginals:2', got {workload!r}")
        reserved = sorted(set(mwem_options) & set(_RESERVED))
        if reserved:
            raise TypeError(f"Synthesizer sets {reserved} itself; give the budget as epsilon "
                            "and delta, and a schema as schema=")
        _check_mwem_options(privacy, epsilon, mwem_options)
        for value, name, least in ((bins, "bins", 2), (max_categories, "max_categories", 1)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an integer, got {value!r}")
            if value < least:
                raise ValueError(f"{name} must be >= {least}, got {value}")
        if rng is not None and not isinstance(rng, np.random.Generator):
            make_rng(rng)  # refuses a bad seed now
        self.epsilon, self.delta, self.privacy = epsilon, delta, privacy
        self.draft_fraction = draft_fraction
        self._declared = {"bounds": bounds, "categories": categories, "missing": missing}
        self._draft_options = {"bins": bins, "max_categories": max_categories}
        self.workload, self.numeric = workload, numeric
        self._rng = rng
        # The final fit (post-processing of the released measurements) keeps the model's
        # marginals near what was measured: on a 20,000-row test table at epsilon 1 a 0.99
        # correlation came out 0.94 with it and 0.37 with MW passes alone.
        self._mwem_options = {"estimator": "final-fit", **mwem_options}
        self._given_schema = schema
        self.schema: Schema | None = schema
        self.result: MWEMResult | None = None
        self.accountant: Accountant | None = None
        self.zcdp_accountant: Accountant | None = None
        self._dtypes: list[tuple[str, Any]] = []
        self._sampling_rng: np.random.Generator | None = None

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, df: pd.DataFrame) -> Synthesizer:
        """Spend the budget on ``df``: draft a schema (unless given), then fit MWEM.

        Everything that can be checked without the budget is checked first: the table, the
        declarations, the given schema's encoding. A Synthesizer fits once.

        Raises:
            UndeclaredCategoriesError: text columns under pure DP without declared categories.
            ValueError, TypeError: a bad table or declaration (before any charge).
            RuntimeError: fitted already.
        """
        from fastmwem.mechanisms.seeding import check_rng

        if self.result is not None:
            raise RuntimeError("this Synthesizer has spent its budget on a fit already; make "
                               "a new one for another fit")
        check_frame(df)
        if len(df) == 0 or len(df.columns) == 0:
            raise ValueError("df is empty: there is nothing to synthesize")
        plans: list[ColumnDraft] = []
        dataset = None
        if self._given_schema is not None:
            dataset = self._given_schema.encode(df)
        else:
            plans = plan_columns(df, **self._declared)  # type: ignore[arg-type]
            texts = [p.name for p in plans if p.learns == "categories"]
            if texts and self.delta is None:
                raise UndeclaredCategoriesError(
                    f"columns {texts} hold text: which labels occur cannot be learnt under pure "
                    "DP; declare them with categories={name: [labels]}, or give delta (an "
                    "(epsilon, delta) guarantee)", texts)
            check_columns(df, plans)
        check_rng(self._rng, "Synthesizer.fit", stacklevel=3)
        workload_rng, noise_rng, sampling_rng = _streams(self._rng)
        self._dtypes = [(str(c), df[c].dtype) for c in df.columns]
        budget = _Budget(self, plans)
        self.accountant, self.zcdp_accountant = budget.accountant, budget.zcdp
        if self._given_schema is None:
            self.schema = budget.draft(df, plans, noise_rng)
            dataset = self.schema.encode(df)
        schema = self.schema
        if schema is None or dataset is None:  # set above, one way or the other
            raise RuntimeError("no schema")
        from fastmwem.release import mwem_with_defaults
        from fastmwem.workloads.spec import default_workload_spec, parse_workload

        spec = self.workload or default_workload_spec(dataset.domain)
        workload = parse_workload(spec, dataset.domain, seed=workload_rng)
        options = dict(self._mwem_options)
        if "model" not in options and dataset.domain.size > DENSE_CELLS:
            options["model"] = "junction-tree"  # chosen from the (released) domain: public
        self.result = mwem_with_defaults(dataset, workload, rng=noise_rng, schema=schema,
                                         **budget.mwem_budget(), **options)
        self._sampling_rng = sampling_rng
        return self

    # -- sampling -----------------------------------------------------------------------------
    def sample(self, n: int | None = None, *, sampling: str = "matched") -> pd.DataFrame:
        """``n`` synthetic records (default: the noisy record count) with the table's columns,
        order and dtypes: integers stay integers (nullable ``Int64``-like when they may be
        missing), datetimes datetimes, booleans booleans; missing values appear at the
        model's rate. Post-processing: no budget is spent."""
        result, _ = self._fitted()
        codes = result.sample(n, rng=self._sampling_rng, decode=False, sampling=sampling)
        return self.decode(codes)

    def decode(self, codes: pd.DataFrame | np.ndarray, *,
               rng: RNGLike = None) -> pd.DataFrame:
        """Records of codes over the schema's domain as the table's columns and dtypes (as
        :meth:`sample` gives them; ``rng`` defaults to the fit's sampling stream)."""
        _, schema = self._fitted()
        generator = self._sampling_rng if rng is None else make_rng(rng)
        frame = schema.decode(codes, numeric=self.numeric, rng=generator)
        return _restore(frame, self._dtypes)

    def fit_sample(self, df: pd.DataFrame, n: int | None = None) -> pd.DataFrame:
        """:meth:`fit` then :meth:`sample`."""
        return self.fit(df).sample(n)

    def report(self) -> dict[str, object]:
        """What was released and spent: the guarantee, the ledger(s), the schema (drafted or
        given), MWEM's choices and its own report. Never the seed."""
        from fastmwem.mechanisms.seeding import rng_provenance

        result, schema = self._fitted()
        mwem = result.report()
        reasons = list(dict.fromkeys([*rng_provenance(self._rng),
                                      *mwem["not_private_because"]]))  # type: ignore[misc]
        accountant = self.accountant
        if accountant is None:  # set by fit
            raise RuntimeError("no accountant")
        spent = accountant.spent()
        guarantee: dict[str, object] = {"definition": "pure" if self.delta is None else "approx",
                                        "epsilon": float(show(spent.approx()[0]))}  # type: ignore[index]
        if self.delta is not None:
            guarantee["delta"] = float(show(spent.approx()[1]))  # type: ignore[index]
            guarantee["composition"] = "basic composition of every ledger entry"
        out: dict[str, object] = {
            "private": not reasons,
            "not_private_because": reasons,
            "guarantee": guarantee,
            "budget": {"epsilon": self.epsilon, "delta": self.delta, "privacy": self.privacy,
                       "draft_fraction": None if self._given_schema else self.draft_fraction},
            "ledger": accountant.ledger_records(),
            "schema": schema.to_dict(),
            "schema_drafted": self._given_schema is None,
            "choices": dataclasses.asdict(result.choices) if result.choices else None,
            "mwem": mwem,
        }
        if self.zcdp_accountant is not None:
            out["zcdp_ledger"] = ledger_records(self.zcdp_accountant.ledger)
        return out

    def _fitted(self) -> tuple[MWEMResult, Schema]:
        if self.result is None or self.schema is None:
            raise RuntimeError("fit the Synthesizer first: Synthesizer(...).fit(df)")
        return self.result, self.schema


def _check_mwem_options(privacy: str, epsilon: float, options: Mapping[str, Any]) -> None:
    """Refuse bad MWEM options before any budget, as mwem_with_defaults would later."""
    from fastmwem.release.mwem import check_options

    config = {k: v for k, v in options.items() if k not in _RUN_KEYWORDS}
    rounds = config.pop("rounds", None)
    budget: dict[str, Any] = {"epsilon": epsilon} if privacy == "pure" else {
        "privacy": "zcdp", "rho": 0.01}
    check_options(rounds=rounds, **budget, **config)
    if "count_fraction" in options:
        check_probability(options["count_fraction"], "count_fraction")


def _streams(rng: RNGLike) -> tuple[np.random.Generator, ...]:
    """Workload, noise and sampling generators: independent children of a seed, three
    operating-system generators, or a caller's generator shared by all three."""
    if isinstance(rng, np.random.Generator):
        return rng, rng, rng
    if rng is None:
        return secure_rng(), secure_rng(), secure_rng()
    return split_seed(int(rng))


class _Budget:
    """The accountants of one fit and the shares of the draft and of MWEM (module docstring)."""

    def __init__(self, synth: Synthesizer, plans: Sequence[ColumnDraft]) -> None:
        self.synth = synth
        e = exact(synth.epsilon, "epsilon")
        d = None if synth.delta is None else exact(synth.delta, "delta")
        f = exact(synth.draft_fraction, "draft_fraction")
        learning = [p for p in plans if p.learns]
        self.texts = [p.name for p in learning if p.learns == "categories"]
        share = Fraction(len(self.texts), len(learning)) if learning else Fraction(0)
        self.zcdp: Accountant | None = None
        self.accountant = Accountant(epsilon=e) if d is None else Accountant(epsilon=e, delta=d)
        self.text_budget: tuple[float, float] | None = None
        if synth.privacy == "pure":
            self.draft_epsilon = float_within(f * e) if learning else 0.0
            return
        if d is None:  # refused by the Synthesizer already
            raise ValueError("privacy='zcdp' needs delta")
        eps_c = float_within(f * e * share) if self.texts else 0.0
        delta_c = float_within(d / 2) if self.texts else 0.0
        pool = (e - Fraction(eps_c), d - Fraction(delta_c))
        self.rho = approx_dp_to_zcdp_budget(pool[0], pool[1], conversion="tight")
        self.accountant.compose(ApproxDP(*pool), label=(
            f"zCDP share: quantile cuts of the draft and MWEM (rho={show(self.rho)}, "
            "converted to (epsilon, delta)-DP by the tight conversion of arXiv:2004.00010)"))
        self.zcdp = Accountant(rho=self.rho)
        self.text_budget = (eps_c, delta_c) if self.texts else None
        numbers = 1 - share if learning else Fraction(0)
        self.draft_rho = float_within(f * self.rho * numbers) if numbers else 0.0

    def draft(self, df: pd.DataFrame, plans: Sequence[ColumnDraft],
              rng: np.random.Generator) -> Schema:
        """The drafted schema, its charges made to the accountant they belong to."""
        synth = self.synth
        options: dict[str, Any] = {**synth._declared, **synth._draft_options, "rng": rng}
        if synth.privacy == "pure":
            eps = self.draft_epsilon or synth.epsilon  # nothing is charged when nothing learns
            delta = synth.delta if self.texts else None
            return draft_schema(df, epsilon=eps, delta=delta, accountant=self.accountant,
                                **options)
        specs: dict[str, ColumnSpec] = {}
        if self.text_budget is not None:
            eps_c, delta_c = self.text_budget
            drafted = draft_schema(df[self.texts], epsilon=eps_c, delta=delta_c,
                                   accountant=self.accountant, **_only(options, self.texts))
            specs.update(zip(drafted.names, drafted.columns))
        rest = [p.name for p in plans if p.name not in self.texts]
        if rest:
            rho = self.draft_rho or float(self.rho)
            drafted = draft_schema(df[rest], rho=rho, accountant=self.zcdp,
                                   **_only(options, rest))
            specs.update(zip(drafted.names, drafted.columns))
        return Schema(specs[str(c)] for c in df.columns)

    def mwem_budget(self) -> dict[str, Any]:
        """MWEM's keywords: the budget left, and the accountant to charge."""
        if self.zcdp is None:
            left = exact(self.synth.epsilon, "epsilon") - self.accountant.spent().approx()[0]  # type: ignore[index]
            return {"epsilon": float_within(left), "privacy": "pure",
                    "accountant": self.accountant}
        left = self.rho - self.zcdp.spent().zcdp_rho()  # type: ignore[operator]
        return {"rho": float_within(left), "privacy": "zcdp", "accountant": self.zcdp}


def _only(options: Mapping[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    """The draft options with the per-column declarations narrowed to ``columns``."""
    out = dict(options)
    for key in ("bounds", "categories", "missing"):
        given = options.get(key)
        if given:
            out[key] = {k: v for k, v in given.items() if k in columns}
    return out


def _restore(frame: pd.DataFrame, dtypes: Sequence[tuple[str, Any]]) -> pd.DataFrame:
    """The decoded columns in the table's dtypes, where the values allow it."""
    import pandas as pd
    types = pd.api.types
    out = {}
    for name, dtype in dtypes:
        column = frame[name]
        try:
            if types.is_datetime64_any_dtype(dtype):
                stamps = pd.to_datetime(column, unit="s", utc=True)
                tz = getattr(dtype, "tz", None)
                column = stamps.dt.tz_convert(tz) if tz is not None else stamps.dt.tz_localize(None)
                column = column.astype(dtype)
            elif types.is_integer_dtype(dtype) and column.isna().any():
                column = column.astype("Int64" if isinstance(dtype, np.dtype) else dtype)
            elif isinstance(dtype, pd.CategoricalDtype):
                column = column.astype("category")
            elif types.is_bool_dtype(dtype) and isinstance(dtype, np.dtype) and column.isna().any():
                column = column.astype("boolean")
            else:
                column = column.astype(dtype)
        except (TypeError, ValueError):
            pass  # the schema decodes to another type (a label that is not a number, say)
        out[name] = column
    return pd.DataFrame(out)
