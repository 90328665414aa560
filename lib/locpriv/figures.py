"""What every figure of the workflow shares: saving, the checks a figure must pass, colours for
many categories, and labels placed next to their points without overlapping.

Every PNG the workflow writes goes through :func:`save`, which also runs :func:`problems`: text of
at least :data:`MIN_FONT` points, a unit on every axis that shows numbers, a colour bar for every
map and no empty axes.  With ``LOCPRIV_STRICT_FIGURES=1`` in the environment (the test suite sets
it) a figure breaking one of these rules fails its job; otherwise each problem is one warning line
in the job's log.
"""

from __future__ import annotations

import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import QuadMesh
from matplotlib.image import AxesImage
from matplotlib.text import Text

from . import io

MIN_FONT = 8.0
STRICT_ENV = "LOCPRIV_STRICT_FIGURES"

# 24 colours for categories (mechanisms), chosen greedily to be as far apart as possible in
# CIEDE2000 from each other and from white, black and grey (the background, the fronts and the
# level lines): sRGB candidates on an 18-step grid with lightness 25-78 and chroma above 25, the
# first one matplotlib's default blue.  The smallest pairwise CIEDE2000 among the first 12 is 24
# (tab20: 12, its light/dark pairs of one hue), among all 24 it is 17.5.
PALETTE = (
    "#1e78b4",
    "#7800a5",
    "#00d200",
    "#960000",
    "#ffa500",
    "#ff87ff",
    "#005a00",
    "#ff5a3c",
    "#00d2d2",
    "#694b00",
    "#e10f78",
    "#a5b4f0",
    "#969600",
    "#009669",
    "#1e3c69",
    "#006969",
    "#8769e1",
    "#780f3c",
    "#ff96a5",
    "#0fb4f0",
    "#a5784b",
    "#a5c396",
    "#965a5a",
    "#b478a5",
)

# a unit in brackets or parentheses: "error [m]", "RMSE (m)", "Spearman [rank corr.]"
_UNIT = re.compile(r"\[[^\]]+\]|\([^)]+\)")


def mechanism_colours(names) -> dict:
    """One colour per mechanism, the same in every figure of every config: the built-in mechanisms
    take the palette in the order of their sorted names, whether a config runs them or not; other
    names (plugins) take the next free colours, in sorted order."""
    from .mechanisms import builtin_names

    builtin = builtin_names()
    fixed = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(builtin)}
    others = sorted(set(names) - set(fixed))
    return {**fixed, **{name: PALETTE[(len(builtin) + i) % len(PALETTE)] for i, name in enumerate(others)}}


def save(fig, path, dpi: int) -> None:
    """Write ``fig`` as PNG (no version stamp: same data, same bytes), checking it first."""
    found = problems(fig)
    if found and os.environ.get(STRICT_ENV) == "1":
        plt.close(fig)
        raise ValueError(f"figure {path}: " + "; ".join(found))
    for line in found:
        print(f"warning: figure {path}: {line}", file=sys.stderr)
    with io.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=int(dpi), format="png", metadata={"Software": None})
    plt.close(fig)


def _visible(text) -> bool:
    return text.get_visible() and (text.axes is None or text.axes.get_visible())


def _colorbar_axes(fig) -> set:
    return {im.colorbar.ax for ax in fig.axes for im in _maps(ax) if im.colorbar is not None}


def _maps(ax) -> list:
    return [a for a in (*ax.images, *ax.collections) if isinstance(a, (AxesImage, QuadMesh))]


