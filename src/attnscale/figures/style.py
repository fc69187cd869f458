"""The figures' shared look: rcParams, captions wrapped to the figure's width and the cell edges
of heat maps, in one place (docs/pipeline.md#reproducibility).

Figures are saved by the adapter with :func:`attnscale.pipeline.io.save_figure` (Agg PNG without
timestamp, PDF without metadata dates), so identical data give identical bytes.

No text collides (docs/pipeline.md#figures-text-never-collides): a caption added with
:func:`add_caption` gets room at save time (:func:`fit_caption`: the figure grows at the bottom
as far as the caption needs, everything above keeping its size), and the saved figure's text is
checked with the renderer's extents (:func:`text_collisions`): every collision is a warning in the
job's log, which the tests read for every figure of the smoke run.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import logging  # noqa: E402
import re  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = [
    "STYLE",
    "apply_style",
    "add_caption",
    "cell_edges",
    "text_items",
    "text_collisions",
    "fit_caption",
    "legend_collisions",
    "place_legends",
    "caption_problems",
]

#: the job's logger (attnscale.pipeline.runtime.job writes it to the rule's log)
LOG = logging.getLogger("attnscale")
#: Overlaps smaller than this (pixels, in both directions) are not collisions (antialiasing).
SLACK_PX = 1.0

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "pdf.fonttype": 42,
    "svg.hashsalt": "attnscale",
}


def apply_style() -> None:
    """Apply the project's rcParams (call before creating figures)."""
    plt.rcParams.update(STYLE)


def add_caption(fig, text: str, *, x: float = 0.01, y: float = 0.005, size: float = 6.5):
    """Put a caption at the bottom-left of ``fig``, wrapped to the figure's width.

    Wrapping is done here with :mod:`textwrap` (about 0.6 em per character, conservative for
    DejaVu Sans) rather than by matplotlib's ``wrap=True``, which can overrun the right edge.
    """
    import textwrap

    width_pt = fig.get_figwidth() * 72.0 * (1.0 - 2 * x)
    chars = max(20, int(width_pt / (0.6 * size)))
    wrapped = "\n".join(textwrap.wrap(text, width=chars))
    caption = fig.text(x, y, wrapped, fontsize=size, ha="left", va="bottom")
    fig._attnscale_caption = caption
    if not getattr(fig, "_attnscale_checked", False):  # fit and check when the figure is saved
        save = fig.savefig

        def savefig(*args, **kwargs):
            if not getattr(fig, "_attnscale_fitted", False):  # once, before the first save
                place_legends(fig)
                moved = fit_caption(fig)
                problems = text_collisions(fig, draw=moved > 0)  # drawn by fit_caption if not
                problems += legend_collisions(fig, draw=False)
                problems += caption_problems(caption.get_text())
                for line in problems:
                    LOG.warning("figure text collides: %s", line)
                LOG.info("figure text checked: %d collisions", len(problems))
                fig._attnscale_fitted = True
            return save(*args, **kwargs)

        fig.savefig = savefig
        fig._attnscale_checked = True
    return caption


def _lay_out(fig) -> None:
    """Lay ``fig`` out as a save would (text extents, ticks, legends' places) without
    rasterising it: :meth:`matplotlib.figure.Figure.draw_without_rendering`, with the canvas's
    own renderer, so the extents are those of the saved figure at ``fig.dpi``. The checks below
    only measure; rasterising each of their drawings cost most of a figure job's time."""
    fig.draw_without_rendering()


