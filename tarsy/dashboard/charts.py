"""Server-rendered SVG charts for the quality page: no script and no third-party code reach the browser.

Every label is escaped here; colours come from CSS classes (quality.css), so the charts follow the page's palette.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Sized for half a page column, so that 12px text in the viewBox stays about 12px on screen.
ROW_H, BAR_H, LABEL_W, COUNT_W = 24, 16, 140, 36
HIST_W, HIST_H, HIST_PAD = 460, 180, 28


@dataclass(frozen=True)
class Segment:
    label: str
    value: int
    css: str


def _text(x: float, y: float, text: str, css: str = "", anchor: str = "start") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" class="{css}" text-anchor="{anchor}">{escape(text)}</text>')


def stacked_bars(rows: list[tuple[str, list[Segment]]], *, title: str, width: int = 440) -> SafeString:
    """One horizontal bar per row, split into segments by share of the row's total (a count at the end)."""
    if not rows:
        return mark_safe('<p class="muted empty">No sessions in this period.</p>')
    bar_w = width - LABEL_W - COUNT_W
    height = ROW_H * len(rows) + 6
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="100%" '
             f'preserveAspectRatio="xMinYMin meet" aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for i, (label, segments) in enumerate(rows):
        y = i * ROW_H + 4
        total = sum(s.value for s in segments)
        shown = label if len(label) <= 20 else label[:19] + "…"
        parts.append(_text(0, y + BAR_H - 3, shown, "chart-label"))
        parts.append(f'<rect x="{LABEL_W}" y="{y}" width="{bar_w}" height="{BAR_H}" class="seg-empty"/>')
        x = float(LABEL_W)
        for segment in segments:
            if not segment.value:
                continue
            w = bar_w * segment.value / total
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{BAR_H}" class="{segment.css}">'
                         f'<title>{escape(label)}: {escape(segment.label)} {segment.value}</title></rect>')
            x += w
        parts.append(_text(width - 4, y + BAR_H - 3, str(total), "chart-count", "end"))
    parts.append("</svg>")
    return mark_safe("".join(parts))


def histogram(bins: list[int], *, title: str, band_classes: list[str]) -> SafeString:
    """Vertical bars of counts over equal score ranges (0–9, 10–19, …), coloured by the band each range is in."""
    peak = max(bins, default=0) or 1
    n = len(bins)
    plot_w, plot_h = HIST_W - HIST_PAD, HIST_H - 2 * HIST_PAD
    step = plot_w / n
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {HIST_W} {HIST_H}" width="100%" '
             f'preserveAspectRatio="xMinYMin meet" aria-label="{escape(title)}"><title>{escape(title)}</title>',
             f'<line x1="{HIST_PAD}" y1="{HIST_PAD + plot_h}" x2="{HIST_W}" y2="{HIST_PAD + plot_h}" class="axis"/>']
    for i, count in enumerate(bins):
        h = plot_h * count / peak
        x = HIST_PAD + i * step + 2
        y = HIST_PAD + plot_h - h
        low, high = i * (100 // n), (i + 1) * (100 // n) - 1 if i < n - 1 else 100
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{step - 4:.1f}" height="{h:.1f}" class="{band_classes[i]}">'
                     f'<title>score {low}–{high}: {count}</title></rect>')
        if count:
            parts.append(_text(x + (step - 4) / 2, y - 4, str(count), "chart-count", "middle"))
        parts.append(_text(x + (step - 4) / 2, HIST_PAD + plot_h + 16, f"{low}", "chart-label", "middle"))
    parts.append("</svg>")
    return mark_safe("".join(parts))


def line(points: list[tuple[str, float | None]], *, title: str, width: int = 460, height: int = 180) -> SafeString:
    """Mean score per day: a line over the days that have one (0–100 axis), labelled at its ends."""
    known = [(i, v) for i, (_, v) in enumerate(points) if v is not None]
    if not known:
        return mark_safe('<p class="muted empty">No scored sessions in this period.</p>')
    pad, plot_h = 30, height - 2 * 30
    plot_w = width - 2 * pad
    step = plot_w / max(len(points) - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return pad + i * step, pad + plot_h - plot_h * v / 100

    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="100%" '
             f'preserveAspectRatio="xMinYMin meet" aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for mark in (0, 35, 60, 100):
        _, y = xy(0, mark)
        parts.append(f'<line x1="{pad}" y1="{y:.1f}" x2="{width - pad}" y2="{y:.1f}" class="grid"/>')
        parts.append(_text(pad - 4, y + 4, str(mark), "chart-label", "end"))
    path = " ".join(f"{'M' if n == 0 else 'L'}{xy(i, v)[0]:.1f},{xy(i, v)[1]:.1f}" for n, (i, v) in enumerate(known))
    parts.append(f'<path d="{path}" class="trend"/>')
    for i, v in known:
        x, y = xy(i, v)
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" class="trend-dot">'
                     f'<title>{escape(points[i][0])}: {v}</title></circle>')
    parts.append(_text(pad, height - 6, points[0][0], "chart-label"))
    parts.append(_text(width - pad, height - 6, points[-1][0], "chart-label", "end"))
    parts.append("</svg>")
    return mark_safe("".join(parts))