def problems(fig) -> list[str]:
    """What makes ``fig`` hard to read, one line each (empty: none).

    * every visible text (titles, labels, ticks, legends, annotations) is at least MIN_FONT pt;
    * every axis whose tick labels are numbers has a label naming its unit, in brackets or parentheses;
    * every map (image or mesh) has a colour bar, or shares its norm with a map that has one;
    * no axes is empty (a panel allocated but never drawn on);
    * no axis label is longer than its axes' side (it would run into the next panel or off the page).
    """
    fig.canvas.draw()  # tick labels exist only once drawn
    found = []
    small = sorted(
        {
            f"{t.get_text()!r} ({t.get_fontsize():g} pt)"
            for t in fig.findobj(Text)
            if t.get_text().strip() and _visible(t) and t.get_fontsize() < MIN_FONT
        }
    )
    if small:
        found.append(f"text below {MIN_FONT:g} pt: " + ", ".join(small[:6]) + (" ..." if len(small) > 6 else ""))
    bars = _colorbar_axes(fig)
    barred_norms = {id(im.norm) for ax in fig.axes for im in _maps(ax) if im.colorbar is not None}
    for k, ax in enumerate(fig.axes):
        name = ax.get_title() or ("colour bar" if ax in bars else f"axes {k}")
        if not ax.get_visible():
            continue
        if ax not in bars and not (
            ax.lines or ax.collections or ax.images or ax.patches or ax.texts or ax.artists or ax.tables
        ):
            found.append(f"{name}: empty axes")
            continue
        for axis, label in ((ax.xaxis, ax.get_xlabel()), (ax.yaxis, ax.get_ylabel())):
            ticks = [t.get_text() for t in axis.get_ticklabels() if t.get_visible() and t.get_text().strip()]
            # an axis of numbers needs a unit; one of names (a row per mechanism) is its own label
            if ax.axison and axis.get_visible() and any(map(_number, ticks)) and not _UNIT.search(label):
                found.append(f"{name}: axis label {label!r} names no unit ([unit] or (unit))")
        renderer = fig.canvas.get_renderer()
        frame = ax.get_window_extent(renderer)
        for label, side in ((ax.xaxis.label, frame.width), (ax.yaxis.label, frame.height)):
            box = label.get_window_extent(renderer) if label.get_text() and _visible(label) else None
            if box is not None and ax not in bars and max(box.width, box.height) > 1.02 * side:
                found.append(f"{name}: axis label {label.get_text()!r} is longer than its axes (break it into lines)")
        for im in _maps(ax):
            if im.colorbar is None and id(im.norm) not in barred_norms:
                found.append(f"{name}: a map without a colour bar")
    return found


# a label crossing a line stays readable: a light, borderless box behind its text
_HALO = {"boxstyle": "square,pad=0.08", "facecolor": "white", "edgecolor": "none", "alpha": 0.75}


def log_ticks(ax, values, axis: str = "x") -> None:
    """A log axis ticked at the data's own values, written plainly ("20000", not "2×10⁴")."""
    import matplotlib.ticker

    values = sorted({float(v) for v in values if np.isfinite(v) and v > 0})
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(matplotlib.ticker.FixedLocator(values))
    target.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _number(tick: str) -> bool:
    """A tick label showing a number: "0.5", "−2" (matplotlib's minus), "20000", "$10^{-1}$"."""
    if tick.startswith("$"):
        return True
    try:
        float(tick.replace("−", "-").replace(",", ""))
    except ValueError:
        return False
    return True


