"""`bpe-fast report`: one self-contained HTML page on a tokenizer and an evaluation text (write_report).

The page holds, for the tokenizer and optionally a second one on the same text: the compression curve over every
vocabulary size with the chosen size marked (bpe_fast.curve), the same per script, bytes per token at round
sizes, token lengths in the vocabulary and in the text, the merges in training order with their pair counts
(when training recorded them), the merged tokens the text never or rarely produces (under-trained candidates)
and the most frequent tokens. Charts are inline SVG drawn here (no script, no external resource, so the page
opens offline); with png_dir the same charts are also written as PNG files by matplotlib (an optional extra).
"""
from __future__ import annotations

import dataclasses
import html
import math
import os
import textwrap
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from .atomic import atomic_output, output_group
from .curve import SCRIPTS, analyze_text, merge_trees
from .patterns import builtin_name
from .token_view import display_token

if TYPE_CHECKING:
    from .curve import CompressionCurve, Texts, TextAnalysis
    from .tokenizer import Tokenizer

__all__ = ["write_report"]

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
_ROUND_SIZES = (512, 1000, 2000, 4000, 8000, 16000, 32000, 50000, 64000, 100000, 128000, 200000, 256000)
_LENGTH_BUCKETS = 16        # token lengths 1..15 bytes, then "16+"
_LIST_ROWS = 40             # rows of the token tables
_CURVE_POINTS = 600         # points a curve is drawn with (sizes sampled evenly on the log axis)


# ------------------------------------------------------------------------------------------------ charts

@dataclasses.dataclass
class Series:
    label: str
    xs: object
    ys: object
    colour: str = _COLOURS[0]
    dashed: bool = False


@dataclasses.dataclass
class Chart:
    """A chart as data: drawn as SVG for the page (svg_chart) or as PNG by matplotlib (png_chart).

    kind "lines": each series a polyline over (xs, ys); "bars": xs are category labels, bars grouped by
    series. marks: (x, label, colour) vertical lines."""
    slug: str
    title: str
    x_label: str
    y_label: str
    series: list[Series]
    kind: str = "lines"
    log_x: bool = False
    log_y: bool = False
    marks: list[tuple[Any, str, str]] = dataclasses.field(default_factory=list)
    y_from_zero: bool = False


def _nice_step(span, count=5):
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def _linear_ticks(low, high):
    """Nice ticks covering low..high: from the largest multiple of the step at or below low to the smallest at or
    above high (an axis drawn from the first to the last has a tick at each end; the data stays inside)."""
    if high <= low:
        high = low + 1
    step = _nice_step(high - low)
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    return [round(k * step, 10) for k in range(first, last + 1)]


def _log_ticks(low, high):
    ticks = []
    e = math.floor(math.log10(low))
    while 10 ** e <= high * 1.0001:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if low * 0.9999 <= v <= high * 1.0001:
                ticks.append(v)
        e += 1
    if len(ticks) > 9:
        ticks = [t for t in ticks if str(int(t) if t >= 1 else t).lstrip("0.").startswith("1")] or ticks
    if len(ticks) < 2:          # a range within a decade's 1-2-5 (257..400 of a small tokenizer): no labels
        whole = float(low).is_integer() and float(high).is_integer()    # vocabulary sizes: no 257.2
        ticks = [t for t in _linear_ticks(low, high) if low <= t <= high and (not whole or float(t).is_integer())]
        ticks = ticks if len(ticks) >= 2 else [low, high]
    return ticks


def _tick_label(v):
    if v >= 1000 and float(v).is_integer():
        return f"{int(v):,}"
    if float(v).is_integer():
        return str(int(v))
    return f"{v:g}"


_FONT = {"tick": 11, "axis": 12, "ctitle": 14, "legend": 11, "mark": 11}     # px, as _CSS sets them
_Y_PAD = 8                  # px between the end ticks and the plot's frame (bars: the top one), so data clears it


def _text_width(text, size):
    """An upper estimate of the width a label is drawn at (system-ui averages about 0.5 em a character)."""
    return 0.6 * size * len(text)