def text_items(fig, *, skip=(), draw: bool = True) -> list[tuple[str, object]]:
    """Every piece of text a reader sees on ``fig`` after drawing it, with its extent in pixels:
    figure texts (captions, titles), each axes' titles, axis labels, offset texts, the tick labels
    drawn and its texts, and each legend as one box; ``(name, Bbox)`` pairs, the artists in
    ``skip`` left out. ``draw=False`` reuses the last drawing (nothing changed since)."""
    if draw:
        _lay_out(fig)
    r = fig.canvas.get_renderer()
    out, seen = [], {id(a) for a in skip}

    def add(name, artist, text=True):
        if artist is None or id(artist) in seen or not artist.get_visible():
            return
        seen.add(id(artist))
        if text and not str(artist.get_text()).strip():
            return
        label = f"{name} {artist.get_text().strip()[:40]!r}" if text else name
        out.append((label, artist.get_window_extent(r)))

    for t in fig.texts:
        add("figure text", t)
    for t in (
        getattr(fig, "_suptitle", None),
        getattr(fig, "_supxlabel", None),
        getattr(fig, "_supylabel", None),
    ):
        add("figure title", t)
    for leg in fig.legends:
        add("figure legend", leg, text=False)
    for k, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        where = f"axes {k}"
        for t in (ax.title, ax._left_title, ax._right_title):
            add(f"{where} title", t)
        for t in ax.texts:
            add(f"{where} text", t)
        add(f"{where} legend", ax.get_legend(), text=False)
        if not ax.axison:
            continue
        for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            if not axis.get_visible():
                continue
            add(f"{where} {name}label", axis.label)
            add(f"{where} {name} offset", axis.offsetText)
            for tick in axis._update_ticks():  # the ticks drawn (inside the view)
                for lab in (tick.label1, tick.label2):
                    add(f"{where} {name} tick", lab)
    return out


def _overlap(a, b) -> bool:
    return (
        min(a.x1, b.x1) - max(a.x0, b.x0) > SLACK_PX
        and min(a.y1, b.y1) - max(a.y0, b.y0) > SLACK_PX
    )


def text_collisions(fig, *, draw: bool = True) -> list[str]:
    """What collides on ``fig``: any two pieces of :func:`text_items` that overlap, and any that
    leaves the canvas (one line each; empty if none)."""
    items = text_items(fig, draw=draw)
    w, h = fig.canvas.get_width_height()
    out = []
    for name, b in items:
        if b.x0 < -SLACK_PX or b.y0 < -SLACK_PX or b.x1 > w + SLACK_PX or b.y1 > h + SLACK_PX:
            out.append(
                f"{name} leaves the canvas ({b.x0:.0f}, {b.y0:.0f}, {b.x1:.0f}, {b.y1:.0f} "
                f"in {w} x {h} px)"
            )
    for i, (na, a) in enumerate(items):
        for nb, b in items[i + 1 :]:
            if _overlap(a, b):
                out.append(f"{na} overlaps {nb}")
    return out


def _data_points(ax, r) -> np.ndarray:
    """The data an axes shows, as display points (pixels): every visible line's vertices with
    its segments filled in every ``SLACK_PX`` pixels (so a segment that crosses a box without a
    vertex in it is seen), the offsets of markers (scatter) and the segments of error bars,
    all clipped to the axes' box. Filled areas (bands) are not data here: a legend may sit on
    a band's pale fill, not on its curve."""
    from matplotlib.collections import LineCollection, PathCollection

    paths = []
    for line in ax.lines:
        if line.get_visible() and len(line.get_xydata()):
            paths.append(line.get_transform().transform(line.get_xydata()))
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        if isinstance(coll, PathCollection):
            off = coll.get_offsets()
            if len(off):
                paths.append(coll.get_offset_transform().transform(off))
        elif isinstance(coll, LineCollection):
            for seg in coll.get_segments():
                if len(seg):
                    paths.append(coll.get_transform().transform(seg))
    box = ax.get_window_extent(r)
    out = []
    for p in paths:
        p = p[np.all(np.isfinite(p), axis=1)]
        if len(p) > 1:  # fill in each segment, about one point per pixel
            steps = np.maximum(1, np.ceil(np.abs(np.diff(p, axis=0)).max(axis=1)).astype(int))
            steps = np.minimum(steps, 4000)
            p = np.concatenate(
                [
                    a + np.linspace(0, 1, k, endpoint=False)[:, None] * (b - a)
                    for a, b, k in zip(p[:-1], p[1:], steps, strict=True)
                ]
                + [p[-1:]]
            )
        keep = (p[:, 0] >= box.x0) & (p[:, 0] <= box.x1) & (p[:, 1] >= box.y0) & (p[:, 1] <= box.y1)
        out.append(p[keep])
    return np.concatenate(out) if out else np.empty((0, 2))


