"""The figures beside published ones and across machines: the latency
ladder of one machine (nop to powercap) with the papers' figures, every
published figure beside each machine's row, and machines side by side
with their ratio to a reference machine.
"""

from plots.figures_common import (DEAD_MARKER, EMULATED_FACE, LADDER_SIZE, LATENCY_AXIS,
                                  NOT_OK_COLOR, below_axis_handle, below_axis_mark, darker,
                                  dead_handle, figure_legend, hollow_handle, log_ticks,
                                  machine_color, machines_size, published_style, ratio_ticks,
                                  reference_size, rung_bands, title_run, wrap)

import matplotlib.pyplot as plt  # noqa: E402  (after figures_common: the Agg backend)
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from results import liveness, rapl_msrs  # noqa: E402

from plots import labels, pairing  # noqa: E402
from plots.runs import Run, source_label  # noqa: E402


# ---- the ladder ----------------------------------------------------------------------------

SAME_OR_NONE, OTHER = "same", "other"
RUNGS = (
    ("nop · kernel loop", (("kinsn", "nop"),), None),
    ("nop · user space", (("uinsn", "nop"),), None),
    ("mov · kernel loop", (("kinsn", "mov"),), None),
    ("mov · user space", (("uinsn", "mov"),), None),
    ("BPF map load (mmap)", (("ebpf-mmap", "load"),), SAME_OR_NONE),
    ("cpuid leaf 1 · kernel loop", (("kinsn", "cpuid:0x1"),), None),
    ("cpuid leaf 1 · user space", (("uinsn", "cpuid:0x1"),), None),
    ("rdmsr PKG energy · kernel loop",
     tuple(("kinsn", f"rdmsr:{m.hex}") for m in rapl_msrs.MSRS if m.domain == "package"), None),
    ("perf read · same CPU", (("perf", "read"),), SAME_OR_NONE),
    ("BPF map lookup syscall", (("ebpf-lookup", "lookup"),), SAME_OR_NONE),
    ("/proc read (syscall + VFS)", (("proc-read", "read"),), None),
    ("sysfs read (syscall + VFS)", (("sys-read", "read"),), None),
    ("MSR device pread · same CPU", (("msr-dev", "pread"),), SAME_OR_NONE),
    ("powercap energy_uj pread", (("powercap", "pread"),), SAME_OR_NONE),
    ("powercap open-read-close", (("powercap", "open-read-close"),), SAME_OR_NONE),
    ("perf read · other CPU", (("perf", "read"),), OTHER),
    ("MSR device pread · other CPU", (("msr-dev", "pread"),), OTHER),
)


def _placement_ok(row, want):
    if want is None:
        return True
    other = labels.placement(row) == labels.OTHER_CPU
    return other if want == OTHER else not other


def rung_row(rows: list[dict], rung) -> dict | None:
    """The row a ladder rung shows: ok first, real before stand-in, gbench
    first (pairing's ranking); a harness-level row ("*") explains a path
    that did not run at all."""
    _, keys, want = rung
    found = [r for r in rows if r["metric"] == "latency" and (r["path"], r["op"]) in keys
             and _placement_ok(r, want)]
    if not found:
        found = [r for r in rows if r["metric"] == "latency" and r["op"] == "*"
                 and r["path"] in {p for p, _ in keys}]
    return pairing.preferred(found, keys[0])


def rung_of(ref: dict) -> int | None:
    """The rung a published latency figure stands on (placement not stated:
    a same-CPU rung)."""
    for i, (_, keys, want) in enumerate(RUNGS):
        if (ref["path"], ref["op"]) in keys and want != OTHER:
            return i
    return None


def _plot_published(ax, ref, y):
    """A published figure at y, in its source's style (published_style)."""
    color, marker = published_style(source_label(ref))
    value = pairing.published_value(ref)
    if ref.get("median") is not None or ref.get("mean") is not None:
        ax.plot([value], [y], ls="", marker=marker, ms=6, mfc="white", mec=color, mew=1.6,
                zorder=5)
    else:  # an interval only: a bar with caps and a marker at its midpoint
        ax.errorbar([value], [y], xerr=[[value - ref["ci95_low"]], [ref["ci95_high"] - value]],
                    fmt=marker, ms=5, mfc="white", mec=color, color=color, capsize=3, lw=1.4,
                    zorder=5)


# CI caps taller than the median's marker (ms 6): a CI narrower than the
# marker still shows as its two caps above and below it
CAPSIZE = 4.5


