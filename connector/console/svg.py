"""Small inline SVG charts, drawn on the server: no script and no chart library in the page.

Every text placed in the SVG goes through ``markupsafe.escape``; numbers are formatted here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

from connector.console.render import duration, number

WIDTH, HEIGHT, PAD = 360, 96, 16


@dataclass(frozen=True, slots=True)
class RunPoint:
    """One run of a stream as the chart shows it: records read (bar) and lag before it (line)."""

    run_id: int
    started_at: datetime
    status: str
    records_read: int
    lag_s: float | None


def runs_chart(label: str, points: Sequence[RunPoint]) -> Markup:
    """Bars of records read per run (failed runs marked) and a line of the lag before each run,
    oldest run on the left; each bar's tooltip names the run."""
    if not points:
        return Markup("")
    n = len(points)
    slot = (WIDTH - 2 * PAD) / n
    plot_h = HEIGHT - 2 * PAD
    most = max(p.records_read for p in points) or 1
    lags = [p.lag_s for p in points if p.lag_s is not None]
    longest = max(lags) if lags else 0.0
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
        f'<line class="axis" x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}"/>',
    ]
    line: list[str] = []
    for i, p in enumerate(points):
        x = PAD + i * slot
        h = plot_h * p.records_read / most
        kind = "bar failed" if p.status not in ("ok", "running") else "bar"
        tip = (
            f"run {p.run_id}, {p.started_at:%Y-%m-%d %H:%M} UTC, {p.status}: "
            f"{number(p.records_read)} read, lag before it {duration(p.lag_s)}"
        )
        parts.append(
            f'<rect class="{kind}" x="{x + slot * 0.15:.1f}" y="{HEIGHT - PAD - max(h, 1):.1f}" '
            f'width="{slot * 0.7:.1f}" height="{max(h, 1):.1f}"><title>{escape(tip)}</title></rect>'
        )
        if p.lag_s is not None and longest > 0:
            y = HEIGHT - PAD - plot_h * p.lag_s / longest
            line.append(f"{x + slot / 2:.1f},{y:.1f}")
    if len(line) > 1:
        parts.append(f'<polyline class="lag" points="{" ".join(line)}"/>')
    for point in line:
        cx, cy = point.split(",")
        parts.append(f'<circle class="lag-dot" cx="{cx}" cy="{cy}" r="2"/>')
    parts.append(
        f'<text class="legend" x="{PAD}" y="11">records read (max {escape(number(most))})</text>'
        f'<text class="legend lag-text" x="{WIDTH - PAD}" y="11" text-anchor="end">'
        f"lag (max {escape(duration(longest))})</text>"
    )
    parts.append("</svg>")
    return Markup("".join(parts))
