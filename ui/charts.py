"""Small charts drawn on the server as inline SVG: no JavaScript, no chart library, readable without colour
(every chart has a text title and a data table next to it)."""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from dataclasses import dataclass
import math
from html import escape
from typing import Iterable, Sequence

# Okabe-Ito: distinguishable with the common colour-vision deficiencies
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
WIDTH, HEIGHT = 640, 220
PAD_L, PAD_R, PAD_T, PAD_B = 48, 12, 12, 36
GRAPH_W, GRAPH_H = 600, 420


@dataclass(frozen=True)
class Bucket:
    start: _dt.date
    label: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def kind_colours(kinds: Sequence[str]) -> dict[str, str]:
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(kinds)}


def buckets(days: Counter[tuple[_dt.date, str]], max_bars: int = 60) -> tuple[str, list[Bucket]]:
    """Per-day counts grouped into days, weeks or months so the chart has at most ``max_bars`` bars."""
    if not days:
        return "day", []
    first = min(d for d, _ in days)
    last = max(d for d, _ in days)
    span = (last - first).days + 1
    unit = "day" if span <= max_bars else "week" if span <= max_bars * 7 else "month"

    def start_of(d: _dt.date) -> _dt.date:
        if unit == "week":
            return d - _dt.timedelta(days=d.weekday())
        if unit == "month":
            return d.replace(day=1)
        return d

    grouped: dict[_dt.date, Counter[str]] = {}
    for (day, kind), n in days.items():
        grouped.setdefault(start_of(day), Counter())[kind] += n
    out: list[Bucket] = []
    cur = start_of(first)
    end = start_of(last)
    while cur <= end:
        label = cur.strftime("%Y-%m") if unit == "month" else cur.isoformat()
        out.append(Bucket(cur, label, dict(grouped.get(cur, {}))))
        cur = _next(cur, unit)
    if len(out) > max_bars * 2:  # a very long history of months: keep the most recent ones
        out = out[-max_bars * 2:]
    return unit, out


def _next(d: _dt.date, unit: str) -> _dt.date:
    if unit == "day":
        return d + _dt.timedelta(days=1)
    if unit == "week":
        return d + _dt.timedelta(days=7)
    return (d.replace(day=28) + _dt.timedelta(days=4)).replace(day=1)


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10 ** (len(str(int(value))) - 1)
    for mult in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if value <= mult * step:
            return mult * step
    return 10 * step


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def _frame(title: str, desc: str, body: Iterable[str], ymax: float, unit_label: str) -> str:
    inner_h = HEIGHT - PAD_T - PAD_B
    grid = []
    for i in range(5):
        y = PAD_T + inner_h * i / 4
        grid.append(f'<line x1="{PAD_L}" x2="{WIDTH - PAD_R}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        grid.append(f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" class="axis" text-anchor="end">'
                    f'{_fmt(ymax * (4 - i) / 4)}</text>')
    return (f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" role="img" aria-labelledby="{title}-t {title}-d" '
            f'xmlns="http://www.w3.org/2000/svg"><title id="{title}-t">{escape(unit_label)}</title>'
            f'<desc id="{title}-d">{escape(desc)}</desc>{"".join(grid)}{"".join(body)}</svg>')


