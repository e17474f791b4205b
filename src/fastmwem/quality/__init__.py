"""Quality reports: how close synthetic data is to the real data. NOT differentially private.

:func:`quality_report` compares the two on their marginals (per-column histograms, the worst
2-way marginals by total variation distance, Cramer's V between columns) beside a baseline
(by default independent columns with the synthetic data's own 1-way marginals), and gives a
:class:`QualityReport` with numbers (``to_dict``), a short text (``summary``) and one
self-contained HTML page (``to_html``, charts drawn with matplotlib).

Every figure here is computed from the real data: keep the report with the real data.
"""

from fastmwem.quality._html import require_matplotlib
from fastmwem.quality._report import MarginalScore, QualityReport, quality_report
from fastmwem.quality._scores import (
    DEFAULT_MAX_MARGINALS,
    MarginalCounts,
    cramers_v,
    independent_answers,
    independent_table,
    marginal_plan,
    total_variation,
)

__all__ = ["DEFAULT_MAX_MARGINALS", "MarginalCounts", "MarginalScore", "QualityReport",
           "cramers_v", "independent_answers", "independent_table", "marginal_plan",
           "quality_report", "require_matplotlib", "total_variation"]
