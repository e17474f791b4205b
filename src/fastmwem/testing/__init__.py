"""Statistical checks with a stated false-positive rate, for tests and audits of mechanisms."""

from fastmwem.testing.stats import (
    chi_square_pvalue,
    clopper_pearson_epsilon_lower_bound,
    empirical_counts,
)

__all__ = ["chi_square_pvalue", "clopper_pearson_epsilon_lower_bound", "empirical_counts"]