def _plot_local(ax, row, y, color, rng=None, flags=None, user_space=False, below=None):
    """A local row at y: its repetitions as points (given an rng), its median
    and 95% CI. Hollow for a stand-in, a dead counter (a pentagon) and a
    user-space instruction beside the paper's kernel loop (a square); the
    first two noted in flags. A value of 0 or less (the log axis has no
    place for it: a repetition, the CI's low end, the median) is noted in
    `below`, which _latency_axis marks at the axis's floor once its limits
    are set. Returns (marker, hollow)."""
    stand_in, dead = labels.is_stand_in(row), liveness.is_dead(row)
    marker = "s" if user_space else DEAD_MARKER if dead else "o"
    hollow = stand_in or dead or user_space
    if flags is not None:
        flags["stand_in"] |= stand_in
        flags["dead"] |= dead
    if rng is not None:
        ys = y + rng.uniform(-0.1, 0.1, len(row["samples"]))
        xs = row["samples"]
        keep = [i for i, v in enumerate(xs) if v > 0]
        ax.scatter([xs[i] for i in keep], [ys[i] for i in keep], s=9, alpha=0.55,
                   color=color, edgecolors="none" if not hollow else color,
                   facecolors="none" if hollow else color, zorder=3, linewidths=0.8)
    lo, hi, med = row["ci95_low"], row["ci95_high"], row["median"]
    if med <= 0 or lo <= 0 or (rng is not None and min(row["samples"], default=1) <= 0):
        if below is None:
            raise ValueError("a value of 0 or less on a log axis needs a `below` list")
        # the CI's bar from the floor to where it rejoins the axis (the median,
        # or the CI's top where the median is below too), if it reaches below
        bar_to = None if lo > 0 else med if med > 0 else hi if hi > 0 else None
        # filled where the median itself is below (and the row is not hollow)
        below.append({"y": y, "color": color, "filled": med <= 0 and not hollow,
                      "bar_to": bar_to})
    if med > 0:
        ax.errorbar([med], [y], xerr=[[med - lo if lo > 0 else 0], [hi - med]], fmt=marker,
                    ms=6, color=color, mfc="white" if hollow else color, mec=color,
                    capsize=CAPSIZE, lw=2, zorder=4)
    return marker, hollow


def _status_handles(stand_in: bool, dead: bool, color="0.3") -> list:
    """The legend entries of the hollow stand-ins and the dead counters' pentagons."""
    return ([hollow_handle("stand-in (hollow)", color)] if stand_in else []) \
        + ([dead_handle(marker=True)] if dead else [])


def _published_handles(refs: list[dict]) -> list:
    """A legend entry per published source of `refs`, in their order."""
    return [Line2D([], [], ls="", marker=m, ms=6, mfc="white", mec=c, mew=1.6,
                   label=wrap(f"published: {s}", 60))
            for s in dict.fromkeys(source_label(r) for r in refs)
            for c, m in [published_style(s)]]


def _latency_axis(ax, n, xs, below=()):
    """n rungs top down, banded; the log x axis spans the values xs plotted
    (autoscaled for none) with a margin, and a floor further left where a
    value of 0 or less (`below`, from _plot_local) is marked."""
    ax.set_ylim(n - 0.5, -0.5)
    rung_bands(ax, n)
    positive = [x for x in xs if x and x > 0]
    if positive:
        ax.set_xlim(min(positive) / (10 if below else 2.5), max(positive) * 2.5)
    elif below:
        ax.set_xlim(0.1, 10)
    if below:
        _mark_below_axis(ax, below)
    log_ticks(ax, "x")
    ax.set_xlabel(LATENCY_AXIS)
    ax.grid(True, which="minor", axis="x", alpha=0.2)


def _mark_below_axis(ax, below):
    """Each value of 0 or less at the log x axis's floor: a triangle pointing
    left, 2.5% of the axis in from its edge (filled where it is the median's),
    and the CI's bar from there to where it rejoins the axis."""
    lo, hi = ax.get_xlim()
    floor = lo * (hi / lo) ** 0.025
    for mark in below:
        if mark["bar_to"] is not None:
            ax.plot([floor, mark["bar_to"]], [mark["y"], mark["y"]], color=mark["color"], lw=2,
                    zorder=4)
        below_axis_mark(ax, floor, mark["y"], mark["color"], marker="<", filled=mark["filled"])


