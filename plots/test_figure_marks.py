"""The marks of the latency figures, the ladder and reference.png (issue 33,
item 4): a published machine keeps one marker and colour in every figure,
reference.png draws each machine's 95% CI and keeps every marker clear of
its frame, the two harnesses keep one order in every path, and a value of
0 ns (or less) on a log axis is marked at the axis's floor, never dropped."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_rgba

from results import rows as rows_mod
from results.findings import LATENCY_HARNESSES

from plots import figures, figures_latency, labels, pairing
from plots.figures_common import BELOW_AXIS_LABEL, PUBLISHED_STYLES, published_style, wrap
from plots.figures_reference import RUNGS, rung_of
from plots.fixtures import AMD, INTEL, KVM_FROZEN, KVM_VICTIM, emulated_copy
from plots.runs import Run, load_references, load_runs, source_label


@pytest.fixture(scope="module")
def fixture_runs():
    return {name: load_runs([path])[0] for name, path in
            (("intel", INTEL), ("amd", AMD), ("kvm-frozen", KVM_FROZEN),
             ("kvm-victim", KVM_VICTIM))}


def emulated_run(run: Run, zero_op: str | None = None) -> Run:
    """`run`'s kbench rows as if measured under QEMU TCG; with zero_op, its
    kinsn row of that operation replaced by a generated one whose samples
    are all 0 ns (the timer's resolution under emulation)."""
    rows = emulated_copy([r for r in run.rows if r["harness"] == "kbench"])
    if zero_op is not None:
        i = next(i for i, r in enumerate(rows) if r["path"] == "kinsn" and r["op"] == zero_op
                 and r["status"] == "ok")
        old = rows[i]
        common = {k: old[k] for k in ("schema_version", "run_id", "timestamp", "machine")}
        rows[i] = rows_mod.measured_row(
            common, harness="kbench", path="kinsn", op=zero_op, target=old["target"],
            cpu=old["cpu"], target_cpu=old["target_cpu"], metric="latency", unit="ns",
            samples=[0.0] * 10, iterations=old.get("iterations"))
        assert rows[i]["median"] == 0.0 and rows[i]["ci95_high"] == 0.0
    return Run(run.path, rows, label=labels.machine_name(rows[0]["machine"]) + " [emulated]")


# ---- 1. one published machine, one style -------------------------------------------------------

def published_marks(fig, refs) -> dict:
    """{source: (marker, edge colour)} of the published entries of the
    figure's legend, after checking that each of `refs` (the published
    figures it draws) is drawn at its value in its source's legend style."""
    by_label = {wrap(f"published: {s}", 60): s for s in map(source_label, refs)}
    legend = fig.legends[0]
    styles = {by_label[t.get_text()]: (h.get_marker(), to_rgba(h.get_markeredgecolor()))
              for h, t in zip(legend.legend_handles, legend.get_texts())
              if t.get_text() in by_label}
    ax = fig.axes[0]
    for ref in refs:
        source = source_label(ref)
        if source not in styles:
            continue
        value = pairing.published_value(ref)
        drawn = [(line.get_marker(), to_rgba(line.get_markeredgecolor()))
                 for line in ax.lines if list(line.get_xdata()) == [value]]
        assert styles[source] in drawn, (source, value, drawn)
    return styles


def test_a_published_machine_has_one_style_in_the_ladder_and_in_reference_png(fixture_runs):
    """The Lenovo laptop was a green ▽ in the ladder (whose refs included the
    overhead table's source) and a purple △ in reference.png."""
    refs = load_references()
    latency_refs = [r for r in refs if r["metric"] == "latency"]
    runs = [fixture_runs["intel"], fixture_runs["amd"]]
    seen = {}
    for run in runs:
        fig = figures.ladder_figure(run, refs)
        on_rungs = [r for r in latency_refs if rung_of(r) is not None]
        for source, style in published_marks(fig, on_rungs).items():
            assert seen.setdefault(source, style) == style, source
        plt.close(fig)
    for some in (runs, runs[:1], [fixture_runs["kvm-victim"]]):
        fig = figures.reference_figure(some, refs)
        for source, style in published_marks(fig, latency_refs).items():
            assert seen.setdefault(source, style) == style, source
        plt.close(fig)
    # a figure given fewer sources, or in another order, draws them alike
    some = list(reversed(latency_refs[-6:]))
    fig = figures.reference_figure(runs, some)
    for source, style in published_marks(fig, some).items():
        assert seen[source] == style, source
    plt.close(fig)
    assert set(seen) == {source_label(r) for r in latency_refs}


def test_every_published_source_has_its_own_listed_style():
    sources = {source_label(r) for r in load_references() if r["metric"] == "latency"}
    assert sources <= set(PUBLISHED_STYLES)  # a renamed source would fall back silently
    assert len({published_style(s) for s in sources}) == len(sources)
    other = "Somebody 2030, Table 9 (a machine)"
    assert published_style(other) == published_style(other)  # not listed: still one style


# ---- 2. reference.png: the CI drawn, no marker on the frame ------------------------------------

def _points(ax):
    """(x, y, radius in pixels) of every marker of `ax` drawn in data
    coordinates: lines with a marker (medians, published figures, CI caps)
    and scatter points."""
    to_px = ax.figure.dpi / 72
    out = []
    for line in ax.lines:
        if line.get_marker() in (None, "None", "", " ") or not line.get_visible() \
                or line.get_transform() != ax.transData:
            continue
        radius = (line.get_markersize() / 2 + line.get_markeredgewidth() / 2) * to_px
        out += [(x, y, radius) for x, y in zip(line.get_xdata(), line.get_ydata())]
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and len(coll.get_offsets()):
            radius = math.sqrt(max(coll.get_sizes())) / 2 * to_px
            out += [(x, y, radius) for x, y in coll.get_offsets()]
    return out


def assert_markers_clear_of_the_frame(ax, margin=0.01, pixels=2.0, name=""):
    """Every marker's data coordinate strictly inside the axis limits with
    `margin` (a fraction of the axis, in log space on a log axis), and its
    drawn extent `pixels` clear of the frame; every CI bar inside the limits."""
    def fraction(value, lo, hi, log):
        if log:
            assert value > 0, value
            return (math.log10(value) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return (value - lo) / (hi - lo)

    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    box = ax.get_window_extent()
    points = _points(ax)
    assert points
    for x, y, radius in points:
        fx = fraction(x, x0, x1, ax.get_xscale() == "log")
        fy = fraction(y, y0, y1, ax.get_yscale() == "log")
        assert margin <= fx <= 1 - margin and margin <= fy <= 1 - margin, (name, x, y)
        px, py = ax.transData.transform((x, y))
        assert box.x0 + radius + pixels <= px <= box.x1 - radius - pixels, (name, x, y)
        assert box.y0 + radius + pixels <= py <= box.y1 - radius - pixels, (name, x, y)
    for coll in ax.collections:
        if isinstance(coll, LineCollection):
            for segment in coll.get_segments():
                for x, y in segment:
                    assert x0 < x < x1 and y0 < y < y1, (name, x, y)


def reference_layouts(fixture_runs):
    intel, amd = fixture_runs["intel"], fixture_runs["amd"]
    emulated = emulated_run(intel)
    return {"one machine": [intel], "two machines": [intel, amd],
            "three machines": [intel, amd, emulated],  # the top rung's marker sat on the frame
            "two VMs": [fixture_runs["kvm-victim"], fixture_runs["kvm-frozen"]],
            "a VM and an emulated CPU": [fixture_runs["kvm-victim"], emulated],
            "four machines": [intel, amd, fixture_runs["kvm-victim"], emulated]}


def test_reference_png_keeps_every_marker_off_its_frame(fixture_runs, refs):
    for name, runs in reference_layouts(fixture_runs).items():
        fig = figures.reference_figure(runs, refs)
        fig.canvas.draw()
        assert_markers_clear_of_the_frame(fig.axes[0], name=name)
        plt.close(fig)


def test_the_ladder_keeps_every_marker_off_its_frame(fixture_runs, refs):
    for run in (*fixture_runs.values(), emulated_run(fixture_runs["intel"])):
        fig = figures.ladder_figure(run, refs)
        fig.canvas.draw()
        assert_markers_clear_of_the_frame(fig.axes[0])
        plt.close(fig)


def test_reference_png_draws_each_machines_95_ci(fixture_runs, refs):
    """Its title says median and 95% CI: each machine's row has its bar from
    ci95_low to ci95_high, with caps that show beside a marker wider than it."""
    runs = [fixture_runs["intel"], fixture_runs["amd"]]
    fig = figures.reference_figure(runs, refs)
    assert "95% CI" in fig._suptitle.get_text()
    ax = fig.axes[0]
    segments = [tuple(np.round(seg[:, 0], 9)) for coll in ax.collections
                if isinstance(coll, LineCollection) for seg in coll.get_segments()]
    caps = {round(x, 9): line.get_markersize() for line in ax.lines
            if line.get_marker() == "|" for x in line.get_xdata()}
    for key in pairing.published_order(refs):
        ref = next(r for r in refs if r["metric"] == "latency" and (r["path"], r["op"]) == key)
        for run in runs:
            local, _ = pairing.best_local(ref, run.rows)
            if local is None or local["status"] != "ok":
                continue
            lo, hi = round(local["ci95_low"], 9), round(local["ci95_high"], 9)
            assert (lo, hi) in segments, (key, run.label)
            # caps taller than the median's marker (ms 6): they show beside it
            assert caps[lo] > 6 and caps[hi] > 6, (key, run.label)
    plt.close(fig)


# ---- 3. the harnesses in one order ------------------------------------------------------------

def harness_orders(fig, runs, family) -> dict:
    """{(path, op): harnesses of its slots in the figure's order, left to right}."""
    ticks = [t.get_text() for t in fig.axes[-1].get_xticklabels()]
    per_run = [[r for r in run.rows if r["metric"] == "latency" and r["path"] in family[2]]
               for run in runs]
    multi_path = len({r["path"] for rows in per_run for r in rows if r["op"] != "*"}) > 1
    cat, _ = figures_latency.slots(per_run, multi_path)
    found = {}
    for rows in per_run:
        for r in rows:
            if r["op"] != "*":
                found.setdefault((r["path"], r["op"]), set()).add((ticks.index(cat(r)),
                                                                   r["harness"]))
    return {key: [h for _, h in sorted(slots)] for key, slots in found.items()}


def test_the_harnesses_keep_one_order_in_every_path(fixture_runs):
    """criterion came before gbench wherever it was the faster (the KVM
    guest's msr-dev and perf group-read): now gbench, then criterion, in
    every route of every figure (results/findings.LATENCY_HARNESSES)."""
    r = fixture_runs
    # where criterion was the faster (Intel's msr-dev, the KVM guests' msr-dev
    # and perf group-read), alone and beside another machine
    layouts = [[r["intel"]], [r["kvm-frozen"]], [r["kvm-victim"], r["amd"]]]
    rank = figures_latency.harness_rank
    assert [rank(h) for h in LATENCY_HARNESSES] == sorted(rank(h) for h in LATENCY_HARNESSES)
    pairs = 0
    for runs in layouts:
        for family in labels.FAMILIES:
            fig = figures.latency_figure(runs, family)
            if fig is None:
                continue
            for key, harnesses in harness_orders(fig, runs, family).items():
                ranks = [rank(h) for h in harnesses]
                assert ranks == sorted(ranks), (family[0], key, harnesses)
                pairs += len(set(harnesses)) > 1
            plt.close(fig)
    assert pairs > 10  # gbench and criterion side by side, many times


# ---- 4. 0 ns on a log axis ---------------------------------------------------------------------

def below_marks(ax):
    return [line for line in ax.lines if line.get_gid() == "below-axis" and line.get_visible()]


def legend_texts(fig):
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_a_0_ns_median_is_marked_in_the_latency_figure(fixture_runs):
    """QEMU TCG's nop: every sample 0 ns, so no box and no point on the log
    axis; a filled triangle at the foot of its slot and a legend entry say so."""
    intel = fixture_runs["intel"]
    family = next(f for f in labels.FAMILIES if "kinsn" in f[2])
    for runs in ([emulated_run(intel, "nop")], [intel, emulated_run(intel, "nop")]):
        fig = figures.latency_figure(runs, family)
        fig.canvas.draw()
        ax = fig.axes[len(runs) - 1]  # the emulated machine's panel
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        (mark,) = below_marks(ax)
        x, y = mark.get_xydata()[0]
        assert round(x) == ticks.index("nop") and 0 < y < 0.1  # its slot, the axis's foot
        assert mark.get_markerfacecolor() != "white"  # the median itself is below the axis
        box = ax.get_window_extent()
        px, py = mark.get_transform().transform((x, y))
        assert box.x0 < px < box.x1 and box.y0 < py < box.y1  # visible, inside the panel
        assert BELOW_AXIS_LABEL in legend_texts(fig)
        assert all(below_marks(other) == [] for other in fig.axes[:len(runs) - 1])
        plt.close(fig)
    fig = figures.latency_figure([intel], family)  # nothing below the axis: no entry
    assert BELOW_AXIS_LABEL not in legend_texts(fig)
    plt.close(fig)


def test_a_0_ns_median_is_marked_in_the_ladder_and_reference_png(fixture_runs, refs):
    intel = fixture_runs["intel"]
    zero = emulated_run(intel, "nop")
    nop_rung = next(i for i, rung in enumerate(RUNGS) if rung[1] == (("kinsn", "nop"),))
    fig = figures.ladder_figure(zero, refs)
    fig.canvas.draw()
    ax = fig.axes[0]
    (mark,) = below_marks(ax)
    x, y = mark.get_xydata()[0]
    assert abs(y - nop_rung) < 0.5 and x < min(r["median"] for r in zero.rows
                                                 if r["status"] == "ok" and r["median"] > 0)
    assert BELOW_AXIS_LABEL in legend_texts(fig)
    assert_markers_clear_of_the_frame(ax)
    plt.close(fig)

    keys = pairing.published_order(refs)
    nop_key = keys.index(("kinsn", "nop"))
    fig = figures.reference_figure([intel, zero], refs)
    fig.canvas.draw()
    ax = fig.axes[0]
    (mark,) = below_marks(ax)
    x, y = mark.get_xydata()[0]
    assert abs(y - nop_key) < 0.5 and x == pytest.approx(ax.get_xlim()[0]
                                                         * (ax.get_xlim()[1] / ax.get_xlim()[0])
                                                         ** 0.025)
    assert BELOW_AXIS_LABEL in legend_texts(fig)
    assert_markers_clear_of_the_frame(ax)
    plt.close(fig)
    assert rung_of({"path": "kinsn", "op": "nop"}) == nop_rung

    fig = figures.machines_figure([intel, zero])  # its latency and its ratio of 0
    fig.canvas.draw()
    ax, rax = fig.axes[:2]
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    nop = ticks.index("kinsn nop · same CPU")
    for panel in (ax, rax):
        (mark,) = below_marks(panel)
        box = panel.get_window_extent()
        px, py = mark.get_transform().transform(mark.get_xydata()[0])
        assert box.x0 < px < box.x1 and box.y0 < py < box.y1
        assert abs(mark.get_ydata()[0] - nop) < 0.5
    assert BELOW_AXIS_LABEL in legend_texts(fig)
    assert_markers_clear_of_the_frame(ax)
    plt.close(fig)


def test_a_ci_reaching_0_ns_runs_to_the_floor(fixture_runs, refs):
    """Some samples 0, the median above: the median where it is, its CI's bar
    from the axis's floor (a hollow triangle there) up to it."""
    intel = fixture_runs["intel"]
    run = emulated_run(intel)
    i = next(i for i, r in enumerate(run.rows) if r["path"] == "kinsn" and r["op"] == "nop")
    old = run.rows[i]
    common = {k: old[k] for k in ("schema_version", "run_id", "timestamp", "machine")}
    rows = list(run.rows)
    rows[i] = rows_mod.measured_row(common, harness="kbench", path="kinsn", op="nop",
                                    target=old["target"], cpu=old["cpu"],
                                    target_cpu=old["target_cpu"], metric="latency", unit="ns",
                                    samples=[0.0] * 4 + [0.002] * 6)
    assert rows[i]["ci95_low"] == 0.0 and rows[i]["median"] > 0
    run = Run(run.path, rows, label=run.label)
    for fig in (figures.ladder_figure(run, refs), figures.reference_figure([run], refs)):
        fig.canvas.draw()
        ax = fig.axes[0]
        (mark,) = below_marks(ax)
        assert mark.get_markerfacecolor() == "white"
        floor = mark.get_xdata()[0]
        assert any(list(line.get_xdata()) == [floor, rows[i]["median"]] for line in ax.lines)
        assert_markers_clear_of_the_frame(ax)
        plt.close(fig)
    family = next(f for f in labels.FAMILIES if "kinsn" in f[2])
    fig = figures.latency_figure([run], family)
    (mark,) = below_marks(fig.axes[0])
    assert mark.get_markerfacecolor() == "white"  # some repetitions below, not the median
    plt.close(fig)