def kinds_over_time(days: Counter[tuple[_dt.date, str]], kinds: Sequence[str], *, chart_id: str = "kinds",
                    noun: str = "memories stored", by: str = "kind",
                    colours: dict[str, str] | None = None) -> tuple[str, list[Bucket], str]:
    """A stacked bar chart of ``noun`` per day/week/month and ``by`` (memories stored, by kind, unless said
    otherwise); returns (svg, buckets, unit)."""
    unit, bars = buckets(days)
    colours = colours or kind_colours(kinds)
    if not bars:
        return "", [], unit
    ymax = _nice_max(max(4, *(b.total for b in bars)))  # at least 4: whole numbers on the axis
    inner_w, inner_h = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B
    slot = inner_w / len(bars)
    bar_w = max(1.0, slot * 0.8)
    body: list[str] = []
    for i, b in enumerate(bars):
        x = PAD_L + i * slot + (slot - bar_w) / 2
        y = PAD_T + inner_h
        for kind in kinds:
            n = b.counts.get(kind, 0)
            if not n:
                continue
            h = inner_h * n / ymax
            y -= h
            body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                        f'fill="{colours[kind]}"><title>{escape(b.label)} {escape(kind)}: {n}</title></rect>')
    for i in sorted({0, len(bars) // 2, len(bars) - 1}):
        x = PAD_L + i * slot + slot / 2
        anchor = "start" if i == 0 else "end" if i == len(bars) - 1 else "middle"
        x = PAD_L if anchor == "start" else WIDTH - PAD_R if anchor == "end" else x
        body.append(f'<text x="{x:.1f}" y="{HEIGHT - PAD_B + 16}" class="axis" text-anchor="{anchor}">'
                    f'{escape(bars[i].label)}</text>')
    total = sum(b.total for b in bars)
    desc = f"{total:,} {noun} per {unit}, from {bars[0].label} to {bars[-1].label}, stacked by {by}."
    return _frame(chart_id, desc, body, ymax, f"{noun.capitalize()} per {unit}, by {by}"), bars, unit


def latency_chart(points: Sequence[tuple[_dt.datetime, float]], now: _dt.datetime, hours: float = 24.0) -> str:
    """Recall latency (ms) of each hook run in the last ``hours``, as dots on a time axis."""
    if not points:
        return ""
    ymax = _nice_max(max(ms for _, ms in points))
    inner_w, inner_h = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B
    start = now - _dt.timedelta(hours=hours)
    body: list[str] = []
    for at, ms in points:
        x = PAD_L + inner_w * max(0.0, min(1.0, (at - start).total_seconds() / (hours * 3600)))
        y = PAD_T + inner_h * (1 - min(1.0, ms / ymax))
        body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" class="dot"><title>{at:%H:%M} UTC: '
                    f'{ms:.0f} ms</title></circle>')
    for frac, label, anchor in ((0.0, f"{hours:g} h ago", "start"), (0.5, f"{hours / 2:g} h ago", "middle"),
                                (1.0, "now", "end")):
        body.append(f'<text x="{PAD_L + inner_w * frac:.1f}" y="{HEIGHT - PAD_B + 16}" class="axis" '
                    f'text-anchor="{anchor}">{label}</text>')
    desc = f"{len(points)} recall hook runs in the last {hours:g} hours; the slowest took {max(ms for _, ms in points):.0f} ms."
    return _frame("latency", desc, body, ymax, "Recall hook latency (ms) over the last day")



@dataclass(frozen=True)
class Node:
    """One entity in a neighbour graph: its label, its kind, how many memories it shares with the centre, and
    the page it links to."""

    label: str
    kind: str
    shared: int
    href: str
    via: tuple[str, ...] = ()  # the relations that link it to the centre ("maintains"), beside co-mentions


def _cut(text: str, limit: int = 22) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _how(n: Node) -> str:
    said = [", ".join(p.replace("_", " ") for p in n.via)] if n.via else []
    shared = [f"named with it in {n.shared} memor{'y' if n.shared == 1 else 'ies'}"] if n.shared else []
    return "; ".join(said + shared)


def neighbours(centre: Node, others: Sequence[Node], colours: dict[str, str]) -> str:
    """The entity at the centre and its neighbours on a circle around it, each a link to its page; an edge's
    width says how many memories the two share, its label the relations between them (dashed: a relation and no
    shared memory). Every label is escaped (names come from memory text)."""
    if not others:
        return ""
    midx, midy = GRAPH_W / 2, GRAPH_H / 2
    radius = GRAPH_H / 2 - 70  # room beside the circle for a label of 22 characters
    top = max(n.shared for n in others) or 1
    edges: list[str] = []
    nodes: list[str] = []
    for i, n in enumerate(others):
        angle = -math.pi / 2 + 2 * math.pi * i / len(others)
        x, y = midx + radius * math.cos(angle), midy + radius * math.sin(angle)
        width = 1 + 5 * n.shared / top
        dashed = ' stroke-dasharray="4 3"' if n.via and not n.shared else ""
        edges.append(f'<line x1="{midx:.1f}" y1="{midy:.1f}" x2="{x:.1f}" y2="{y:.1f}" class="edge" '
                     f'stroke-width="{width:.1f}"{dashed}/>')
        if n.via:
            said = ", ".join(p.replace("_", " ") for p in n.via)
            edges.append(f'<text x="{midx + (x - midx) * 0.55:.1f}" y="{midy + (y - midy) * 0.55 - 4:.1f}" '
                         f'text-anchor="middle" class="via">{escape(_cut(said))}</text>')
        anchor = "middle" if abs(x - midx) < 20 else "start" if x > midx else "end"
        dx = 0 if anchor == "middle" else 14 if anchor == "start" else -14
        dy = 26 if anchor == "middle" and y > midy else -16 if anchor == "middle" else 4
        nodes.append(f'<a href="{escape(n.href, quote=True)}" class="node">'
                     f'<title>{escape(n.label)} ({escape(n.kind or "?")}): {escape(_how(n))}</title>'
                     f'<circle cx="{x:.1f}" cy="{y:.1f}" r="10" fill="{colours.get(n.kind, PALETTE[-1])}"/>'
                     f'<text x="{x + dx:.1f}" y="{y + dy:.1f}" text-anchor="{anchor}" class="label">'
                     f'{escape(_cut(n.label))}</text></a>')
    centre_svg = (f'<g class="centre"><circle cx="{midx:.1f}" cy="{midy:.1f}" r="16" '
                  f'fill="{colours.get(centre.kind, PALETTE[-1])}"/><text x="{midx:.1f}" y="{midy + 34:.1f}" '
                  f'text-anchor="middle" class="label">{escape(_cut(centre.label))}</text></g>')
    desc = (f"{escape(centre.label)} and the {len(others)} entities named with it most often: "
            + "; ".join(f"{escape(n.label)} ({escape(_how(n))})" for n in others) + ".")
    return (f'<svg viewBox="0 0 {GRAPH_W} {GRAPH_H}" class="graph" role="img" aria-labelledby="graph-t graph-d" '
            f'xmlns="http://www.w3.org/2000/svg"><title id="graph-t">Entities named with '
            f'{escape(centre.label)}</title><desc id="graph-d">{desc}</desc>{"".join(edges)}{centre_svg}'
            f'{"".join(nodes)}</svg>')


__all__ = ["Bucket", "GRAPH_H", "GRAPH_W", "Node", "PALETTE", "buckets", "kind_colours", "kinds_over_time",
           "latency_chart", "neighbours"]