def ladder_figure(run: Run, refs: list[dict]) -> plt.Figure:
    """From nop and mov through cpuid, rdmsr, perf, the MSR device and
    powercap: one machine's latency hierarchy, published figures beside."""
    fig, ax = plt.subplots(figsize=LADDER_SIZE, layout="constrained")
    ax.set_xscale("log")
    rng = np.random.default_rng(0)
    color = machine_color(run, 0)
    ticks, tick_colors, xs, below = [], [], [], []
    flags = {"stand_in": False, "dead": False}
    for i, rung in enumerate(RUNGS):
        row = rung_row(run.rows, rung)
        label = rung[0]
        if row is None or row["status"] != "ok":
            ticks.append(f"{label}  [{'not measured' if row is None else row['status']}]")
            tick_colors.append(NOT_OK_COLOR)
        else:
            tags = pairing.status_tags(row)
            ticks.append(f"{label}  [{', '.join(tags)}]" if tags else label)
            tick_colors.append("black")
            _plot_local(ax, row, i - 0.2, color, rng, flags, below=below)
            xs += row["samples"] + [row["ci95_low"], row["ci95_high"]]
    offsets = {}
    for ref in refs:
        i = rung_of(ref) if ref["metric"] == "latency" else None
        if i is None:
            continue
        k = offsets.setdefault(i, 0)
        offsets[i] += 1
        _plot_published(ax, ref, i + 0.05 + 0.13 * k)
        xs += [v for v in (pairing.published_value(ref), ref.get("ci95_low"),
                           ref.get("ci95_high")) if v]
    ax.set_yticks(range(len(RUNGS)), ticks)
    for t, c in zip(ax.get_yticklabels(), tick_colors):
        t.set_color(c)
    _latency_axis(ax, len(RUNGS), xs, below)
    if run.emulated:
        ax.set_facecolor(EMULATED_FACE)
    title_run(ax, run, width=80)
    fig.suptitle("Latency ladder: from one instruction to a powercap read")
    handles = [Line2D([], [], ls="", marker="o", ms=4, color=color, alpha=0.6,
                      label="this machine: one repetition"),
               Line2D([], [], marker="o", ms=6, color=color, lw=2,
                      label="this machine: median, 95% CI")]
    handles += _status_handles(flags["stand_in"], flags["dead"], color)
    if below:
        handles.append(below_axis_handle("<", color))
    handles += _published_handles([r for r in refs if r["metric"] == "latency"
                                   and rung_of(r) is not None])
    figure_legend(fig, handles, ncols=3)
    return fig


# ---- published figures beside the local ones --------------------------------------------------

def _quantity_text(key) -> str:
    path, op = key
    if op.startswith("rdmsr:"):
        name = labels.msr_name(op.split(":", 1)[1])
        return f"{path} {op}" + (f" ({name})" if name else "")
    return f"{path} {op}"


def reference_figure(runs: list[Run], refs: list[dict]) -> plt.Figure | None:
    """Every published latency figure, and each machine's row for the same
    path and operation."""
    keys = pairing.published_order(refs)
    if not keys:
        return None
    fig, ax = plt.subplots(figsize=reference_size(len(keys)), layout="constrained")
    ax.set_xscale("log")
    xs, below, flags = [], [], {"stand_in": False, "user": False, "dead": False}
    # a rung's band is i - 0.5 to i + 0.5: the machines above its middle
    # (i - 0.3 to i - 0.04), the published figures below (i + 0.08 to
    # i + 0.32), every marker and CI cap clear of the band's edge (the first
    # and last rungs' edge is the axes' frame)
    def local_y(i, j):
        return i - 0.17 if len(runs) == 1 else i - 0.3 + 0.26 * j / (len(runs) - 1)

    measured = set()
    for i, key in enumerate(keys):
        on_rung = [r for r in refs if r["metric"] == "latency" and (r["path"], r["op"]) == key]
        for j, run in enumerate(runs):
            local, how = pairing.best_local(on_rung[0], run.rows)
            if local is None or local["status"] != "ok":
                continue
            flags["user"] |= how == "user-space"
            measured.add(key)
            _plot_local(ax, local, local_y(i, j), machine_color(run, j),
                        flags=flags, user_space=how == "user-space", below=below)
            xs += [local["median"], local["ci95_low"], local["ci95_high"]]
        published_step = min(0.12, 0.24 / max(len(on_rung) - 1, 1))
        for k, ref in enumerate(on_rung):
            _plot_published(ax, ref, i + 0.08 + published_step * k)
            xs += [v for v in (pairing.published_value(ref), ref.get("ci95_low"),
                               ref.get("ci95_high")) if v]
    ax.set_yticks(range(len(keys)), [_quantity_text(k) if k in measured else
                                      f"{_quantity_text(k)}  [not measured here]" for k in keys])
    for k, t in zip(keys, ax.get_yticklabels()):
        if k not in measured:
            t.set_color(NOT_OK_COLOR)
    _latency_axis(ax, len(keys), xs, below)
    fig.suptitle("Published figures beside this report's machines\n"
                 "each machine: median and 95% CI (bar; its caps show above and below the "
                 "marker where narrower); published: as printed, a median or a 95% interval",
                 fontsize=10)
    handles = [Line2D([], [], marker="o", ms=6, lw=2, color=machine_color(run, j),
                      label=wrap(f"this report: {run.label}"
                                  + (" (emulated CPU: not hardware figures)" if run.emulated else ""),
                                  60)) for j, run in enumerate(runs)]
    handles += _status_handles(flags["stand_in"], flags["dead"])
    if flags["user"]:
        handles.append(hollow_handle("user-space instruction for the paper's kernel loop",
                                     marker="s"))
    if below:
        handles.append(below_axis_handle("<"))
    handles += _published_handles([r for r in refs if r["metric"] == "latency"])
    figure_legend(fig, handles, ncols=3)
    return fig


