"""Do a figure's texts overlap? Tick labels, axis labels, titles, texts
drawn in the axes, the figure's title and legends, against each other and
the edge of the figure. The tests check every figure of the report with it,
and the latency, sampler and overhead figures widen themselves until their
labels fit (widen_until_labels_fit); the victim figure wraps its axis labels
and notes to their panels instead (wrap_texts_to_their_axes).
"""

import textwrap
from contextlib import contextmanager

import numpy as np


@contextmanager
def drawn(fig):
    """The renderer of `fig` as it stands, drawn again only when something
    changed since its last draw (Figure.stale): a drawing computes the
    constrained layout and every tick, most of a figure's cost, and the
    checks below and figures_common.save share one draw. Measuring texts
    marks the figure changed (a tick update, a rotation set and put back)
    although nothing is; so it is marked unchanged again afterwards, and a
    change made after the block marks it changed as usual."""
    if fig.stale:
        fig.canvas.draw()
    yield fig.canvas.get_renderer()
    fig.stale = False


def _drawn_tick_labels(axis) -> list:
    """The labels of the major ticks inside the view (a locator also
    returns ticks beyond it, which are never drawn)."""
    lo, hi = sorted(axis.get_view_interval())
    return [t.label1 for t in axis.get_major_ticks()
            if t.label1.get_visible() and lo <= t.get_loc() <= hi]


def _corners(box):
    return [(box.x0, box.y0), (box.x1, box.y0), (box.x1, box.y1), (box.x0, box.y1)]


def _text_polygon(text, renderer):
    """The four corners of a text's box in display coordinates: the exact
    rotated rectangle for text rotated about its anchor (our slanted tick
    labels), the bounding box otherwise (exact for 0 and 90 degrees)."""
    angle = text.get_rotation() % 180
    box = text.get_window_extent(renderer)
    if angle % 90 == 0 or text.get_rotation_mode() != "anchor":
        return _corners(box)
    saved = text.get_rotation()
    text.set_rotation(0)
    flat = text.get_window_extent(renderer)
    text.set_rotation(saved)
    ha, va = text.get_horizontalalignment(), text.get_verticalalignment()
    ax_ = {"left": flat.x0, "right": flat.x1}.get(ha, (flat.x0 + flat.x1) / 2)
    ay_ = {"bottom": flat.y0, "baseline": flat.y0, "top": flat.y1}.get(va, (flat.y0 + flat.y1) / 2)
    c, s_ = np.cos(np.radians(saved)), np.sin(np.radians(saved))
    return [(ax_ + c * (x - ax_) - s_ * (y - ay_), ay_ + s_ * (x - ax_) + c * (y - ay_))
            for x, y in _corners(flat)]


def _polygons_overlap(a, b, tolerance) -> bool:
    """Separating axis test for two convex polygons; touching within
    `tolerance` pixels is not an overlap."""
    for poly in (a, b):
        for (x0, y0), (x1, y1) in zip(poly, poly[1:] + poly[:1]):
            nx, ny = y0 - y1, x1 - x0
            norm = np.hypot(nx, ny) or 1.0
            pa = [(nx * x + ny * y) / norm for x, y in a]
            pb = [(nx * x + ny * y) / norm for x, y in b]
            if min(max(pa), max(pb)) - max(min(pa), min(pb)) <= tolerance:
                return False
    return True


# Neighbouring tick labels of one axis need this much space between them
# (pixels, about a space at the report's tick font): slanted multi-line
# labels closer than that interleave, a line of one reading on into a line
# of the next ("(criterion, stand-in)perf group-read"), although their
# rectangles do not intersect.
TICK_GAP = 4.0