def place_labels(ax, x, y, texts, fontsize: float = MIN_FONT, avoid=(), obstacles=(), colours=None) -> list:
    """Label each point (x, y) with its text, beside it, without covering another label or point.

    Greedy: points are taken from the most crowded first; each label tries ten positions around
    its point at growing distances and keeps the first that overlaps no placed label, no point of
    ``avoid`` (more (x, y) pairs) or artist of ``obstacles`` (texts already drawn) and stays inside
    the axes; if none is free it takes the least-overlapping one, joined to its point by a thin
    line.  ``colours`` gives each label its colour (default black).  Candidate boxes are computed
    from the text's measured size, so only the chosen label is drawn.  Needs the figure's final
    layout (call after the axes limits and the layout are fixed).
    """
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    x, y = np.asarray(x, float), np.asarray(y, float)
    pts = ax.transData.transform(np.column_stack([x, y])) if len(x) else np.empty((0, 2))
    others = list(avoid) + list(zip(x, y, strict=True))
    marks = ax.transData.transform(np.asarray(others, float)) if others else np.empty((0, 2))
    pixels = fig.dpi / 72.0  # display units per point
    half = fontsize * pixels * 0.45  # a marker's half-width, about a letter's
    frame = ax.get_window_extent(renderer)
    crowd = [int(((np.abs(pts - p) < 60).all(axis=1)).sum()) for p in pts]
    placed = [tuple(a.get_window_extent(renderer).extents) for a in obstacles]
    artists = []
    for i in sorted(range(len(x)), key=lambda k: (-crowd[k], k)):
        if not texts[i]:
            continue
        size = _text_size(ax, texts[i], fontsize, renderer)
        best = None
        for step in (0.6, 1.4, 2.4, 3.6):
            for dx, dy, ha, va in _DIRECTIONS:
                offset = (dx * step * fontsize, dy * step * fontsize)
                box = _box_at(pts[i] + np.multiply(offset, pixels), size, ha, va)
                cost = sum(_overlap(box, b) for b in placed)
                cost += sum(_overlap(box, (mx - half, my - half, mx + half, my + half)) for mx, my in marks)
                cost += 4 * ((box[2] - box[0]) * (box[3] - box[1]) - _overlap(box, frame))  # outside the axes
                if best is None or cost < best[0]:
                    best = (cost, offset, ha, va, step, box)
                if cost == 0:
                    break
            if best[0] == 0:
                break
        _, offset, ha, va, step, box = best
        # moved away from its point: a thin line says which point it names
        line = (
            {"arrowprops": {"arrowstyle": "-", "lw": 0.5, "color": "0.45", "shrinkA": 0, "shrinkB": 3}}
            if step > 0.6
            else {}
        )
        artists.append(
            ax.annotate(
                texts[i],
                (x[i], y[i]),
                xytext=offset,
                textcoords="offset points",
                ha=ha,
                va=va,
                fontsize=fontsize,
                zorder=5,
                annotation_clip=False,
                bbox=_HALO,
                color=colours[i] if colours is not None else "black",
                **line,
            )
        )
        placed.append(box)
    return artists


# offsets around a point (in units of the label's distance) and the alignment that keeps the text
# on that side of it
_DIRECTIONS = [
    (1, 0.3, "left", "bottom"),
    (1, -0.3, "left", "top"),
    (-1, 0.3, "right", "bottom"),
    (-1, -0.3, "right", "top"),
    (0, 1, "center", "bottom"),
    (0, -1, "center", "top"),
    (1, 1, "left", "bottom"),
    (-1, -1, "right", "top"),
    (1, -1, "left", "top"),
    (-1, 1, "right", "bottom"),
]


def _text_size(ax, text: str, fontsize: float, renderer) -> tuple[float, float]:
    """Width and height of ``text`` on the canvas, halo included."""
    probe = ax.text(0, 0, text, fontsize=fontsize, bbox=_HALO)
    box = probe.get_window_extent(renderer)
    probe.remove()
    return box.width, box.height


def _box_at(anchor, size, ha: str, va: str) -> tuple:
    """(x0, y0, x1, y1) of a text of ``size`` aligned ha/va at ``anchor`` (display units)."""
    w, h = size
    x0 = anchor[0] - {"left": 0.0, "center": w / 2, "right": w}[ha]
    y0 = anchor[1] - {"bottom": 0.0, "center": h / 2, "top": h}[va]
    return (x0, y0, x0 + w, y0 + h)


def text_box(text, renderer):
    """The text's own box on the canvas (an annotation's box would include its leader line)."""
    if hasattr(text, "update_positions"):  # an annotation places its text when asked
        text.update_positions(renderer)
    return Text.get_window_extent(text, renderer)


def _overlap(box, other) -> float:
    """Area shared by two boxes, each a Bbox or (x0, y0, x1, y1)."""
    ax0, ay0, ax1, ay1 = _extents(box)
    bx0, by0, bx1, by1 = _extents(other)
    return max(min(ax1, bx1) - max(ax0, bx0), 0.0) * max(min(ay1, by1) - max(ay0, by0), 0.0)


def _extents(box) -> tuple:
    return (box.x0, box.y0, box.x1, box.y1) if hasattr(box, "x0") else tuple(box)
