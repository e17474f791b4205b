"""``fastmwem synth --evaluate``: the model's and the written records' errors against the real
data, beside independent columns. NOT private: these figures read the real data."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fastmwem.data.sources import MarginalSource
from fastmwem.evaluation import (
    RecordCounts,
    answer_error,
    relative_entropy,
    relative_entropy_of_records,
    workload_error,
)
from fastmwem.models.factored import FactoredState
from fastmwem.quality import independent_answers
from fastmwem.release.mwem import answers_from_marginals
from fastmwem.release.result import MWEMResult
from fastmwem.workloads.base import LinearWorkload

__all__ = ["evaluation_line", "evaluate", "baseline_error", "records_error"]


def evaluation_line(evaluation: Mapping[str, float]) -> str:
    """The ``--evaluate`` figures with their scales and the independent-columns baseline."""
    shown = dict(evaluation)
    baseline = shown.pop("baseline_mean_group_l1", None)
    parts = []
    for key, value in shown.items():
        text = f"{key}={value:.4g}"
        if key == "mean_group_l1" and baseline is not None:
            text += (f" (baseline_mean_group_l1={baseline:.4g} for independent columns with "
                     "the model's own 1-way marginals)")
        elif key == "relative_entropy":
            text += " nats (0 = the real distribution)"
        parts.append(text)
    return ("NOT PRIVATE evaluation against the real data (group L1 between normalised "
            "marginals: 0 = exact, 2 = disjoint): " + ", ".join(parts))


def evaluate(dataset: MarginalSource, result: MWEMResult, workload: LinearWorkload
              ) -> tuple[dict[str, float], np.ndarray]:
    """The model's errors against the real data, and the real answers (fractions)."""
    model, histogram = result.model, result.histogram
    if histogram is None:  # MWEM's result has a histogram (dense) or a model (factored)
        # A factored model: the real data as marginals, the synthetic answers by inference.
        true = answers_from_marginals(workload, dataset) / len(dataset)
        evaluation = answer_error(true, result.answer(workload) / result.total, workload)
        records = getattr(dataset, "records", None)
        # an engine's table is never read into memory record by record
        if records is not None and isinstance(model, FactoredState):
            evaluation["relative_entropy"] = relative_entropy_of_records(
                records, model.log_probability)
        return {**evaluation, **baseline_error(result, workload, true)}, true
    true_hist = dataset.histogram()
    evaluation = workload_error(true_hist, histogram, workload)
    evaluation["relative_entropy"] = relative_entropy(true_hist, histogram)
    true = workload.answer(true_hist) / max(float(true_hist.sum()), 1.0)
    return {**evaluation, **baseline_error(result, workload, true)}, true


def baseline_error(result: MWEMResult, workload: LinearWorkload, true: np.ndarray
                    ) -> dict[str, float]:
    """``mean_group_l1`` of independent columns with the model's own 1-way marginals.

    What the budget buys without correlations, at no extra budget (empty when the workload
    cannot be answered on independent columns).
    """
    from fastmwem.workloads import Marginals

    domain = workload.domain
    counts = result.answer(Marginals.all_kway(domain, 1))
    one_way = np.split(counts, np.cumsum(domain.shape)[:-1])
    answers = independent_answers(workload, one_way)
    if answers is None:
        return {}
    return {"baseline_mean_group_l1": answer_error(true, answers, workload)["mean_group_l1"]}


def records_error(true: np.ndarray, counted: RecordCounts | None, workload: LinearWorkload
                   ) -> dict[str, float]:
    """The written records' errors (the model's are the other keys), prefixed ``records_``."""
    if counted is None or counted.rows == 0:
        return {}
    error = answer_error(true, counted.answers(), workload)
    return {f"records_{k}": error[k] for k in ("mean_group_l1", "max_group_l1")}