def overlapping_texts(fig, tolerance: float = 1.0,
                      tick_gap: float = TICK_GAP) -> list[tuple[str, str]]:
    """Pairs of visible texts that overlap, and texts that cross the edge of
    the figure ("(figure edge)"): tick labels inside the view, axis labels
    and titles of every axes, texts drawn in an axes, the figure's title and
    legends. Two tick labels of the same axis overlap when less than
    `tick_gap` pixels apart. Used by the tests: the report's figures must
    have none."""
    with drawn(fig) as renderer:
        items = _text_items(fig, renderer)
    width, height = fig.canvas.get_width_height()
    found = [(text, "(figure edge)") for text, poly, _ in items
             if min(x for x, _ in poly) < -tolerance or min(y for _, y in poly) < -tolerance
             or max(x for x, _ in poly) > width + tolerance
             or max(y for _, y in poly) > height + tolerance]
    for i, (a, poly_a, axis_a) in enumerate(items):
        for b, poly_b, axis_b in items[i + 1:]:
            # two labels of one axis must keep tick_gap apart; others only not touch
            gap = -tick_gap if axis_a is not None and axis_a is axis_b else tolerance
            if _polygons_overlap(poly_a, poly_b, gap):
                found.append((a, b))
    return found


def _text_items(fig, renderer) -> list:
    """(text, polygon, the axis whose tick label it is, else None) of every
    visible text overlapping_texts checks."""
    items = []  # (text, polygon, the axis whose tick label it is, else None)
    # secondary axes (a panel's top axis) are children of their axes, not in fig.axes
    for ax in [a for parent in fig.axes for a in (parent, *parent.child_axes)]:
        # an axes turned off (ax.axis("off")) draws no ticks and no axis labels
        axes_drawn = (ax.xaxis, ax.yaxis) if ax.axison else ()
        for axis in axes_drawn:
            items += [(t.get_text(), _text_polygon(t, renderer), axis)
                      for t in _drawn_tick_labels(axis) if t.get_text().strip()]
        texts = [*(axis.label for axis in axes_drawn), ax.title, ax._left_title,
                 ax._right_title, *ax.texts]
        items += [(t.get_text(), _text_polygon(t, renderer), None) for t in texts
                  if t.get_visible() and t.get_text().strip()]
    if fig._suptitle is not None:
        items.append((fig._suptitle.get_text(),
                      _corners(fig._suptitle.get_window_extent(renderer)), None))
    for legend in fig.legends:
        items.append(("(legend)", _corners(legend.get_window_extent(renderer)), None))
    return items


def widen_until_labels_fit(fig, step: float = 1.15, max_width: float = 30.0) -> None:
    """Widens a figure whose category labels collide (a machine with many
    zones or packages read by both harnesses; every sampler mechanism beside
    its null timer, or at two placements) until they fit, up to `max_width`
    inches; a figure that fits keeps its size."""
    while overlapping_texts(fig):
        width, height = fig.get_size_inches()
        if width * step > max_width:
            return
        fig.set_size_inches(width * step, height)


def tick_labels_collide(axis, tick_gap: float = TICK_GAP) -> bool:
    """Whether two drawn tick labels of `axis` come closer than `tick_gap`
    pixels, the figure drawn as it stands."""
    with drawn(axis.get_figure()) as renderer:
        polygons = [_text_polygon(t, renderer) for t in _drawn_tick_labels(axis)
                    if t.get_text().strip()]
    return any(_polygons_overlap(a, b, -tick_gap)
               for i, a in enumerate(polygons) for b in polygons[i + 1:])


def texts_over_data(fig, pad: float = 1.0) -> list[str]:
    """Texts drawn in an axes (labels, annotations) whose box covers a data
    point of that axes: a scatter or strip point, a marker or a vertex of a
    line (error bars included). Lines drawn across the whole axes (a
    reference line) are not data. The tests check the report's figures on
    generated runs with it: no value a run can produce may put a label over
    the data."""
    with drawn(fig) as renderer:
        return [text for ax in fig.axes for text in _texts_over_points(ax, renderer, pad)]