def legend_collisions(fig, *, draw: bool = True) -> list[str]:
    """Legends that cover data (docs/pipeline.md#figures-text-never-collides): for every legend
    (an axes' own, and the figure's legends against every axes they overlap), the data points
    of :func:`_data_points` that lie inside the legend's box by more than ``SLACK_PX``; one line
    per legend and axes that it covers (empty if none)."""
    if draw:
        _lay_out(fig)
    r = fig.canvas.get_renderer()
    out = []
    axes = [ax for ax in fig.axes if ax.get_visible()]
    pairs = [(f"axes {k} legend", ax.get_legend(), [(k, ax)]) for k, ax in enumerate(fig.axes)]
    pairs += [
        (f"figure legend {j}", leg, list(enumerate(fig.axes))) for j, leg in enumerate(fig.legends)
    ]
    for name, leg, targets in pairs:
        if leg is None or not leg.get_visible():
            continue
        b = leg.get_window_extent(r)
        for k, ax in targets:
            if ax not in axes:
                continue
            p = _data_points(ax, r)
            inside = (
                (p[:, 0] > b.x0 + SLACK_PX)
                & (p[:, 0] < b.x1 - SLACK_PX)
                & (p[:, 1] > b.y0 + SLACK_PX)
                & (p[:, 1] < b.y1 - SLACK_PX)
            )
            if inside.any():
                out.append(
                    f"{name} covers data of axes {k} ({int(inside.sum())} px of lines/markers)"
                )
    return out


#: Where :func:`place_legends` tries an axes' legend, in this order (matplotlib's loc codes).
LEGEND_PLACES = (
    "upper left",
    "upper right",
    "lower right",
    "lower left",
    "center left",
    "center right",
    "upper center",
    "lower center",
    "center",
)


def _covered(box, points) -> int:
    inside = (
        (points[:, 0] > box.x0 + SLACK_PX)
        & (points[:, 0] < box.x1 - SLACK_PX)
        & (points[:, 1] > box.y0 + SLACK_PX)
        & (points[:, 1] < box.y1 - SLACK_PX)
    )
    return int(inside.sum())


def place_legends(fig) -> int:
    """Move every axes legend that covers data (:func:`legend_collisions`) to the first place of
    :data:`LEGEND_PLACES` where it covers none; if there is none, raise the top of the y axis to
    make room for it above the data and put it at the top (or, if that fails too, where it
    covers the least; the check then reports it). A legend anchored outside its axes
    (``bbox_to_anchor``) and figure legends are left where they are. Returns the legends
    moved (docs/pipeline.md#figures-text-never-collides)."""
    _lay_out(fig)
    r = fig.canvas.get_renderer()
    moved = 0
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None or not leg.get_visible() or leg.get_bbox_to_anchor() != ax.bbox:
            continue
        points = _data_points(ax, r)
        if _covered(leg.get_window_extent(r), points) == 0:
            continue
        start = leg._loc
        texts = [t for t in ax.texts if t.get_visible() and str(t.get_text()).strip()]
        best = _best_place(leg, r, points, LEGEND_PLACES, texts)
        ylim = ax.get_ylim()
        for _ in range(3 if best[0] > 0 else 0):  # no free place: make room above the data
            # (a raised top can show more data, a bar cut at the old top: up to three times)
            _room_above(ax, leg.get_window_extent(r).height)
            _lay_out(fig)
            places = LEGEND_PLACES[:2] + ("upper center",)
            top = _best_place(leg, r, _data_points(ax, r), places, texts)
            if top[0] == 0:
                best = top
                break
        else:
            ax.set_ylim(ylim)  # no room helped: the axis as it was
        leg._loc = best[1]
        moved += int(best[1] != start)
    return moved


def _best_place(leg, r, points, places, texts=()) -> tuple[int, int]:
    """(data pixels covered, loc code) of the first of ``places`` where ``leg`` covers no data
    and none of the ``texts``, or of the one where it covers the least (a text counts as much
    as a thousand pixels of data)."""
    best = None
    boxes = [t.get_window_extent(r) for t in texts]
    for place in places:
        leg.set_loc(place)
        box = leg.get_window_extent(r)
        n = _covered(box, points) + 1000 * sum(_overlap(box, b) for b in boxes)
        if best is None or n < best[0]:
            best = (n, leg._loc)
        if n == 0:
            break
    return best