def svg_chart(chart, width=720, height=320):
    """The chart as an inline <svg> element (no xmlns needed inside HTML). From the top: the title, a band with the
    labels of the marks (vocabulary sizes), the plot with its axes, then the legend: nothing is drawn over the data
    and every label stays inside the svg. height is without the marks' band and the legend, which add to it."""
    y_axis = _y_axis(chart)
    widest = max((_text_width(_tick_label(t), _FONT["tick"]) for t in y_axis[2]), default=0) if y_axis else 0
    left, right, top, bottom = max(78, round(widest) + 30), 24, 34, 48     # the y label, its ticks' labels, 6 px
    pw, ph = width - left - right, height - top - bottom
    marks = _mark_labels(chart, left, pw, width)
    top += 14 * (max((row for *_, row in marks), default=-1) + 1)
    legend, legend_height = _svg_legend(chart, left, top + ph + bottom, pw)
    height = top + ph + bottom + legend_height
    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
           f'aria-label="{html.escape(chart.title)}">',
           f'<text x="{left}" y="20" class="ctitle">{html.escape(chart.title)}</text>']
    if chart.kind == "bars":
        out += _svg_bars(chart, left, top, pw, ph, y_axis)
    else:
        out += _svg_lines(chart, left, top, pw, ph, width, y_axis)
    for cx, label, colour, row in marks:
        out.append(f'<text x="{cx:.1f}" y="{top - 5 - 14 * row}" class="mark" text-anchor="middle" '
                   f'fill="{colour}">{html.escape(label)}</text>')
    out.append(f'<text x="{left + pw / 2:.0f}" y="{top + ph + bottom - 8}" class="axis" text-anchor="middle">'
               f'{html.escape(chart.x_label)}</text>')
    out.append(f'<text x="14" y="{top + ph / 2:.0f}" class="axis" text-anchor="middle" '
               f'transform="rotate(-90 14 {top + ph / 2:.0f})">{html.escape(chart.y_label)}</text>')
    out += legend
    out.append("</svg>")
    return "\n".join(out)


def _x_range(chart):
    """The x axis's low and high of a line chart (its data and marks), or None when it has no data to draw."""
    xs_all = np.concatenate([np.asarray(s.xs, dtype=np.float64) for s in chart.series])
    ys_all = np.concatenate([np.asarray(s.ys, dtype=np.float64) for s in chart.series])
    if not (np.isfinite(ys_all) & (ys_all > 0 if chart.log_y else True)).any():
        return None
    x_low, x_high = float(xs_all.min()), float(xs_all.max())
    for x, _, _ in chart.marks:
        x_low, x_high = min(x_low, x), max(x_high, x)
    if chart.log_x:
        x_low = max(x_low, 1.0)
    return x_low, x_high


def _y_axis(chart):
    """(low, high, ticks) of the y axis, nice ends (a tick at each, the top one at or above the data), or None
    when there is no data to draw."""
    if chart.kind == "bars":
        values = np.concatenate([np.asarray(s.ys, dtype=np.float64) for s in chart.series] or [np.zeros(0)])
        high = float(values.max()) if values.size else 1.0
        ticks = _linear_ticks(0.0, high if high > 0 else 1.0)
        return 0.0, ticks[-1], ticks
    ys_all = np.concatenate([np.asarray(s.ys, dtype=np.float64) for s in chart.series])
    ys_all = ys_all[np.isfinite(ys_all) & (ys_all > 0 if chart.log_y else True)]
    if not ys_all.size:
        return None
    y_low, y_high = float(ys_all.min()), float(ys_all.max())
    if chart.y_from_zero and not chart.log_y:
        y_low = 0.0
    if chart.log_y:
        y_low, y_high = 10 ** math.floor(math.log10(y_low)), 10 ** math.ceil(math.log10(y_high))
        if y_high <= y_low:
            y_high = y_low * 10
        return y_low, y_high, _log_ticks(y_low, y_high)
    ticks = _linear_ticks(y_low, y_high)
    return ticks[0], ticks[-1], ticks