# ---- machines side by side ----------------------------------------------------------------------

def machines_figure(runs: list[Run], reference: int = 0) -> plt.Figure | None:
    """Medians of the quantities measured on at least two machines, and
    their ratio to the reference machine."""
    from plots.report_tables_compare import machine_quantities
    keys, per_run = machine_quantities(runs)
    keys = [k for k in keys if sum(1 for f in per_run if k in f and f[k]["status"] == "ok") >= 2]
    if len(runs) < 2 or not keys:
        return None
    harness_label = len({k[4] for k in keys}) > 1
    fig, (ax, rax) = plt.subplots(1, 2, figsize=machines_size(len(keys)), sharey=True,
                                  width_ratios=(3, 2), layout="constrained")
    ax.set_xscale("log")
    rax.set_xscale("log", base=2)
    step = 0.7 / len(runs)
    ratios, xs, below = [], [], []
    for j, (run, found) in enumerate(zip(runs, per_run)):
        color = machine_color(run, j)
        for i, key in enumerate(keys):
            row = found.get(key)
            if row is None or row["status"] != "ok":
                continue
            y = i - 0.35 + step * (j + 0.5)
            marker, hollow = _plot_local(ax, row, y, color, below=below)
            xs += [row["median"], row["ci95_low"], row["ci95_high"]]
            reads = {pairing.read_mark(f.get(key)) for f in per_run if f.get(key)}
            if len(reads) > 1:  # machines read different targets here: name this one's
                at = max(row["ci95_high"], row["median"])
                # beside the CI, or beside the floor's mark where it is all below the axis
                ax.annotate(pairing.read_mark(row), (at, y) if at > 0 else (0.025, y),
                            xycoords="data" if at > 0 else ax.get_yaxis_transform(),
                            xytext=(5 if at > 0 else 9, 0), textcoords="offset points",
                            fontsize=6.5, va="center", color=darker(color))
            ref_row = per_run[reference].get(key)
            if j == reference or ref_row is None or ref_row["status"] != "ok" \
                    or ref_row["median"] <= 0:  # no ratio (the left panel marks a 0)
                continue
            if row["median"] <= 0:  # a ratio of 0: at the ratio axis's floor
                below_axis_mark(rax, 0.025, y, color, marker="<",
                                transform=rax.get_yaxis_transform(), filled=not hollow)
            else:
                ratio = row["median"] / ref_row["median"]
                ratios.append(ratio)
                rax.plot([ratio], [y], ls="", marker=marker, ms=6, color=color,
                         mfc="white" if hollow else color)
    rax.axvline(1.0, color="0.3", lw=1)
    ax.set_yticks(range(len(keys)), [pairing.quantity_label(k, harness_label) for k in keys])
    _latency_axis(ax, len(keys), xs, below)
    rung_bands(rax, len(keys))
    rax.set_xlabel(wrap(f"median ÷ median of {runs[reference].label} (log scale; "
                         f"> 1×: slower)", 34))
    if ratios:
        span = max(max(abs(np.log2(r)) for r in ratios), 1.0) + 0.5
        rax.set_xlim(2 ** -span, 2 ** span)
    ratio_ticks(rax)
    rax.grid(True, which="minor", axis="x", alpha=0.2)
    fig.suptitle("Machines side by side: latency per operation (median, 95% CI)")
    handles = [Line2D([], [], marker="o", ms=6, lw=2, color=machine_color(run, j),
                      label=wrap(run.label + (" (reference)" if j == reference else "")
                                 + f": {labels.cpu_count(run.machine)}"
                                 + "".join(f", other CPU {p}"
                                           for p in labels.other_cpu_pairs(run.rows)[:1]), 50))
               for j, run in enumerate(runs)]
    shown = [f[k] for f in per_run for k in keys if k in f]
    handles += _status_handles(any(labels.is_stand_in(r) for r in shown),
                               any(liveness.is_dead(r) for r in shown))
    if below:
        handles.append(below_axis_handle("<"))
    figure_legend(fig, handles, ncols=min(len(handles), 4))
    return fig
