"""The feedback report as a PNG (`adr-review report --png FILE`, the App's `GET /report.png`): the two
rates against the sunset lines, and the dismissals per perspective. matplotlib (the `report` extra,
Agg backend: no display) is imported only here, only when a chart is asked for."""

from __future__ import annotations

import io

from adr_review.core.report import ACCEPTANCE_LINE, REVISION_LINE, Report
from adr_review.core.report_view import mermaid_label

INSTALL_HINT = "matplotlib is not installed: pip install 'adr-review[report]'"


class ChartUnavailable(RuntimeError):
    """matplotlib is missing: the caller says so and still shows the Markdown."""


def report_png(report: Report, *, dpi: int = 110) -> bytes:
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:
        raise ChartUnavailable(INSTALL_HINT) from exc

    panels = 2 if report.perspectives else 1
    fig = Figure(figsize=(5.2 * panels, 3.6), dpi=dpi, layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False)[0]
    ax = axes[0]
    names = ["acceptance\n(adopted / shown)", "ADR revision\n(revised / with findings)"]
    rates = [report.acceptance_rate, report.revision_rate]
    lines = [ACCEPTANCE_LINE, REVISION_LINE]
    values = [0.0 if r is None else r * 100 for r in rates]
    colours = [
        "#bbbbbb" if r is None else ("#2e7d32" if r >= line else "#c62828")
        for r, line in zip(rates, lines, strict=True)
    ]
    bars = ax.bar(range(2), values, color=colours, width=0.55)
    for i, (bar, rate, line) in enumerate(zip(bars, rates, lines, strict=True)):
        ax.hlines(line * 100, i - 0.38, i + 0.38, colors="#222222", linestyles="--", linewidth=1.4)
        ax.annotate(
            f"line {line * 100:.0f} %",
            (i + 0.38, line * 100),
            xytext=(2, 2),
            textcoords="offset points",
            fontsize=8,
        )
        label = "no data" if rate is None else f"{rate * 100:.1f} %"
        ax.annotate(
            label,
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=9,
        )
    ax.set_xticks(range(2), names, fontsize=8)
    ax.set_ylim(0, 110)
    ax.set_ylabel("%")
    scope = report.repo or "all repositories"
    ax.set_title(
        f"Sunset rule (20 % adopted, 10 % revised): {report.verdict.text}\n{mermaid_label(scope, 60)}",
        fontsize=9,
    )
    if report.perspectives:
        px = axes[1]
        rows = list(reversed(report.perspectives))
        px.barh(
            [mermaid_label(c.perspective, 30) for c in rows],
            [c.dismissed for c in rows],
            color="#ef6c00",
            height=0.5,
        )
        for y, c in enumerate(rows):
            px.annotate(
                f"{c.dismissed} of {c.shown}",
                (c.dismissed, y),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
            )
        px.set_xlabel("findings dismissed")
        px.set_title("Most dismissed perspectives", fontsize=9)
        px.set_xlim(0, max(c.dismissed for c in rows) * 1.3 + 0.5)
        px.set_ylim(-0.75, len(rows) - 0.25)  # thin bars even for one perspective
        px.tick_params(axis="y", labelsize=8)
        px.xaxis.set_major_locator(MaxNLocator(integer=True))
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


__all__ = ["INSTALL_HINT", "ChartUnavailable", "has_matplotlib", "report_png"]
