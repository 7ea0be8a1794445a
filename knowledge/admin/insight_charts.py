"""The usage insight's charts as geometry for inline SVG (templates/admin/knowledge/_insight_chart.html).

Drawn on the server, with no script: the page's Content-Security-Policy allows neither inline
script nor inline style, and SVG's geometry attributes (x, y, width, points) are neither. Colours
come from classes in static/css/admin_site.css that read the admin's CSS variables, so a chart
follows the light or dark theme. Each chart also carries its figures as a table (its text
alternative) and a one-sentence summary for its aria label.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field

WIDTH, HEIGHT = 720, 240
LEFT, RIGHT, TOP, BOTTOM = 76, 12, 12, 40  # room for "1,000 ms" left of the plot
MAX_X_LABELS = 10
RANK_ROW, RANK_LABEL = 26, 220


@dataclass(frozen=True)
class Series:
    name: str
    css: str  # series-1, series-2: the stylesheet's colours
    values: list[float | None]


@dataclass(frozen=True)
class Mark:
    x: float
    y: float
    width: float
    height: float
    css: str
    label: str  # the bar's tooltip (an SVG <title>)


@dataclass(frozen=True)
class Polyline:
    css: str
    points: str
    label: str


@dataclass(frozen=True)
class Tick:
    x: float
    y: float
    text: str
    anchor: str = "middle"


@dataclass
class Chart:
    key: str  # the CSV's name and the element ids
    title: str
    summary: str
    height: int = HEIGHT
    width: int = WIDTH
    marks: list[Mark] = field(default_factory=list)
    lines: list[Polyline] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    grid: list[float] = field(default_factory=list)  # y of the horizontal grid lines
    grid_left: int = LEFT
    legend: list[Series] = field(default_factory=list)
    table_head: list[str] = field(default_factory=list)
    table_rows: list[list[str]] = field(default_factory=list)
    empty: bool = False


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above ``value`` (1 for nothing)."""
    if value <= 0:
        return 1
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    text = f"{value:,.0f}" if float(value).is_integer() or value >= 100 else f"{value:,.1f}"
    return text + unit


def time_chart(
    *, key: str, title: str, days: list[datetime.date], series: list[Series], kind: str, unit: str = ""
) -> Chart:
    """A chart over days: ``kind`` "bars" (one series), "stacked" bars or "lines"."""
    stacked = kind != "lines"
    heights = [sum(s.values[n] or 0 for s in series) for n in range(len(days))] if stacked else []
    peak = max(heights or [v or 0 for s in series for v in s.values] or [0])
    top = nice_ceiling(peak)
    chart = Chart(key=key, title=title, summary="", legend=series if len(series) > 1 else [])
    _axes(chart, days, top, unit)
    if stacked:
        chart.marks = _bars(days, series, top, unit)
    else:
        chart.lines = [_line(days, s, top, unit) for s in series]
        chart.marks = _dots(days, series, top, unit)
    chart.table_head = ["Day", *(s.name for s in series)]
    chart.table_rows = [
        [day.isoformat(), *(_number(s.values[n], unit) for s in series)] for n, day in enumerate(days)
    ]
    chart.empty = peak == 0
    return chart


def _x(position: int, count: int) -> float:
    """The centre of day ``position`` of ``count``."""
    return LEFT + (position + 0.5) * (WIDTH - LEFT - RIGHT) / count


def _y(value: float, top: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - value / top)


def _axes(chart: Chart, days: list[datetime.date], top: float, unit: str) -> None:
    for fraction in (0, 0.5, 1):
        y = _y(top * fraction, top)
        chart.grid.append(y)
        chart.ticks.append(Tick(LEFT - 6, y + 4, _number(top * fraction, unit), anchor="end"))
    every = max(1, math.ceil(len(days) / MAX_X_LABELS))
    for n in range(0, len(days), every):
        chart.ticks.append(Tick(_x(n, len(days)), HEIGHT - BOTTOM + 16, days[n].strftime("%b %-d")))


def _bars(days: list[datetime.date], series: list[Series], top: float, unit: str) -> list[Mark]:
    slot = (WIDTH - LEFT - RIGHT) / len(days)
    width = max(1.0, slot * 0.7)
    marks = []
    for n, day in enumerate(days):
        base = 0.0
        for s in series:
            value = s.values[n] or 0
            if value:
                y = _y(base + value, top)
                height = _y(base, top) - y
                label = f"{day.isoformat()}: {_number(value, unit)} {s.name.lower()}"
                marks.append(
                    Mark(
                        round(_x(n, len(days)) - width / 2, 1),
                        round(y, 1),
                        round(width, 1),
                        round(height, 1),
                        s.css,
                        label,
                    )
                )
            base += value
    return marks


def _line(days: list[datetime.date], series: Series, top: float, unit: str) -> Polyline:
    points = " ".join(
        f"{_x(n, len(days)):.1f},{_y(v, top):.1f}" for n, v in enumerate(series.values) if v is not None
    )
    return Polyline(series.css, points, series.name)


def _dots(days: list[datetime.date], series: list[Series], top: float, unit: str) -> list[Mark]:
    """A small square on each day with a value, so a single day still shows (and has a tooltip)."""
    return [
        Mark(
            round(_x(n, len(days)) - 3, 1),
            round(_y(v, top) - 3, 1),
            6,
            6,
            s.css,
            f"{day.isoformat()}: {s.name} {_number(v, unit)}",
        )
        for s in series
        for n, (day, v) in enumerate(zip(days, s.values, strict=True))
        if v is not None
    ]


def ranking_chart(*, key: str, title: str, rows: list[tuple[str, int, int]], names: tuple[str, str]) -> Chart:
    """Horizontal bars, one per row (label, value, part of the value drawn darker), largest first."""
    top = nice_ceiling(max((value for _label, value, _part in rows), default=0))
    chart = Chart(key=key, title=title, summary="", height=TOP + RANK_ROW * max(1, len(rows)) + 8)
    span = WIDTH - RANK_LABEL - RIGHT - 40
    for n, (label, value, part) in enumerate(rows):
        y = TOP + n * RANK_ROW
        chart.ticks.append(Tick(RANK_LABEL - 8, y + 15, _shorten(label), anchor="end"))
        chart.marks.append(
            Mark(
                RANK_LABEL,
                y + 3,
                round(span * value / top, 1),
                18,
                "series-1",
                f"{label}: {value} {names[0].lower()}",
            )
        )
        if part:
            chart.marks.append(
                Mark(
                    RANK_LABEL,
                    y + 3,
                    round(span * part / top, 1),
                    18,
                    "series-2",
                    f"{label}: {part} {names[1].lower()}",
                )
            )
        chart.ticks.append(Tick(RANK_LABEL + span * value / top + 6, y + 15, str(value), anchor="start"))
    chart.legend = [Series(names[0], "series-1", []), Series(names[1], "series-2", [])]
    chart.table_head = ["Collection", *names]
    chart.table_rows = [[label, str(value), str(part)] for label, value, part in rows]
    chart.empty = not rows
    return chart


def _shorten(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