def _mark_labels(chart, left, pw, width):
    """(centre x, label, colour, row) of each mark's label, for the band above the plot: centred over its line but
    kept inside the svg, in the first row where it clears the labels before it."""
    rng = None if chart.kind == "bars" or not chart.marks else _x_range(chart)
    if rng is None:
        return []
    sx = _scale(rng[0], rng[1], pw, chart.log_x)
    ends: list[float]
    placed, ends = [], []
    for x, label, colour in sorted(chart.marks, key=lambda m: m[0]):
        w = _text_width(label, _FONT["mark"])
        x0 = min(max(left + sx(x) - w / 2, 2.0), width - 2.0 - w)
        row = next((r for r, end in enumerate(ends) if x0 >= end + 6), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = x0 + w
        placed.append((x0 + w / 2, label, colour, row))
    return placed


def _svg_legend(chart, left, y0, pw):
    """The legend as a band under the axes from y0 (SVG elements, band height): entries in as many equal columns
    as fit the plot's width, row by row; a label too long for the width is wrapped onto more lines (and each
    entry's <title> holds it whole)."""
    if not chart.series or (len(chart.series) < 2 and chart.kind == "bars"):
        return [], 0
    size, line_height, swatch, gap = _FONT["legend"], 14, 28, 18
    chars = max(int((pw - swatch) / (0.6 * size)), 8)
    entries = [textwrap.wrap(s.label, chars) or [""] for s in chart.series]
    column = swatch + max(_text_width(line, size) for lines in entries for line in lines) + gap
    columns = max(int((pw + gap) // column), 1)
    out, y = [], y0
    for start in range(0, len(entries), columns):
        for k, (s, lines) in enumerate(zip(chart.series[start:start + columns], entries[start:start + columns])):
            x = left + k * column
            dash = ' stroke-dasharray="5 3"' if s.dashed else ""
            entry = [f'<g class="legend-entry"><title>{html.escape(s.label)}</title>',
                     f'<line x1="{x:.0f}" y1="{y + 5}" x2="{x + 22:.0f}" y2="{y + 5}" stroke="{s.colour}" '
                     f'stroke-width="3"{dash}/>']
            entry += [f'<text x="{x + swatch:.0f}" y="{y + 9 + line_height * j}" class="legend">'
                      f'{html.escape(line)}</text>' for j, line in enumerate(lines)]
            out.append("".join(entry) + "</g>")
        y += line_height * max(len(lines) for lines in entries[start:start + columns]) + 2
    return out, y - y0 + 6


def _scale(low, high, size, log, flip=False):
    if log:
        low, high = math.log10(low), math.log10(high)
    span = (high - low) or 1.0

    def f(v):
        v = math.log10(v) if log else v
        r = (v - low) / span * size
        return size - r if flip else r
    return f


def _svg_lines(chart, left, top, pw, ph, width, y_axis):
    rng = _x_range(chart)
    if rng is None or y_axis is None:
        return [f'<text x="{left + 10}" y="{top + 20}" class="axis">no data</text>']
    x_low, x_high = rng
    y_low, y_high, y_ticks = y_axis
    if chart.log_x:
        x_ticks = _log_ticks(x_low, x_high)
    else:
        x_ticks = [t for t in _linear_ticks(x_low, x_high) if x_low <= t <= x_high] or [x_low, x_high]
    sx = _scale(x_low, x_high, pw, chart.log_x)
    sy = _scale(y_low, y_high, ph - 2 * _Y_PAD, chart.log_y, flip=True)
    top_y = top + _Y_PAD            # the top tick; the bottom one is as far above the frame's bottom
    out = [f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="plot"/>']
    for t in y_ticks:
        y = top_y + sy(t)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" class="grid ygrid"/>'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" class="tick ytick" text-anchor="end">{_tick_label(t)}</text>')
    for t in x_ticks:
        x = left + sx(t)
        label = _tick_label(t)
        half = _text_width(label, _FONT["tick"]) / 2
        # centred under its tick, unless that runs off the svg: then its end at the svg's edge
        anchor, tx = ("end", width - 2) if x + half > width - 2 else ("middle", x)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" class="grid"/>'
                   f'<text x="{tx:.1f}" y="{top + ph + 16}" class="tick xtick" text-anchor="{anchor}">{label}</text>')
    for s in chart.series:
        xs = np.asarray(s.xs, dtype=np.float64)
        ys = np.asarray(s.ys, dtype=np.float64)
        keep = np.isfinite(ys) & (ys > 0 if chart.log_y else True) & (xs >= x_low)
        points = " ".join(f"{left + sx(x):.1f},{top_y + sy(y):.1f}" for x, y in zip(xs[keep], ys[keep]))
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(f'<polyline points="{points}" fill="none" stroke="{s.colour}" stroke-width="2"{dash}>'
                   f'<title>{html.escape(s.label)}</title></polyline>')
    for x, label, colour in chart.marks:       # the labels are above the plot (svg_chart)
        px = left + sx(x)
        out.append(f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{top + ph}" stroke="{colour}" '
                   f'stroke-dasharray="3 3"><title>{html.escape(label)}</title></line>')
    return out


def _svg_bars(chart, left, top, pw, ph, y_axis):
    labels = list(chart.series[0].xs)
    values = np.array([np.asarray(s.ys, dtype=np.float64) for s in chart.series])
    _, high, ticks = y_axis
    sy = _scale(0.0, high, ph - _Y_PAD, False, flip=True)
    top_y = top + _Y_PAD
    out = [f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="plot"/>']
    for t in ticks:
        y = top_y + sy(t)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" class="grid ygrid"/>'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" class="tick ytick" text-anchor="end">{_tick_label(t)}</text>')
    group = pw / max(len(labels), 1)
    bar = group * 0.8 / max(len(chart.series), 1)
    for k, label in enumerate(labels):
        x0 = left + k * group + group * 0.1
        for j, s in enumerate(chart.series):
            v = values[j, k]
            y = top_y + sy(v)
            out.append(f'<rect x="{x0 + j * bar:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{top + ph - y:.1f}" '
                       f'fill="{s.colour}" class="bar"><title>{html.escape(s.label)}: {html.escape(str(label))}: '
                       f'{v:.3g}</title></rect>')
        out.append(f'<text x="{left + (k + 0.5) * group:.1f}" y="{top + ph + 16}" class="tick xtick" '
                   f'text-anchor="middle">{html.escape(str(label))}</text>')
    return out


def _literal(text):
    """A label as matplotlib draws it as it is: each $ escaped (two of them make mathtext of what lies between:
    a tokenizer named 'tok$^$' failed to parse), and a leading _ after a zero-width space (a legend leaves out
    labels that start with _)."""
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


def png_chart(chart, path, output=atomic_output):
    """Draw the chart with matplotlib into a PNG file, written through `output` (atomic_output, or an
    OutputGroup's output)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=120)
    try:
        if chart.kind == "bars":
            labels = [_literal(str(x)) for x in chart.series[0].xs]
            width = 0.8 / len(chart.series)
            for j, s in enumerate(chart.series):
                ax.bar(np.arange(len(labels)) + j * width - 0.4 + width / 2, s.ys, width, label=_literal(s.label),
                       color=s.colour)
            ax.set_xticks(np.arange(len(labels)), labels)
        else:
            for s in chart.series:
                ax.plot(s.xs, s.ys, label=_literal(s.label), color=s.colour, linestyle="--" if s.dashed else "-")
            for x, label, colour in chart.marks:
                ax.axvline(x, color=colour, linestyle=":", linewidth=1)
                ax.annotate(_literal(label), (x, 1), xycoords=("data", "axes fraction"), ha="right", va="top",
                            color=colour, fontsize=8)
            if chart.log_x:
                ax.set_xscale("log")
            if chart.log_y:
                ax.set_yscale("log")
        ax.set_title(_literal(chart.title), fontsize=10)
        ax.set_xlabel(_literal(chart.x_label))
        ax.set_ylabel(_literal(chart.y_label))
        ax.grid(alpha=0.3)
        if len(chart.series) > 1:
            ax.legend(fontsize=8)
        fig.tight_layout()
        with output(path, "wb") as f:
            fig.savefig(f, format="png")
    finally:
        plt.close(fig)


def _sampled(n, points=_CURVE_POINTS, log=True):
    """Indices 0..n-1 to draw a curve of n points with about `points` of them (evenly on a log axis), ends kept."""
    if n <= points:
        return np.arange(n)
    if log:
        idx = np.unique(np.geomspace(1, n, points).astype(np.int64) - 1)
    else:
        idx = np.unique(np.linspace(0, n - 1, points).astype(np.int64))
    return np.union1d(idx, [0, n - 1])


# ------------------------------------------------------------------------------------------------ data

@dataclasses.dataclass
class Side:
    """One tokenizer's results on the evaluation text."""
    name: str
    tokenizer: Tokenizer
    analysis: TextAnalysis
    curve: CompressionCurve
    colour: str
    training: dict[str, Any] | None = None     # tokenizer.training, read once (a copy is made each time it is read)

    @property
    def full_size(self) -> int:
        return int(self.curve.vocab_sizes[-1])


def _merge_trees(name, tokenizer):
    try:
        return merge_trees(tokenizer)
    except ValueError as exc:           # a merge list the curve is not defined for: which tokenizer's
        raise ValueError(f"{name}: {exc}") from None


def _analyze(name, tokenizer, trees, texts, errors, colour, text_field="text", text_column="text"):
    analysis = analyze_text(tokenizer, texts, by_script=True, errors=errors, trees=trees, text_field=text_field,
                            text_column=text_column)
    return Side(name, tokenizer, analysis, analysis.curve(), colour, getattr(tokenizer, "training", None))


def _pattern_name(pattern):
    name = builtin_name(pattern)
    return "custom regex" if name is None else "gpt4 (cl100k)" if name == "gpt4" else name


def _same_pre_tokens(a, b):
    """Whether two patterns are one, or GPT-2's and tiktoken's spelling of it (the same pre-tokens)."""
    return a == b or (builtin_name(a) is not None and builtin_name(a) == builtin_name(b))


def _fmt(v, digits=3):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "\u2014"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    return f"{v:.{digits}f}"


def _table(header, rows, classes=()):
    cls = f' class="{" ".join(classes)}"' if classes else ""
    out = [f"<table{cls}><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _code(token):
    return f"<code>{html.escape(display_token(token))}</code>"


def _merge_counts(side):
    """The tokenizer's recorded pair counts (one a merge), or None with the reason."""
    counts = (side.training or {}).get("merge_counts")
    if counts is None:
        return None, ("not recorded: the tokenizer was not trained by bpe_fast (or was saved before merge counts "
                      "were recorded); `bpe-fast train` keeps them in bpe_fast.json")
    if len(counts) != len(side.tokenizer.merges):
        return None, (f"recorded for {len(counts):,} merges but the tokenizer has {len(side.tokenizer.merges):,}: "
                      f"not shown")
    return np.asarray(counts, dtype=np.int64), ""


# ------------------------------------------------------------------------------------------------ sections

def _summary_section(sides, notes, texts):
    header = ["", *(s.name for s in sides)]
    rows = []

    def row(label, values):
        rows.append([html.escape(label), *values])

    row("vocabulary size (largest id + 1)", [_fmt(s.tokenizer.vocab_size) for s in sides])
    row("merges", [_fmt(len(s.tokenizer.merges)) for s in sides])
    row("curve from .. to (sizes)", [f"{_fmt(int(s.curve.vocab_sizes[0]))} .. {_fmt(s.full_size)}" for s in sides])
    row("pattern", [html.escape(_pattern_name(s.tokenizer.pattern)) for s in sides])
    row("special tokens", [", ".join(_code(t.encode("utf-8")) for t in s.tokenizer.special_tokens) or "none"
                           for s in sides])
    row("evaluation tokens", [_fmt(s.analysis.tokens) for s in sides])
    row("bytes per token", [f"<b>{_fmt(float(s.curve.bytes_per_token[-1]))}</b>" for s in sides])
    row("tokens per word", [_fmt(float(s.curve.tokens_per_word[-1])) for s in sides])
    for key, label in (("bytes", "training corpus: bytes"), ("documents", "training corpus: documents"),
                       ("pretokens", "training corpus: pre-tokens"),
                       ("distinct_pretokens", "training corpus: distinct pre-tokens")):
        values = [((s.training or {}).get("corpus") or {}).get(key) for s in sides]
        if any(v is not None for v in values):
            row(label, [_fmt(v) for v in values])
    first = sides[0].analysis
    text_rows = [[html.escape(name), _fmt(size), *(_fmt(tokens) for tokens in
                                                   [s.analysis.sources[k][2] for s in sides])]
                 for k, (name, size, _) in enumerate(first.sources)]
    out = ["<h2>Summary</h2>", _table(header, rows, ("summary",))]
    out.append(f"<p>Evaluation text: {len(first.sources)} file(s), {_fmt(first.bytes)} bytes, "
               f"{_fmt(first.words)} words (runs of non-whitespace characters).</p>")
    out.append(_table(["evaluation text", "bytes", *(f"tokens ({s.name})" for s in sides)], text_rows))
    for note in notes:
        out.append(f'<p class="note">{html.escape(note)}</p>')
    return "\n".join(out)


def _curve_section(sides):
    charts: list[Chart] = []
    series_bpt, series_tpw, marks = [], [], []
    for s in sides:
        idx = _sampled(len(s.curve.vocab_sizes))
        xs = s.curve.vocab_sizes[idx]
        series_bpt.append(Series(s.name, xs, s.curve.bytes_per_token[idx], s.colour))
        series_tpw.append(Series(s.name, xs, s.curve.tokens_per_word[idx], s.colour))
        marks.append((s.full_size, f"{s.full_size:,}", s.colour))
    charts.append(Chart("curve", "Compression: bytes per token at every vocabulary size", "vocabulary size",
                        "bytes per token", series_bpt, log_x=True, marks=marks))
    charts.append(Chart("tokens-per-word", "Tokens per word at every vocabulary size", "vocabulary size",
                        "tokens per word", series_tpw, log_x=True, marks=marks))
    base = min(int(s.curve.vocab_sizes[0]) for s in sides)
    top = max(s.full_size for s in sides)
    sizes = sorted({base, *(v for v in _ROUND_SIZES if base < v < top), *(s.full_size for s in sides)})
    rows = []
    for v in sizes:
        cells = [_fmt(v)]
        for s in sides:
            k = v - int(s.curve.vocab_sizes[0])
            if 0 <= k < len(s.curve.vocab_sizes):
                cells += [_fmt(float(s.curve.bytes_per_token[k])), _fmt(float(s.curve.tokens_per_word[k]))]
            else:
                cells += ["\u2014", "\u2014"]
        rows.append(cells)
    header = ["vocabulary size"] + [f"{label} ({s.name})" for s in sides for label in ("bytes/token", "tokens/word")]
    text = ["<h2>Compression curve</h2>",
            "<p>The evaluation text encoded once; the count at each smaller size is the full encoding with every "
            "token beyond that size split back into its merge's parts, which equals encoding with the tokenizer "
            "cut to that size. The dashed lines mark each tokenizer's full size.</p>",
            *(svg_chart(c) for c in charts), _table(header, rows)]
    return "\n".join(text), charts


def _script_section(sides):
    charts: list[Chart] = []
    for s in sides:
        series = []
        for k, name in enumerate(SCRIPTS):
            c = (s.curve.scripts or {}).get(name)
            if c is None:
                continue
            idx = _sampled(len(c.vocab_sizes))
            series.append(Series(name, c.vocab_sizes[idx], c.bytes_per_token[idx], _COLOURS[k % len(_COLOURS)]))
        charts.append(Chart(f"scripts-{len(charts) + 1}", f"Bytes per token by script: {s.name}", "vocabulary size",
                            "bytes per token", series, log_x=True, marks=[(s.full_size, f"{s.full_size:,}", "#444")]))
    rows = []
    total = int(sides[0].analysis.class_bytes.sum())      # the tokens' bytes: the shares add up to 100%
    for name in SCRIPTS:
        curves = [(s.curve.scripts or {}).get(name) for s in sides]
        if all(c is None for c in curves):
            continue
        cells = [html.escape(name), f"{100 * (curves[0].bytes if curves[0] else 0) / max(total, 1):.1f}%"]
        for c in curves:
            cells += [_fmt(int(c.tokens[-1])) if c else "\u2014",
                      _fmt(float(c.bytes_per_token[-1])) if c else "\u2014"]
        rows.append(cells)
    header = ["script", f"share of bytes ({sides[0].name})"] + \
        [f"{label} ({s.name})" for s in sides for label in ("tokens", "bytes/token")]
    text = ["<h2>By script</h2>",
            "<p>Each produced token counts for the script of its first character that is not whitespace "
            "(Unicode properties: Latin, Cyrillic, CJK (Han, kana, Hangul), Arabic, other letters, decimal digits, "
            "whitespace, and punctuation/code for the rest: punctuation, symbols, emoji); the pieces it splits "
            "into at smaller sizes keep its script.</p>",
            _table(header, rows), *(svg_chart(c) for c in charts)]
    return "\n".join(text), charts


def _produced_lengths(analysis):
    """(lengths, counts): the tokens the evaluation text was encoded into, as int64 arrays of their lengths in
    bytes and how often each was produced; each produced id once, but an id special tokens share (o200k_harmony's
    <|endofprompt|> and <|reserved_200018|>, whose vocabulary bytes are the first's) once for each of them held,
    by its own length (TextAnalysis.shared_counts)."""
    produced, shared = analysis.produced, analysis.shared_counts
    used = np.flatnonzero(produced)
    used = used[~np.isin(used, list(shared))]
    held = [(len(name.encode("utf-8")), count) for names in shared.values() for name, count in names.items() if count]
    return (np.concatenate([analysis.trees.lengths[used], np.array([n for n, _ in held], dtype=np.int64)]),
            np.concatenate([produced[used], np.array([c for _, c in held], dtype=np.int64)]))


def _length_section(sides):
    labels = [str(k) for k in range(1, _LENGTH_BUCKETS)] + [f"{_LENGTH_BUCKETS}+"]
    vocab_series, text_series = [], []
    for s in sides:
        lengths = s.analysis.trees.lengths
        ranked = s.analysis.trees.ranked_ids
        in_vocab = np.concatenate([np.ones(256, dtype=np.int64), lengths[ranked]])   # bytes + merged tokens
        hist = np.bincount(np.minimum(in_vocab, _LENGTH_BUCKETS), minlength=_LENGTH_BUCKETS + 1)[1:]
        vocab_series.append(Series(s.name, labels, 100 * hist / max(int(hist.sum()), 1), s.colour))
        produced_lengths, produced = _produced_lengths(s.analysis)
        hist = np.bincount(np.minimum(produced_lengths, _LENGTH_BUCKETS), weights=produced,
                           minlength=_LENGTH_BUCKETS + 1)[1:]
        text_series.append(Series(s.name, labels, 100 * hist / max(float(hist.sum()), 1.0), s.colour))
    charts = [Chart("lengths-vocab", "Token lengths in the vocabulary (bytes; merged tokens and the 256 bytes)",
                    "length in bytes", "% of tokens", vocab_series, kind="bars"),
              Chart("lengths-text", "Lengths of the tokens the evaluation text is encoded into (bytes)",
                    "length in bytes", "% of produced tokens", text_series, kind="bars")]
    return "\n".join(["<h2>Token lengths</h2>", *(svg_chart(c) for c in charts)]), charts


def _merge_section(sides):
    out = ["<h2>Merges in training order</h2>"]
    charts: list[Chart] = []
    for s in sides:
        counts, why = _merge_counts(s)
        if counts is None:
            out.append(f'<p class="note">{html.escape(s.name)}: pair counts {html.escape(why)}.</p>')
            continue
        idx = _sampled(len(counts), 800, log=False)
        charts.append(Chart(f"merges-{len(charts) + 1}", f"Pair count when each merge was chosen: {s.name}",
                            "merge (training order)", "pair count in the training corpus",
                            [Series(s.name, idx + 1, counts[idx], s.colour)], log_y=True))
    usage_series = []
    for s in sides:
        weights = s.analysis.weights().sum(axis=1)
        produced = s.analysis.produced[s.analysis.trees.ranked_ids]
        n = len(weights)
        if n == 0:
            continue
        buckets = min(100, n)
        edges = np.linspace(0, n, buckets + 1).astype(np.int64)
        used = np.add.reduceat((weights > 0).astype(np.float64), edges[:-1]) / np.diff(edges)
        final = np.add.reduceat((produced > 0).astype(np.float64), edges[:-1]) / np.diff(edges)
        mid = 50 * (edges[:-1] + edges[1:]) / n         # the group's middle, in % of the merges
        usage_series.append(Series(f"{s.name}: used (as a token or inside one)", mid, 100 * used, s.colour))
        usage_series.append(Series(f"{s.name}: produced as a token", mid, 100 * final, s.colour, dashed=True))
    if usage_series:
        charts.append(Chart("usage", "Merged tokens the evaluation text uses, by training order (100 groups)",
                            "position in training order (% of the merged tokens)", "% of the group's tokens",
                            usage_series, y_from_zero=True))
    out += [svg_chart(c) for c in charts]
    return "\n".join(out), charts


def _token_section(sides):
    out = ["<h2>Under-trained candidates and frequent tokens</h2>",
           "<p>A merged token the evaluation text never produces, not even inside a longer token, is a candidate "
           "for an under-trained embedding (the \u201cSolidGoldMagikarp\u201d kind): it is listed from the "
           "earliest merge, with its pair count in training when recorded. Tokens produced only inside longer "
           "ones are normal intermediate steps.</p>"]
    rows = []
    for s in sides:
        weights = s.analysis.weights().sum(axis=1)
        produced = s.analysis.produced[s.analysis.trees.ranked_ids]
        n = len(weights)
        rows.append([html.escape(s.name), _fmt(n), _fmt(int((weights == 0).sum())),
                     _fmt(int(((produced == 0) & (weights > 0)).sum())),
                     _fmt(int(((produced > 0) & (produced < 10)).sum())), _fmt(int((produced >= 10).sum()))])
    out.append(_table(["tokenizer", "merged tokens", "never used", "only inside longer tokens", "produced 1-9 times",
                       "produced 10+ times"], rows))
    for s in sides:
        trees = s.analysis.trees
        vocab = s.tokenizer.vocab
        weights = s.analysis.weights().sum(axis=1)
        counts, _ = _merge_counts(s)
        never = np.flatnonzero(weights == 0)[:_LIST_ROWS]
        table_rows = []
        for r in never:
            token_id = int(trees.ranked_ids[r])
            token = vocab[token_id]
            cells = [_fmt(int(r)), _fmt(token_id), _code(token), _fmt(len(token))]
            if counts is not None:
                cells.append(_fmt(int(counts[trees.first_merge[r]])))
            table_rows.append(cells)
        header = ["rank", "id", "token", "bytes"] + (["pair count in training"] if counts is not None else [])
        out.append(f"<h3>Never used: {html.escape(s.name)} (first {_LIST_ROWS} by rank)</h3>")
        out.append(_table(header, table_rows) if table_rows else "<p>None: every merged token is used.</p>")
    out.append("<h3>Most frequent tokens</h3>")
    tables = []
    for s in sides:
        total = max(s.analysis.tokens, 1)
        table_rows = [[_fmt(i), _code(token), _fmt(count), f"{100 * count / total:.2f}%"]
                      for i, token, count in _most_frequent(s.analysis, s.tokenizer.vocab)]
        tables.append(f"<div><h4>{html.escape(s.name)}</h4>" + _table(["id", "token", "count", "share"], table_rows)
                      + "</div>")
    out.append('<div class="columns">' + "".join(tables) + "</div>")
    return "\n".join(out)


def _most_frequent(analysis, vocab):
    """(id, token bytes, count) of the _LIST_ROWS tokens produced most often, the most first (a tie: the smaller id
    first); the special tokens of an id they share (o200k_harmony's <|endofprompt|> and <|reserved_200018|>) each
    under its own name, with its own count (TextAnalysis.shared_counts)."""
    produced, shared = analysis.produced, analysis.shared_counts
    # an id's count is at least any of its names': the first _LIST_ROWS ids not shared, and any name ranked
    # before them, are among the first _LIST_ROWS + len(shared) ids
    top = np.argsort(-produced, kind="stable")[:_LIST_ROWS + len(shared)]
    rows = []
    for i in top[produced[top] > 0].tolist():
        if i in shared:
            rows += [(i, name.encode("utf-8"), count) for name, count in shared[i].items() if count]
        else:
            rows.append((i, vocab[i], int(produced[i])))
    rows.sort(key=lambda row: (-row[2], row[0]))        # stable: an id's names in their order
    return rows[:_LIST_ROWS]


_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
code { background: #f3f3f3; padding: 0 3px; white-space: pre; }
.note { color: #8a4b00; background: #fff6e5; padding: 0.4em 0.8em; border-left: 3px solid #e0a030; }
.columns { display: flex; gap: 2em; flex-wrap: wrap; }
svg.chart { display: block; margin: 1em 0; max-width: 100%; height: auto; }
svg .plot { fill: #fcfcfc; stroke: #ccc; } svg .grid { stroke: #eee; }
svg text { font-family: system-ui, sans-serif; } svg .tick { font-size: 11px; fill: #555; }
svg .axis { font-size: 12px; fill: #333; } svg .ctitle { font-size: 14px; font-weight: 600; fill: #222; }
svg .legend { font-size: 11px; fill: #333; } svg .mark { font-size: 11px; }
"""


def png_names(against: bool) -> list[str]:
    """The names of the PNG files write_report may write into png_dir (a chart's slug + ".png"), for one
    tokenizer or two (against): those of the sections' charts, a chart each side for scripts and merges
    (merges only for a tokenizer whose training recorded pair counts; usage only when one has merges). For the
    CLI, which refuses one that is a folder before any work (it was found when the charts were written)."""
    sides = range(1, 3 if against else 2)
    return [f"{slug}.png" for slug in ("curve", "tokens-per-word", *(f"scripts-{k}" for k in sides),
                                        "lengths-vocab", "lengths-text", *(f"merges-{k}" for k in sides), "usage")]


def write_report(tokenizer: Tokenizer, texts_or_paths: Texts, output: str | os.PathLike[str], *,
                 name: str = "tokenizer", against: Tokenizer | None = None, against_name: str = "against",
                 png_dir: str | None = None, errors: str = "strict", text_field: str = "text",
                 text_column: str = "text") -> dict[str, Any]:
    """Write the HTML report on `tokenizer` (and `against`, on the same text) to `output`, atomically; with
    png_dir, also its charts as PNG files there (matplotlib needed). texts_or_paths (and text_field,
    text_column) as bpe_fast.compression_curve takes them. Returns a dict of the main figures and the notes (for
    the CLI).

    >>> import pathlib, tempfile
    >>> from bpe_fast import Tokenizer
    >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "report.html"
    >>> write_report(tok, ["abab cab"], out)["bytes_per_token"]
    [1.6]
    """
    started = time.perf_counter()
    # a name from a path that is not UTF-8 (os.fsdecode's lone surrogates) shown as \udcff: UTF-8 and matplotlib
    # take no surrogates
    name, against_name = (n.encode("utf-8", "backslashreplace").decode("utf-8") for n in (name, against_name))
    texts = ([texts_or_paths] if isinstance(texts_or_paths, (str, bytes, bytearray, memoryview, os.PathLike))
             else list(texts_or_paths))         # one text, as compression_curve takes it, or several
    # both tokenizers' trees before either encodes the text: a refusal of the second comes before the work
    trees = [_merge_trees(name, tokenizer)] + ([] if against is None else [_merge_trees(against_name, against)])
    sides = [_analyze(name, tokenizer, trees[0], texts, errors, _COLOURS[0], text_field, text_column)]
    notes = []
    if against is not None:
        sides.append(_analyze(against_name, against, trees[1], texts, errors, _COLOURS[1], text_field, text_column))
        if not _same_pre_tokens(against.pattern, tokenizer.pattern):
            notes.append(f"The two tokenizers pre-tokenize with different patterns ({_pattern_name(tokenizer.pattern)}"
                         f" and {_pattern_name(against.pattern)}): their tokens differ in where they may be cut, "
                         f"not only in their merges.")
        if set(against.special_tokens) != set(tokenizer.special_tokens):
            notes.append("The two tokenizers have different special tokens: in the evaluation text each matches "
                         "its own (one token each).")
    for s in sides:
        if s.full_size != s.tokenizer.vocab_size:
            notes.append(f"{s.name}: the curve ends at {s.full_size:,} tokens (the tokens no merge makes and every "
                         f"merged token), not at vocab_size {s.tokenizer.vocab_size:,} (ids unused or repeated).")
    summary = _summary_section(sides, notes, texts)
    curve_html, curve_charts = _curve_section(sides)
    script_html, script_charts = _script_section(sides)
    length_html, length_charts = _length_section(sides)
    merge_html, merge_charts = _merge_section(sides)
    token_html = _token_section(sides)
    title = f"Tokenizer report: {name}" + (f" against {against_name}" if against is not None else "")
    page = "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
        f"<h1>{html.escape(title)}</h1>", summary, curve_html, script_html, length_html, merge_html, token_html,
        f'<p class="foot">Made by bpe-fast report in {time.perf_counter() - started:.1f} s.</p>',
        "</body>", "</html>", ""])
    charts = curve_charts + script_charts + length_charts + merge_charts
    pngs = []
    if png_dir is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ImportError("PNG charts need matplotlib: pip install 'bpe_fast[report]' (or matplotlib)") from None
    # the page and the charts are replaced together, once all are drawn: an error or Ctrl-C while matplotlib
    # draws leaves the earlier page and charts as they were, and no folder made for them
    with output_group() as group:
        with group.output(os.fspath(output), "wb") as f:
            f.write(page.encode("utf-8", "backslashreplace"))     # a file name not UTF-8: \udcff, not an error
        if png_dir is not None:
            group.makedirs(png_dir)
            for chart in charts:
                path = os.path.join(png_dir, chart.slug + ".png")
                png_chart(chart, path, group.output)
                pngs.append(path)
    return {"names": [s.name for s in sides], "full_sizes": [s.full_size for s in sides],
            "bytes_per_token": [round(float(s.curve.bytes_per_token[-1]), 4) for s in sides],
            "tokens_per_word": [round(float(s.curve.tokens_per_word[-1]), 4) for s in sides],
            "bytes": sides[0].analysis.bytes, "notes": notes, "pngs": pngs}