def _texts_over_points(ax, renderer, pad: float) -> list[str]:
    """The texts of `ax` whose box covers one of its data points."""
    points = [c.get_offset_transform().transform(c.get_offsets())
              for c in ax.collections if len(c.get_offsets())]
    for line in ax.lines:
        xy = line.get_xydata()
        if len(xy) and not (len(xy) == 2 and line.get_transform() is not ax.transData):
            points.append(line.get_transform().transform(xy))
    if not points:
        return []
    xy = np.concatenate(points)
    found = []
    for text in ax.texts:
        if not (text.get_visible() and text.get_text().strip()):
            continue
        box = text.get_window_extent(renderer).padded(pad)
        inside = ((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1)
                  & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1))
        if inside.any():
            found.append(text.get_text())
    return found


def texts_beyond_their_axes(fig, tolerance: float = 1.0) -> list[str]:
    """Texts drawn in an axes whose box leaves that axes' box (a label of a
    strip too tall for it)."""
    found = []
    with drawn(fig) as renderer:
        for ax in fig.axes:
            frame = ax.get_window_extent(renderer).padded(tolerance)
            for text in ax.texts:
                box = text.get_window_extent(renderer)
                if text.get_visible() and text.get_text().strip() and not (
                        frame.x0 <= box.x0 and box.x1 <= frame.x1
                        and frame.y0 <= box.y0 and box.y1 <= frame.y1):
                    found.append(text.get_text())
    return found


def _room(text, ax, frame, renderer) -> tuple[float, float] | None:
    """(the length of a text along its lines, the room its axes gives it),
    in pixels: an axis label has its axes' side; a horizontal text drawn in
    the axes has from its anchor to the axes' sides, as its alignment spreads
    it; None for any other text."""
    box = text.get_window_extent(renderer)
    if text is ax.xaxis.label:
        return box.width, frame.width
    if text is ax.yaxis.label:
        return (box.height if text.get_rotation() % 180 else box.width), frame.height
    if text not in ax.texts or text.get_rotation() % 360:
        return None
    ha = text.get_horizontalalignment()
    if ha == "left":
        return box.width, frame.x1 - box.x0
    if ha == "right":
        return box.width, box.x1 - frame.x0
    centre = (box.x0 + box.x1) / 2
    return box.width, 2 * min(centre - frame.x0, frame.x1 - centre)


def _too_long(fig, renderer, tolerance: float, texts: bool) -> list:
    """(text, its length, its room) of every axis label longer than its
    axes' side, and (texts True) every horizontal text of an axes that runs
    past its left or right side."""
    found = []
    for ax in fig.axes:
        if not ax.axison:
            continue
        frame = ax.get_window_extent(renderer)
        candidates = [ax.xaxis.label, ax.yaxis.label, *(ax.texts if texts else ())]
        for text in candidates:
            if not (text.get_visible() and text.get_text().strip()):
                continue
            measured = _room(text, ax, frame, renderer)
            if measured is not None and measured[0] > measured[1] + tolerance:
                found.append((text, *measured))
    return found


def labels_longer_than_their_axes(fig, tolerance: float = 1.0) -> list[str]:
    """Axis labels longer than the side of their axes they label: centred
    under (or beside) it, such a label reaches past the panel, off the figure
    at its edge or into the next panel's label (issue 33: victim.png's x
    label ran to the figure's edge)."""
    with drawn(fig) as renderer:
        return [text.get_text() for text, _, _ in _too_long(fig, renderer, tolerance, False)]


def wrap_texts_to_their_axes(fig, rounds: int = 4, min_width: int = 12) -> None:
    """Rewraps each axis label longer than its axes' side, and each
    horizontal text of an axes that runs past its sides, to the number of
    characters that fits (each such text is one paragraph: its line breaks
    are chosen again). The figure is drawn again each round: under a
    constrained layout the panels take the room the shorter lines free."""
    for _ in range(rounds):
        with drawn(fig) as renderer:
            found = _too_long(fig, renderer, 1.0, True)
        if not found:
            return
        for text, length, room in found:
            words = " ".join(text.get_text().split())
            chars = max(len(line) for line in text.get_text().split("\n"))
            width = max(min_width, min(chars - 1, int(chars * room / length) - 1))
            text.set_text(textwrap.fill(words, width))
