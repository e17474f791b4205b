"""A :class:`QualityReport` as one self-contained HTML page: inline CSS, PNG data URIs, no JS.

The charts are drawn with matplotlib's object API on the Agg canvas (no pyplot, no global
state, no display), imported when a page is rendered.
"""

from __future__ import annotations

import base64
import contextlib
import html
import importlib.util
import io
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from fastmwem._files import replacement_mode
from fastmwem.quality._scores import ASSOCIATION, BANNER, SCALE, MarginalScore

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


__all__ = ["render", "require_matplotlib", "write_atomically"]

_REAL, _SYNTHETIC, _BASELINE = "#4c72b0", "#dd8452", "#8c8c8c"
# Axes with more values than this are drawn without a label per tick.
_MAX_TICKS = 30
_MAX_LABEL = 22

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;
color:#222;background:#fff;line-height:1.45}
main{max-width:1100px;margin:0 auto;padding:0 1.2em 2em}
.banner{background:#b00020;color:#fff;font-weight:700;font-size:1.15em;text-align:center;
padding:.7em 1em;letter-spacing:.02em}
h1{font-size:1.6em;margin:.8em 0 .3em}h2{font-size:1.25em;margin:1.6em 0 .4em;
border-bottom:1px solid #ddd;padding-bottom:.2em}
.verdict{font-size:1.1em;background:#f3f6fb;border-left:4px solid #4c72b0;padding:.6em .9em}
.scale{color:#555}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.3em .7em;text-align:right}
th:first-child,td:first-child{text-align:left}
th{background:#f5f5f5}
.grid{display:flex;flex-wrap:wrap;gap:.8em}
figure{margin:0}figure img{max-width:100%;height:auto;border:1px solid #eee}
footer{color:#777;font-size:.85em;margin-top:2em}
"""



class ReportView(Protocol):
    """What a page shows of a :class:`~fastmwem.quality.QualityReport` (its fields, read only)."""

    @property
    def attributes(self) -> tuple[str, ...]: ...
    @property
    def labels(self) -> tuple[tuple[str, ...], ...]: ...
    @property
    def rows(self) -> tuple[int, int]: ...
    @property
    def baseline(self) -> str: ...
    @property
    def real_one_way(self) -> tuple[np.ndarray, ...]: ...
    @property
    def synthetic_one_way(self) -> tuple[np.ndarray, ...]: ...
    @property
    def scores(self) -> Mapping[int, tuple[MarginalScore, ...]]: ...
    @property
    def totals(self) -> Mapping[int, int]: ...
    @property
    def worst(self) -> tuple[MarginalScore, ...]: ...
    @property
    def worst_tables(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]: ...
    @property
    def association_real(self) -> np.ndarray: ...
    @property
    def association_synthetic(self) -> np.ndarray: ...
    @property
    def notes(self) -> tuple[str, ...]: ...
    @property
    def verdict(self) -> str: ...
    def mean_error(self, k: int) -> float | None: ...
    def baseline_error(self, k: int) -> float | None: ...

def require_matplotlib() -> None:
    """Raise ImportError, saying what to install, when matplotlib is missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ImportError("the HTML quality report draws its charts with matplotlib, which is "
                          "not installed: pip install 'fastmwem[report]'")


def write_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``."""
    target = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=".fastmwem-", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(target)))
    try:
        os.fchmod(fd, replacement_mode(target))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def render(report: ReportView) -> str:
    """The report as an HTML page (a string)."""
    require_matplotlib()
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Synthetic data quality report (NOT PRIVATE)</title>",
        f"<style>{_CSS}</style></head><body>",
        f'<div class="banner" id="not-private" role="alert">{e(BANNER)}</div><main>',
        "<h1>Synthetic data quality report</h1>",
        f'<p class="verdict" id="verdict">{e(report.verdict)}</p>',
        f'<p class="scale">Distances are the {e(SCALE)}. Baseline: {e(report.baseline)}. '
        f"Records: {report.rows[0]:,} real, {report.rows[1]:,} synthetic.</p>",
        "<h2>Marginal error</h2>", _errors_table(report),
        _img(_errors_chart(report), "Mean TVD of the k-way marginals, synthetic and baseline"),
    ]
    if report.worst:
        parts += [f"<h2>The {len(report.worst)} worst 2-way marginals</h2>",
                  _worst_table(report.worst), '<div class="grid">']
        for score, (real, synthetic) in zip(report.worst, report.worst_tables):
            i, j = (report.attributes.index(a) for a in score.attributes)
            chart = _pair_chart(score, real, synthetic, report.labels[i], report.labels[j])
            parts.append(_img(chart, f"{score.attributes[0]} x {score.attributes[1]}: real and "
                                     "synthetic"))
        parts.append("</div>")
    if 2 in report.scores:
        parts += ["<h2>Association between columns</h2>",
                  f'<p class="scale">{e(ASSOCIATION)}; grey: not scored or not measurable '
                  "(a column with a single value).</p>",
                  _img(_association_chart(report), "Cramer's V: real and synthetic")]
    parts += ["<h2>Columns</h2>", '<div class="grid">']
    for i, name in enumerate(report.attributes):
        chart = _column_chart(name, report.labels[i], report.real_one_way[i],
                              report.synthetic_one_way[i], report.scores[1][i].tvd)
        parts.append(_img(chart, f"{name}: real and synthetic shares"))
    parts.append("</div>")
    if report.notes:
        parts += ["<h2>Notes</h2><ul>", *(f"<li>{e(n)}</li>" for n in report.notes), "</ul>"]
    parts += [f"<footer>{e(BANNER)}. Made by fastmwem.quality_report.</footer>",
              "</main></body></html>"]
    return "\n".join(parts) + "\n"


def _img(data_uri: str, alt: str) -> str:
    return f'<figure><img src="{data_uri}" alt="{html.escape(alt)}"></figure>'


def _errors_table(report: ReportView) -> str:
    rows = ["<table><tr><th>marginals</th><th>scored</th><th>synthetic mean TVD</th>"
            "<th>baseline mean TVD</th><th>synthetic worst TVD</th></tr>"]
    for k in sorted(report.scores):
        scored = report.scores[k]
        rows.append(f"<tr><td>{k}-way</td><td>{len(scored):,} of {report.totals[k]:,}</td>"
                    f"<td>{report.mean_error(k):.4f}</td><td>{report.baseline_error(k):.4f}</td>"
                    f"<td>{max(s.tvd for s in scored):.4f}</td></tr>")
    return "".join(rows) + "</table>"


def _worst_table(worst: Sequence[MarginalScore]) -> str:
    rows = ["<table><tr><th>columns</th><th>synthetic TVD</th><th>baseline TVD</th></tr>"]
    rows += [f"<tr><td>{html.escape(' x '.join(s.attributes))}</td><td>{s.tvd:.4f}</td>"
             f"<td>{s.baseline_tvd:.4f}</td></tr>" for s in worst]
    return "".join(rows) + "</table>"


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _text(value: str) -> str:
    """Text matplotlib draws as it is: no mathtext, and not too long."""
    short = value if len(value) <= _MAX_LABEL else value[:_MAX_LABEL - 1] + "\u2026"
    return short.replace("$", r"\$")


def _ticks(ax: Axes, axis: str, labels: Sequence[str], n: int) -> None:
    step = max(1, -(-n // _MAX_TICKS))
    where = np.arange(0, n, step)
    names = [_text(labels[int(i)]) for i in where] if labels else [str(int(i)) for i in where]
    rotate = 45 if axis == "x" and (len(where) > 6 or any(len(s) > 4 for s in names)) else 0
    if axis == "x":
        ax.set_xticks(where, names, rotation=rotate, ha="right" if rotate else "center",
                      fontsize=8)
    else:
        ax.set_yticks(where, names, fontsize=8)


def _errors_chart(report: ReportView) -> str:
    ks = sorted(report.scores)
    fig = _figure(5.0, 3.0)
    ax = fig.subplots()
    x = np.arange(len(ks))
    ax.bar(x - 0.2, [report.mean_error(k) or 0.0 for k in ks], 0.4, label="synthetic",
           color=_SYNTHETIC)
    ax.bar(x + 0.2, [report.baseline_error(k) or 0.0 for k in ks], 0.4, label="baseline",
           color=_BASELINE)
    ax.set_xticks(x, [f"{k}-way" for k in ks])
    ax.set_ylabel("mean TVD (0 = identical)")
    ax.legend(frameon=False)
    return _png(fig)


def _column_chart(name: str, labels: Sequence[str], real: np.ndarray, synthetic: np.ndarray,
                  tvd: float) -> str:
    n = len(real)
    fig = _figure(min(9.0, 3.2 + 0.18 * n), 3.2)
    ax = fig.subplots()
    x = np.arange(n)
    ax.bar(x - 0.2, real, 0.4, label="real", color=_REAL)
    ax.bar(x + 0.2, synthetic, 0.4, label="synthetic", color=_SYNTHETIC)
    _ticks(ax, "x", labels, n)
    ax.set_ylabel("share of records")
    ax.set_title(f"{_text(name)} (TVD {tvd:.3f})", fontsize=10)
    ax.legend(frameon=False, fontsize=8)
    return _png(fig)


def _pair_chart(score: MarginalScore, real: np.ndarray, synthetic: np.ndarray,
                rows: Sequence[str], cols: Sequence[str]) -> str:
    fig = _figure(5.3, 3.0)
    axes = fig.subplots(1, 2)
    top = float(max(real.max(), synthetic.max()))
    images = []
    for ax, table, title in zip(axes, (real, synthetic), ("real", "synthetic")):
        images.append(ax.imshow(table, cmap="Blues", vmin=0.0, vmax=top, aspect="auto",
                                interpolation="nearest"))
        ax.set_title(title, fontsize=9)
        _ticks(ax, "y", rows, table.shape[0])
        _ticks(ax, "x", cols, table.shape[1])
        ax.set_xlabel(_text(score.attributes[1]), fontsize=8)
    axes[0].set_ylabel(_text(score.attributes[0]), fontsize=8)
    fig.colorbar(images[0], ax=list(axes), shrink=0.8, label="share of records")
    fig.suptitle(f"{_text(score.attributes[0])} x {_text(score.attributes[1])}: "
                 f"TVD {score.tvd:.3f} (baseline {score.baseline_tvd:.3f})", fontsize=10)
    return _png(fig)


def _association_chart(report: ReportView) -> str:
    import matplotlib

    d = len(report.attributes)
    side = min(6.0, 2.5 + 0.18 * d)
    fig = _figure(2 * side + 1.0, side)
    axes = fig.subplots(1, 2)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")
    names = [_text(a) for a in report.attributes]
    images = []
    for ax, matrix, title in zip(axes, (report.association_real,
                                        report.association_synthetic), ("real", "synthetic")):
        images.append(ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, vmin=0.0, vmax=1.0,
                                interpolation="nearest"))
        ax.set_title(title, fontsize=10)
        _ticks(ax, "x", names, d)
        _ticks(ax, "y", names, d)
    fig.colorbar(images[0], ax=list(axes), shrink=0.8, label="Cramer's V")
    return _png(fig)
