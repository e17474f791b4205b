"""``quality_report``: how close synthetic data is to the real data, beside a baseline.

NOT differentially private: every figure is computed from the real data.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fastmwem.data.dataset import Dataset
from fastmwem.data.domain import Domain
from fastmwem.quality._scores import (
    ASSOCIATION,
    BANNER,
    DEFAULT_MAX_MARGINALS,
    INDEPENDENT,
    SCALE,
    MarginalScore,
    cramers_v,
    independent_table,
    marginal_plan,
    total_variation,
)

if TYPE_CHECKING:
    import pandas as pd

    from fastmwem.data.schema import Schema
    from fastmwem.data.sources import MarginalSource

__all__ = ["MarginalScore", "QualityReport", "quality_report"]

# Below this mean 2-way TVD of the baseline, the real columns are called close to independent:
# a share of so little structure says nothing.
_NEAR_INDEPENDENT = 0.01
# Columns with more values than this get no text labels (their charts show positions).
_MAX_LABELS = 1000


@dataclasses.dataclass(frozen=True, eq=False)
class QualityReport:
    """Real against synthetic data: marginals, associations and a baseline. NOT PRIVATE.

    Built by :func:`quality_report`. Distances are total variation distances (TVD, half the L1
    distance between normalised marginals: 0 = identical, 1 = disjoint).

    Attributes:
        attributes: the columns, in the domain's order.
        labels: per column, the text of its values (bins, categories or codes); empty for a
            column with more than 1000 values.
        rows: the number of records of the real and the synthetic data.
        baseline: what the baseline is, in words.
        real_one_way, synthetic_one_way: per column, the normalised 1-way marginal.
        scores: by marginal size ``k``, the scored ``k``-way marginals (plan order); a size
            with none scored is absent.
        totals: by ``k``, how many ``k``-way marginals the domain has.
        worst: the 2-way marginals furthest from the real ones (largest TVD first).
        worst_tables: for each of ``worst``, the normalised real and synthetic tables.
        association_real, association_synthetic: Cramer's V of each pair of columns (NaN where
            not scored or not measurable; 1 on the diagonal).
        notes: what the report leaves out, and why.
    """

    attributes: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    rows: tuple[int, int]
    baseline: str
    real_one_way: tuple[np.ndarray, ...]
    synthetic_one_way: tuple[np.ndarray, ...]
    scores: Mapping[int, tuple[MarginalScore, ...]]
    totals: Mapping[int, int]
    worst: tuple[MarginalScore, ...]
    worst_tables: tuple[tuple[np.ndarray, np.ndarray], ...]
    association_real: np.ndarray
    association_synthetic: np.ndarray
    notes: tuple[str, ...]

    def mean_error(self, k: int) -> float | None:
        """Mean TVD of the synthetic data's scored ``k``-way marginals (None if none scored)."""
        scored = self.scores.get(k, ())
        return float(np.mean([s.tvd for s in scored])) if scored else None

    def baseline_error(self, k: int) -> float | None:
        """Mean TVD of the baseline's scored ``k``-way marginals (None if none scored)."""
        scored = self.scores.get(k, ())
        return float(np.mean([s.baseline_tvd for s in scored])) if scored else None

    @property
    def kept_share(self) -> float | None:
        """``1 - synthetic / baseline`` mean 2-way TVD: the share of the pairwise structure
        the baseline misses that the synthetic data keeps (negative: worse than the baseline).

        None without pairs, or when the baseline is already within 0.01 of the real pairs.
        """
        synthetic, baseline = self.mean_error(2), self.baseline_error(2)
        if synthetic is None or baseline is None or baseline < _NEAR_INDEPENDENT:
            return None
        return 1.0 - synthetic / baseline

    @property
    def verdict(self) -> str:
        """One sentence: how much of the pairwise structure the synthetic data keeps."""
        synthetic, baseline = self.mean_error(2), self.baseline_error(2)
        if synthetic is None or baseline is None:
            what = "One column" if len(self.attributes) == 1 else "No pair of columns scored"
            return (f"{what}, so no pairwise structure to compare; the mean 1-way TVD is "
                    f"{self.mean_error(1):.3f} (0 = identical, 1 = disjoint).")
        figures = (f"mean 2-way TVD {synthetic:.3f} against {baseline:.3f} for the baseline "
                   "(0 = identical, 1 = disjoint)")
        share = self.kept_share
        if share is None:
            return (f"The baseline is already close to the real pairs, so there is little "
                    f"pairwise structure to keep: {figures}.")
        if share < 0:
            return (f"The synthetic data is further from the real pairs than the baseline and "
                    f"keeps none of the pairwise structure it misses: {figures}.")
        return (f"The synthetic data keeps {share:.0%} of the pairwise structure the baseline "
                f"misses: {figures}.")

    def summary(self) -> str:
        """A short text: the scale, the mean errors beside the baseline's, the verdict."""
        lines = [f"Quality report ({BANNER})",
                 f"Distances: {SCALE}.",
                 f"Baseline: {self.baseline}.",
                 f"Records: {self.rows[0]:,} real, {self.rows[1]:,} synthetic.",
                 f"{'marginals':<22}{'synthetic':>10}{'baseline':>10}"]
        for k in sorted(self.scores):
            synthetic, baseline = self.mean_error(k), self.baseline_error(k)
            if synthetic is None or baseline is None:
                continue
            what = f"{k}-way ({len(self.scores[k]):,} of {self.totals[k]:,})"
            lines.append(f"{what:<22}{synthetic:>10.4f}{baseline:>10.4f}")
        if self.worst:
            top = self.worst[0]
            lines.append(f"Worst pair: {' x '.join(top.attributes)}, TVD {top.tvd:.4f} "
                         f"(baseline {top.baseline_tvd:.4f}).")
        lines.append(f"Verdict: {self.verdict}")
        lines.extend(f"Note: {note}." for note in self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The report's numbers, JSON-ready (NaN as None)."""
        return {
            "private": False,
            "not_private_because": "computed from the real data",
            "metric": SCALE,
            "association_measure": ASSOCIATION,
            "rows": {"real": self.rows[0], "synthetic": self.rows[1]},
            "baseline": self.baseline,
            "marginals": {str(k): {
                "scored": len(self.scores[k]), "of": self.totals[k],
                "mean_tvd": self.mean_error(k), "baseline_mean_tvd": self.baseline_error(k),
                "max_tvd": max((s.tvd for s in self.scores[k]), default=None),
            } for k in sorted(self.scores)},
            "kept_share": self.kept_share,
            "verdict": self.verdict,
            "columns": [{"name": a, "labels": list(lab), "real": _floats(r),
                         "synthetic": _floats(s), "tvd": m.tvd}
                        for a, lab, r, s, m in zip(self.attributes, self.labels,
                                                   self.real_one_way, self.synthetic_one_way,
                                                   self.scores[1])],
            "worst_pairs": [{"attributes": list(s.attributes), "tvd": s.tvd,
                             "baseline_tvd": s.baseline_tvd} for s in self.worst],
            "association": {"columns": list(self.attributes),
                            "real": _matrix(self.association_real),
                            "synthetic": _matrix(self.association_synthetic)},
            "notes": list(self.notes),
        }

    def html(self) -> str:
        """The report as one self-contained HTML page (needs matplotlib for its images)."""
        from fastmwem.quality._html import render

        return render(self)

    def to_html(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`html` to ``path`` through a temporary file renamed into place.

        An existing file is replaced whole or, if anything fails, left as it was.
        """
        from fastmwem.quality._html import write_atomically

        write_atomically(path, self.html())


def _floats(values: np.ndarray) -> list[float]:
    return [float(v) for v in np.asarray(values).reshape(-1)]


def _matrix(m: np.ndarray) -> list[list[float | None]]:
    return [[None if math.isnan(v) else float(v) for v in row] for row in m.tolist()]


def quality_report(real: pd.DataFrame | MarginalSource, synthetic: pd.DataFrame | MarginalSource,
                   *, schema: Schema | None = None,
                   baseline: pd.DataFrame | MarginalSource | None = None,
                   max_marginals: int = DEFAULT_MAX_MARGINALS, worst: int = 10) -> QualityReport:
    """Compare synthetic data with the real data, beside a baseline. NOT PRIVATE.

    The report reads the real data, so it is not differentially private: keep it with the
    real data, never publish it with a release.

    Args:
        real, synthetic: DataFrames of raw values (binned with ``schema``), or
            :class:`~fastmwem.data.Dataset` s of codes (any ``MarginalSource``) over one domain.
        schema: bins raw DataFrames; with codes it only names their values in the charts.
        baseline: data to compare with (same forms as ``synthetic``). Default: independent
            columns, the product of the synthetic data's own 1-way marginals, which costs no
            budget beyond what made the synthetic data.
        max_marginals: the most 2-way (and 3-way) marginals scored; beyond it an even spread
            of the pairs (3-way marginals are scored only when all fit, and are small).
        worst: how many of the worst 2-way marginals to show.

    Raises:
        TypeError: an input that is neither a DataFrame nor a dataset of codes.
        ValueError: a DataFrame without ``schema`` or that does not fit it, inputs over
            different domains, or no records.
    """
    if isinstance(worst, bool) or not isinstance(worst, (int, np.integer)) or worst < 0:
        raise ValueError(f"worst must be a whole number >= 0, got {worst!r}")
    sources = {"real": _source(real, schema, "real"),
               "synthetic": _source(synthetic, schema, "synthetic")}
    if baseline is not None:
        sources["baseline"] = _source(baseline, schema, "baseline")
    domain = sources["real"].domain
    for what, source in sources.items():
        if source.domain != domain:
            raise ValueError(f"{what} has the domain {source.domain}, the real data "
                             f"{domain}: they must be the same")
        if len(source) == 0:
            raise ValueError(f"{what} has no records")
    if schema is not None and schema.domain != domain:
        raise ValueError(f"the schema's domain {schema.domain} differs from the data's {domain}")
    plan, notes = marginal_plan(domain, max_marginals)
    sets = [s for k in sorted(plan) for s in plan[k]]
    tables = {what: dict(zip(sets, source.marginals(sets))) for what, source in sources.items()}
    real_t, synthetic_t = tables["real"], tables["synthetic"]
    if baseline is None:
        one_way = {a: synthetic_t[(a,)] for a in domain.attributes}
        base_t = {s: independent_table([one_way[a] for a in s]) for s in sets}
    else:
        base_t = tables["baseline"]
    scores = {k: tuple(MarginalScore(s, total_variation(real_t[s], synthetic_t[s]),
                                     total_variation(real_t[s], base_t[s])) for s in plan[k])
              for k in sorted(plan) if plan[k]}
    ranked = sorted(scores.get(2, ()), key=lambda s: -s.tvd)[:int(worst)]
    return QualityReport(
        attributes=domain.attributes, labels=_labels(domain, schema),
        rows=(len(sources["real"]), len(sources["synthetic"])),
        baseline=INDEPENDENT if baseline is None else "the baseline data given",
        real_one_way=tuple(_norm(real_t[(a,)]) for a in domain.attributes),
        synthetic_one_way=tuple(_norm(synthetic_t[(a,)]) for a in domain.attributes),
        scores=scores, totals={k: math.comb(len(domain), k) for k in scores},
        worst=tuple(ranked),
        worst_tables=tuple((_norm(real_t[s.attributes]), _norm(synthetic_t[s.attributes]))
                           for s in ranked),
        association_real=_associations(domain, plan[2], real_t),
        association_synthetic=_associations(domain, plan[2], synthetic_t),
        notes=tuple(notes))


def _source(data: object, schema: Schema | None, what: str) -> MarginalSource:
    """``data`` as counts over its domain: a source as it is, a raw DataFrame encoded."""
    from fastmwem.data.sources import MarginalSource

    if isinstance(data, (Dataset, MarginalSource)):  # MarginalCounts is one too
        return data
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        if schema is None:
            raise ValueError(f"{what} is a DataFrame of raw values: give schema= to bin it")
        try:
            return schema.encode(data, extra_columns="ignore")
        except ValueError as exc:  # the schema's message names columns and rows, no values
            raise ValueError(f"{what}: {exc}") from None
    raise TypeError(f"{what} must be a pandas DataFrame (with schema=) or a Dataset of codes, "
                    f"got {type(data).__name__}")


def _norm(table: np.ndarray) -> np.ndarray:
    t = np.asarray(table, dtype=np.float64)
    return t / t.sum()


def _associations(domain: Domain, pairs: Sequence[tuple[str, ...]],
                  tables: Mapping[tuple[str, ...], np.ndarray]) -> np.ndarray:
    d = len(domain)
    out = np.full((d, d), np.nan)
    np.fill_diagonal(out, 1.0)
    for pair in pairs:
        i, j = domain.axes(pair)
        out[i, j] = out[j, i] = cramers_v(tables[pair])
    return out


def _labels(domain: Domain, schema: Schema | None) -> tuple[tuple[str, ...], ...]:
    if schema is None:
        return tuple(tuple(str(c) for c in range(n)) if n <= _MAX_LABELS else ()
                     for n in domain.shape)
    return tuple(_spec_labels(spec) if spec.size <= _MAX_LABELS else ()
                 for spec in schema.columns)


def _spec_labels(spec: object) -> tuple[str, ...]:
    """One label per code of ``spec``: its values or bins, then "missing" for its gap code."""
    from fastmwem.data.schema import Categorical, Integer, Numeric

    if isinstance(spec, Categorical):
        values = tuple(str(label) for label in spec.labels)
    elif isinstance(spec, (Numeric, Integer)) and spec.edges is not None:
        e, last = spec.edges, ("]" if isinstance(spec, Numeric) else ")")
        values = tuple(f"[{a:g}, {b:g}{last if i == len(e) - 2 else ')'}"
                       for i, (a, b) in enumerate(zip(e, e[1:])))
    elif isinstance(spec, Integer):
        values = tuple(str(v) for v in range(spec.lower, spec.upper + 1))
    else:
        raise TypeError(f"unknown column type {type(spec).__name__}")
    return values + ("missing",) if getattr(spec, "missing", False) else values