def _room_above(ax, height_px: float) -> None:
    """Raise the top of ``ax``'s y axis so that a band of ``height_px`` (plus a little) above
    the old top is free for a legend (linear or log axis)."""
    box = ax.get_window_extent()
    frac = min(0.6, (height_px + 6.0) / max(box.height, 1.0))
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "log":
        a, b = np.log10(lo), np.log10(hi)
        ax.set_ylim(lo, 10 ** (a + (b - a) / (1.0 - frac)))
    else:
        ax.set_ylim(lo, lo + (hi - lo) / (1.0 - frac))


#: a TeX command: a backslash and letters (``\gamma``), or a backslash and one sign (``\,``)
_TEX = re.compile(r"\\(?:[A-Za-z]+|[^A-Za-z\s$])")


def caption_problems(text: str) -> list[str]:
    """Raw TeX in a caption (docs/pipeline.md#figures-text-never-collides): a backslash command
    outside ``$...$``, an unpaired ``$``, or a ``$...$`` part that matplotlib's mathtext cannot
    render (parsed here with :class:`matplotlib.mathtext.MathTextParser`). One line each."""
    from matplotlib.mathtext import MathTextParser

    out = []
    parts = re.split(r"(?<!\\)\$", text)
    if len(parts) % 2 == 0:
        out.append("caption has an unpaired '$'")
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out += [f"caption has raw TeX {m!r} outside $...$" for m in _TEX.findall(part)]
        else:
            try:
                MathTextParser("agg").parse(f"${part}$", dpi=72)
            except ValueError as err:
                why = " ".join(str(err).split())[:100]
                out.append(f"caption's mathtext ${part}$ does not render: {why}")
    return out


def fit_caption(fig, pad_pt: float = 4.0) -> float:
    """Make room for the caption of :func:`add_caption`: if it comes closer than ``pad_pt`` to the
    lowest other text or axes, the figure grows at the bottom by the difference and everything
    but the caption keeps its place measured from the top (axes, figure texts, figure legends), so
    nothing is squeezed. Returns the inches added (0 if the caption fitted)."""
    cap = getattr(fig, "_attnscale_caption", None)
    if cap is None:
        return 0.0
    lows = [b.y0 for _, b in text_items(fig, skip=(cap,))]  # draws the figure
    r = fig.canvas.get_renderer()
    box = cap.get_window_extent(r)
    lows += [ax.get_window_extent(r).y0 for ax in fig.axes if ax.get_visible()]
    need_px = box.y1 + pad_pt * fig.dpi / 72.0 - min(lows, default=np.inf)
    if not np.isfinite(need_px) or need_px <= 0:
        return 0.0
    H, dh = fig.get_figheight(), need_px / fig.dpi
    legends = [(leg, leg.get_window_extent(r)) for leg in fig.legends]

    def lift(y):  # a figure fraction, kept at the same distance from the top
        return (y * H + dh) / (H + dh)

    fig.set_figheight(H + dh)
    for ax in fig.axes:
        pos = ax.get_position(original=True)
        ax.set_position([pos.x0, lift(pos.y0), pos.width, pos.height * H / (H + dh)])
    for t in fig.texts:
        if t.get_transform() != fig.transFigure:
            continue
        x, y = t.get_position()
        t.set_position((x, y * H / (H + dh) if t is cap else lift(y)))
    for leg, b in legends:  # anchored where it was, in inches from the top
        fh = fig.dpi * (H + dh)
        leg.set_bbox_to_anchor(
            (
                b.x0 / fig.dpi / fig.get_figwidth(),
                (b.y0 + need_px) / fh,
                b.width / fig.dpi / fig.get_figwidth(),
                b.height / fh,
            ),
            transform=fig.transFigure,
        )
        leg._loc = 3  # lower left of that box
    return dh


def cell_edges(v, log: bool) -> np.ndarray:
    """Cell edges around grid centres (geometric midpoints on a log axis)."""
    v = np.asarray(v, dtype=float)
    if v.size == 1:
        return np.array([v[0] * 0.9, v[0] * 1.1]) if log else np.array([v[0] - 0.5, v[0] + 0.5])
    w = np.log(v) if log else v
    mid = 0.5 * (w[1:] + w[:-1])
    e = np.concatenate([[2 * w[0] - mid[0]], mid, [2 * w[-1] - mid[-1]]])
    return np.exp(e) if log else e
