"""The report's figures (matplotlib Agg backend, seaborn 0.13).

Every builder returns a matplotlib Figure (or None when it has nothing to
show) whose size in inches is fixed by the builder's arguments, saved at DPI
without tight cropping: a PNG's pixel size is exactly figsize x DPI (the
`*_size` functions), so tests can check it.

Conventions in every figure:
- latency on a log scale, "ns per operation (log scale)";
- each repetition is a point, over a box (or beside a median and its 95% CI);
- same CPU / other CPU / not per-CPU side by side in one colour each;
- stand-ins hatched "//" (hollow markers where there is no box) and named
  in the legend; emulated CPUs (qemu-tcg) hatched "xx", their panel titled
  in red "emulated CPU: not hardware figures";
- rows whose energy counter is frozen or has no energy unit (liveness,
  schema 2) hatched ".." with a dotted edge, "frozen" in the tick label
  (hollow pentagons where there is no box) and named in the legend: the
  latency is the route's cost, the counter yields no energy;
- rows that are not ok are a grey "x" at the foot of their slot (the
  tables give the reason).
"""

import textwrap

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from results import liveness, registry  # noqa: E402
from results import table as text_table  # noqa: E402

from plots import labels, pairing  # noqa: E402
from plots.label_overlap import overlapping_texts  # noqa: E402
from plots.runs import Run, source_label  # noqa: E402

DPI = 100
LATENCY_AXIS = "ns per operation (log scale)"
STAND_IN_HATCH, EMULATED_HATCH, DEAD_HATCH = "//", "xx", ".."
DEAD_MARKER = "p"  # where there is no box: a hollow pentagon for a dead counter
DEAD_LABEL = "frozen / no-unit counter: route timed, no energy"
EMULATED_COLOR = "#b00020"
EMULATED_FACE = "#fbe9eb"  # the background of a panel of emulated figures
NOT_OK_COLOR = "0.45"
_CB = sns.color_palette("colorblind", 10)
PLACEMENT_COLORS = dict(zip(labels.PLACEMENTS, _CB[:3]))
MACHINE_COLORS = [_CB[i] for i in (0, 1, 4, 8, 9, 5)]
PUBLISHED_STYLE = [("black", "D"), ("#762a83", "^"), ("#01665e", "v"), ("#8c510a", "s"),
                   ("#4d4d4d", "P"), ("#b35806", "h")]

sns.set_theme(style="whitegrid", context="notebook", font_scale=0.85)
plt.rcParams.update({"savefig.dpi": DPI, "figure.dpi": DPI, "axes.titlesize": 10,
                     "figure.titlesize": 12, "legend.fontsize": 8.5, "legend.title_fontsize": 8.5})


# ---- sizes (inches; pixels = inches x DPI) ------------------------------------------------

def latency_size(n_runs: int) -> tuple[float, float]:
    return 12.0, 2.4 + 3.0 * n_runs


LADDER_SIZE = (11.0, 8.5)


def reference_size(n_quantities: int) -> tuple[float, float]:
    return 12.0, 2.6 + 0.42 * n_quantities


def machines_size(n_quantities: int) -> tuple[float, float]:
    return 12.0, 2.4 + 0.34 * n_quantities


SAMPLER_SIZE = (12.0, 5.0)
OVERHEAD_SIZE = (12.0, 5.6)


def pixels(size: tuple[float, float]) -> tuple[int, int]:
    return round(size[0] * DPI), round(size[1] * DPI)


def save(fig, path) -> tuple[int, int]:
    """Write a PNG of exactly figsize x DPI pixels; returns (width, height)."""
    fig.savefig(path, dpi=DPI, format="png", metadata={"Software": "raplbench plots"})
    size = pixels(tuple(fig.get_size_inches()))
    plt.close(fig)
    return size


# ---- helpers ---------------------------------------------------------------------------------

def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width)) or text


def _darker(color, factor=0.6):
    return tuple(c * factor for c in matplotlib.colors.to_rgb(color))


def _hatch(row: dict) -> str:
    hatch = STAND_IN_HATCH if labels.is_stand_in(row) else ""
    if liveness.is_dead(row):
        hatch += DEAD_HATCH
    if labels.is_emulated(row["machine"]):
        hatch += EMULATED_HATCH
    return hatch or None


def _title_run(ax, run: Run, extra: str = "", width: int = 120):
    """The panel's machine, platform and kernel, left-aligned, wrapped to
    `width` characters (red and bold for an emulated CPU)."""
    name = run.label.replace(" [emulated]", "").replace(" [VM]", "")
    text = f"{name}: {labels.platform(run.machine)}, Linux {run.machine.get('kernel')}"
    ax.set_title(_wrap(text + extra, width), loc="left",
                 color=EMULATED_COLOR if run.emulated else "black",
                 fontweight="bold" if run.emulated else "normal")


def _dead_handle(marker=False):
    if marker:
        return Line2D([], [], marker=DEAD_MARKER, ms=7, mfc="white", color="0.3", lw=2,
                      label=DEAD_LABEL)
    return Patch(facecolor="white", edgecolor="0.3", hatch=DEAD_HATCH, linestyle=":",
                 label=DEAD_LABEL)


def _legend_handles(placements=(), stand_in=False, emulated=False, not_ok=False, points=True,
                    dead=False):
    handles = [Patch(facecolor=PLACEMENT_COLORS[p], edgecolor="0.3", label=p) for p in placements]
    if points:
        handles.append(Line2D([], [], ls="", marker="o", ms=4, color="0.25",
                              label="one repetition"))
    if stand_in:
        handles.append(Patch(facecolor="white", edgecolor="0.3", hatch=STAND_IN_HATCH,
                             label="stand-in (substitute measured)"))
    if dead:
        handles.append(_dead_handle())
    if emulated:
        handles.append(Patch(facecolor=EMULATED_FACE, edgecolor=EMULATED_COLOR,
                             hatch=EMULATED_HATCH, label="emulated CPU (qemu-tcg): not hardware"))
    if not_ok:
        handles.append(Line2D([], [], ls="", marker="x", ms=7, mew=2, color=NOT_OK_COLOR,
                              label="unavailable / error (reason in the table)"))
    return handles


def _figure_legend(fig, handles, ncols=None):
    """Below the axes: a legend above them would compete with the title."""
    fig.legend(handles=handles, loc="outside lower center", ncols=ncols or min(len(handles), 5),
               frameon=False)


def _plain(value: float) -> str:
    """A tick value in plain digits: 0.05, 2, 500, 20 000."""
    if value >= 1:
        return f"{value:,.0f}".replace(",", "\u2009")
    return f"{value:.10f}".rstrip("0")


def log_ticks(ax, axis: str = "y"):
    """Labelled ticks at 1, 2 and 5 times each power of ten when the axis
    spans up to four decades, at each power of ten beyond; plain numbers."""
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    decades = np.log10(hi / lo) if lo > 0 and hi > 0 else 10
    subs = (1.0, 2.0, 5.0) if decades <= 4.2 else (1.0,)
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(LogLocator(base=10, subs=subs, numticks=40))
    target.set_major_formatter(FuncFormatter(lambda v, _: _plain(v)))
    target.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10)))
    target.set_minor_formatter(NullFormatter())


def ratio_ticks(ax):
    """A log2 ratio axis labelled 0.25×, 0.5×, 1×, 2×, 4×."""
    # at most ~6 labels: a wide span (a VM beside bare metal: 16×) skips powers of 2
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=6))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _rung_bands(ax, n):
    """Alternate light bands, one per row of a horizontal chart, so the
    markers offset within a row read as one group."""
    for i in range(0, n, 2):
        ax.axhspan(i - 0.5, i + 0.5, color="0.93", zorder=0, lw=0)
    ax.grid(False, axis="y")


# ---- latency per path family -----------------------------------------------------------------

def _not_run(whole: list[dict]) -> str:
    """"kbench unavailable: proc-read, sys-read; criterion error: powercap"
    for the harness-level rows (op "*") of paths that did not run."""
    groups: dict[tuple, list[str]] = {}
    for r in whole:
        groups.setdefault((r["harness"], r["status"]), []).append(r["path"])
    return "; ".join(f"{h} {status}: {', '.join(sorted(set(paths)))}"
                     for (h, status), paths in groups.items())


def _category(row: dict, multi_path: bool, harness: bool) -> str:
    """The tick label of one box: operation, what it reads, and the harness
    (when several timed it) and "stand-in" where it applies."""
    op, target = row["op"], row.get("target")
    if op.startswith("rdmsr:"):
        lines = ["rdmsr", labels.short_target(op.split(":", 1)[1])]
    elif op.startswith("cpuid:"):
        lines = [f"cpuid leaf {op.split(':', 1)[1]}"]
    else:
        lines = [f"{row['path']} {op}" if multi_path else op]
        short = labels.short_target(target)
        if short:
            lines.append(short)
    if multi_path and op.startswith(("rdmsr:", "cpuid:")):
        lines[0] = f"{row['path']} {lines[0]}"
    tags = ([row["harness"]] if harness else []) + (["stand-in"] if labels.is_stand_in(row) else [])
    tags += [liveness.tag(row)] if liveness.is_dead(row) else []
    if tags:
        lines.append(f"({', '.join(tags)})")
    return "\n".join(lines)


def family_rows(runs: list[Run], paths) -> list[list[dict]]:
    return [[r for r in run.rows if r["metric"] == "latency" and r["path"] in paths]
            for run in runs]


def latency_figure(runs: list[Run], family) -> plt.Figure | None:
    """One latency figure for a path family: a panel per machine, boxes of
    the repetitions per operation, same CPU and other CPU side by side."""
    fam_id, title, paths = family
    per_run = family_rows(runs, paths)
    if not any(r["status"] == "ok" for rows in per_run for r in rows):
        return None
    all_rows = [r for rows in per_run for r in rows if r["op"] != "*"]
    multi_path = len({r["path"] for r in all_rows}) > 1
    harnesses = {}
    for r in all_rows:
        harnesses.setdefault((r["path"], r["op"], r.get("target")), set()).add(r["harness"])

    def cat(r):
        return _category(r, multi_path, len(harnesses[(r["path"], r["op"], r.get("target"))]) > 1)

    # within a path, fastest first (a ladder); what was not measured last
    fastest = {}
    for r in all_rows:
        if r["status"] == "ok":
            fastest[cat(r)] = min(fastest.get(cat(r), r["median"]), r["median"])
    path_order = [p for p in paths]
    ranked = sorted(all_rows, key=lambda r: (path_order.index(r["path"]),
                                             fastest.get(cat(r), float("inf")),
                                             text_table.sort_key(r)))
    order = list(dict.fromkeys(cat(r) for r in ranked))
    places = [p for p in labels.PLACEMENTS if any(labels.placement(r) == p for r in all_rows)]
    fig, axes = plt.subplots(len(runs), 1, figsize=latency_size(len(runs)), sharex=True,
                             sharey=True, squeeze=False, layout="constrained")
    flags = {"stand_in": False, "emulated": False, "not_ok": False, "dead": False}
    for ax, run, rows in zip(axes[:, 0], runs, per_run):
        _latency_panel(ax, run, rows, cat, order, places, flags)
    log_ticks(axes[0, 0], "y")  # shared by every panel, now that all are drawn
    last = axes[-1, 0]
    last.set_xlabel("operation (and what it reads)")
    for label in last.get_xticklabels():
        label.set_rotation(30)
        label.set_horizontalalignment("right")
        label.set_rotation_mode("anchor")
    fig.suptitle(f"{title}: latency per operation")
    _figure_legend(fig, _legend_handles(places, **flags))
    _widen_until_labels_fit(fig)
    return fig


def _widen_until_labels_fit(fig, step: float = 1.15, max_width: float = 30.0) -> None:
    """Widens a figure whose slanted category labels collide (a machine
    with many zones or packages, read by both harnesses) until they fit,
    up to `max_width` inches; a figure that fits keeps its size."""
    while overlapping_texts(fig):
        width, height = fig.get_size_inches()
        if width * step > max_width:
            return
        fig.set_size_inches(width * step, height)


def _edge_style(hatch: str) -> str:
    """A box's edge: dotted for a dead counter, dashed for another hatch."""
    return ":" if DEAD_HATCH in hatch else "--" if hatch else "-"


def _latency_panel(ax, run, rows, cat, order, places, flags):
    samples = []
    for r in rows:
        if r["status"] == "ok" and r["op"] != "*":
            samples += [{"cat": cat(r), "placement": labels.placement(r), "ns": v,
                         "hatch": _hatch(r) or ""} for v in r["samples"] if v > 0]
    df = pd.DataFrame(samples, columns=["cat", "placement", "ns", "hatch"])
    ax.set_yscale("log")
    common = dict(x="cat", y="ns", hue="placement", order=order, hue_order=places, dodge=True,
                  ax=ax, legend=False, log_scale=True)
    for hatch, sub in df.groupby("hatch"):
        sns.boxplot(data=sub, palette=PLACEMENT_COLORS, showfliers=False, width=0.8, gap=0.1,
                    linewidth=1.2 if hatch else 0.9,
                    boxprops={"hatch": hatch or None, "alpha": 0.85,
                              "linestyle": _edge_style(hatch)}, **common)
        flags["stand_in"] |= STAND_IN_HATCH in hatch
        flags["emulated"] |= EMULATED_HATCH in hatch
        flags["dead"] |= DEAD_HATCH in hatch
    if not df.empty:
        sns.stripplot(data=df, palette={p: _darker(c) for p, c in PLACEMENT_COLORS.items()},
                      size=2.6, alpha=0.8, jitter=0.12, zorder=3, **common)
    # rows that are not ok: a grey x at the foot of their slot
    slot = 0.8 / len(places)
    for r in rows:
        if r["status"] == "ok" or r["op"] == "*":
            continue
        x = order.index(cat(r)) - 0.4 + slot * (places.index(labels.placement(r)) + 0.5)
        ax.plot([x], [0.04], marker="x", ms=7, mew=2, color=NOT_OK_COLOR,
                transform=ax.get_xaxis_transform(), clip_on=False, zorder=4)
        flags["not_ok"] = True
    if run.emulated:
        ax.set_facecolor(EMULATED_FACE)
        flags["emulated"] = True
    whole = [r for r in rows if r["op"] == "*" and r["status"] != "ok"]
    if df.empty:
        reason = whole[0]["reason"] if whole else "no row of this family in this run"
        ax.text(0.5, 0.5, _wrap(f"nothing measured on this machine: {reason}", 110),
                transform=ax.transAxes, ha="center", va="center", fontsize=9, color=NOT_OK_COLOR)
    _title_run(ax, run, "" if not whole or df.empty else f" ({_not_run(whole)})")
    ax.set_xlim(-0.5, len(order) - 0.5)
    ax.set_ylabel(LATENCY_AXIS)
    ax.set_xlabel("")
    ax.grid(True, which="major", axis="y", alpha=0.6)
    ax.grid(True, which="minor", axis="y", alpha=0.2)


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
    ("rdmsr PKG energy · kernel loop", (("kinsn", "rdmsr:0x611"), ("kinsn", "rdmsr:0xc001029b")),
     None),
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


def _published_styles(refs):
    sources = list(dict.fromkeys(source_label(r) for r in refs))
    return {s: PUBLISHED_STYLE[i % len(PUBLISHED_STYLE)] for i, s in enumerate(sources)}


def _plot_published(ax, ref, y, style, horizontal=True):
    color, marker = style
    value = pairing.published_value(ref)
    if ref.get("median") is not None or ref.get("mean") is not None:
        ax.plot([value], [y], ls="", marker=marker, ms=6, mfc="white", mec=color, mew=1.6,
                zorder=5)
    else:  # an interval only: a bar with caps and a marker at its midpoint
        ax.errorbar([value], [y], xerr=[[value - ref["ci95_low"]], [ref["ci95_high"] - value]],
                    fmt=marker, ms=5, mfc="white", mec=color, color=color, capsize=3, lw=1.4,
                    zorder=5)


def _plot_local(ax, row, y, color, rng, marker="o", hollow=False, points=True):
    if points:
        ys = y + rng.uniform(-0.1, 0.1, len(row["samples"]))
        xs = [v for v in row["samples"]]
        keep = [i for i, v in enumerate(xs) if v > 0]
        ax.scatter([xs[i] for i in keep], [ys[i] for i in keep], s=9, alpha=0.55,
                   color=color, edgecolors="none" if not hollow else color,
                   facecolors="none" if hollow else color, zorder=3, linewidths=0.8)
    lo, hi, med = row["ci95_low"], row["ci95_high"], row["median"]
    ax.errorbar([med], [y], xerr=[[med - lo], [hi - med]], fmt=marker, ms=6, color=color,
                mfc="white" if hollow else color, mec=color, capsize=2.5, lw=2, zorder=4)


def ladder_figure(run: Run, refs: list[dict]) -> plt.Figure:
    """From nop and mov through cpuid, rdmsr, perf, the MSR device and
    powercap: one machine's latency hierarchy, published figures beside."""
    fig, ax = plt.subplots(figsize=LADDER_SIZE, layout="constrained")
    ax.set_xscale("log")
    rng = np.random.default_rng(0)
    color = MACHINE_COLORS[0] if not run.emulated else EMULATED_COLOR
    ticks, tick_colors, xs = [], [], []
    flags = {"stand_in": False, "not_ok": False, "dead": False}
    for i, rung in enumerate(RUNGS):
        row = rung_row(run.rows, rung)
        label = rung[0]
        if row is None:
            ticks.append(f"{label}  [not measured]")
            tick_colors.append(NOT_OK_COLOR)
        elif row["status"] != "ok":
            ticks.append(f"{label}  [{row['status']}]")
            tick_colors.append(NOT_OK_COLOR)
            flags["not_ok"] = True
        else:
            stand_in, dead = labels.is_stand_in(row), liveness.is_dead(row)
            flags["stand_in"] |= stand_in
            flags["dead"] |= dead
            tags = [t for t, on in (("stand-in", stand_in), (liveness.tag(row), dead)) if on]
            ticks.append(f"{label}  [{', '.join(tags)}]" if tags else label)
            tick_colors.append("black")
            _plot_local(ax, row, i - 0.2, color, rng, marker=DEAD_MARKER if dead else "o",
                        hollow=stand_in or dead)
            xs += row["samples"]
    styles = _published_styles(refs)
    offsets = {}
    for ref in refs:
        i = rung_of(ref) if ref["metric"] == "latency" else None
        if i is None:
            continue
        k = offsets.setdefault(i, 0)
        offsets[i] += 1
        _plot_published(ax, ref, i + 0.05 + 0.13 * k, styles[source_label(ref)])
        xs += [v for v in (pairing.published_value(ref), ref.get("ci95_low")) if v]
    ax.set_yticks(range(len(RUNGS)), ticks)
    for t, c in zip(ax.get_yticklabels(), tick_colors):
        t.set_color(c)
    ax.set_ylim(len(RUNGS) - 0.5, -0.5)
    _rung_bands(ax, len(RUNGS))
    positive = [x for x in xs if x and x > 0]
    if positive:
        ax.set_xlim(min(positive) / 2.5, max(positive) * 2.5)
    log_ticks(ax, "x")
    ax.set_xlabel(LATENCY_AXIS)
    ax.grid(True, which="minor", axis="x", alpha=0.2)
    if run.emulated:
        ax.set_facecolor(EMULATED_FACE)
    _title_run(ax, run, width=80)
    fig.suptitle("Latency ladder: from one instruction to a powercap read")
    handles = [Line2D([], [], ls="", marker="o", ms=4, color=color, alpha=0.6,
                      label="this machine: one repetition"),
               Line2D([], [], marker="o", ms=6, color=color, lw=2,
                      label="this machine: median, 95% CI")]
    if flags["stand_in"]:
        handles.append(Line2D([], [], marker="o", ms=6, mfc="white", color=color, lw=2,
                              label="stand-in (hollow)"))
    if flags["dead"]:
        handles.append(_dead_handle(marker=True))
    handles += [Line2D([], [], ls="", marker=m, ms=6, mfc="white", mec=c, mew=1.6,
                       label=_wrap(f"published: {s}", 60)) for s, (c, m) in styles.items()
                if any(rung_of(r) is not None for r in refs if source_label(r) == s)]
    _figure_legend(fig, handles, ncols=3)
    return fig


# ---- published figures beside the local ones --------------------------------------------------

def _ref_quantity(ref) -> tuple[str, str]:
    return ref["path"], ref["op"]


def reference_quantities(refs):
    return pairing.published_order(refs)


def _quantity_text(key) -> str:
    path, op = key
    if op.startswith("rdmsr:"):
        name = labels.msr_name(op.split(":", 1)[1])
        return f"{path} {op}" + (f" ({name})" if name else "")
    return f"{path} {op}"


def reference_figure(runs: list[Run], refs: list[dict]) -> plt.Figure | None:
    """Every published latency figure, and each machine's row for the same
    path and operation."""
    keys = reference_quantities(refs)
    if not keys:
        return None
    fig, ax = plt.subplots(figsize=reference_size(len(keys)), layout="constrained")
    ax.set_xscale("log")
    rng = np.random.default_rng(1)
    styles = _published_styles([r for r in refs if r["metric"] == "latency"])
    xs, flags = [], {"stand_in": False, "user": False, "dead": False}
    step = 0.45 / max(len(runs), 1)
    measured = set()
    for i, key in enumerate(keys):
        for j, run in enumerate(runs):
            color = EMULATED_COLOR if run.emulated else MACHINE_COLORS[j % len(MACHINE_COLORS)]
            ref = next(r for r in refs if _ref_quantity(r) == key)
            local, how = pairing.best_local(ref, run.rows)
            if local is None or local["status"] != "ok":
                continue
            hollow, dead = labels.is_stand_in(local), liveness.is_dead(local)
            marker = "s" if how == "user-space" else DEAD_MARKER if dead else "o"
            flags["stand_in"] |= hollow
            flags["dead"] |= dead
            flags["user"] |= how == "user-space"
            measured.add(key)
            _plot_local(ax, local, i - 0.45 + step * (j + 0.5), color, rng, marker=marker,
                        hollow=hollow or dead or how == "user-space", points=False)
            xs += [local["ci95_low"], local["ci95_high"]]
        on_rung = [r for r in refs if r["metric"] == "latency" and _ref_quantity(r) == key]
        for k, ref in enumerate(on_rung):
            _plot_published(ax, ref, i + 0.08 + 0.12 * k, styles[source_label(ref)])
            xs += [v for v in (pairing.published_value(ref), ref.get("ci95_low"),
                               ref.get("ci95_high")) if v]
    ax.set_yticks(range(len(keys)), [_quantity_text(k) if k in measured else
                                      f"{_quantity_text(k)}  [not measured here]" for k in keys])
    for k, t in zip(keys, ax.get_yticklabels()):
        if k not in measured:
            t.set_color(NOT_OK_COLOR)
    ax.set_ylim(len(keys) - 0.5, -0.5)
    _rung_bands(ax, len(keys))
    positive = [x for x in xs if x and x > 0]
    ax.set_xlim(min(positive) / 2.5, max(positive) * 2.5)
    log_ticks(ax, "x")
    ax.set_xlabel(LATENCY_AXIS)
    ax.grid(True, which="minor", axis="x", alpha=0.2)
    fig.suptitle("Published figures beside this report's machines (median and 95% CI)")
    handles = [Line2D([], [], marker="o", ms=6, lw=2,
                      color=EMULATED_COLOR if run.emulated else MACHINE_COLORS[j % len(MACHINE_COLORS)],
                      label=_wrap(f"this report: {run.label}"
                                  + (" (emulated CPU: not hardware figures)" if run.emulated else ""),
                                  60)) for j, run in enumerate(runs)]
    if flags["stand_in"]:
        handles.append(Line2D([], [], marker="o", ms=6, mfc="white", color="0.3", lw=2,
                              label="stand-in (hollow)"))
    if flags["dead"]:
        handles.append(_dead_handle(marker=True))
    if flags["user"]:
        handles.append(Line2D([], [], marker="s", ms=6, mfc="white", color="0.3", lw=2,
                              label="user-space instruction for the paper's kernel loop"))
    handles += [Line2D([], [], ls="", marker=m, ms=6, mfc="white", mec=c, mew=1.6,
                       label=_wrap(f"published: {s}", 60)) for s, (c, m) in styles.items()]
    _figure_legend(fig, handles, ncols=3)
    return fig


# ---- machines side by side ----------------------------------------------------------------------

def machines_figure(runs: list[Run], reference: int = 0) -> plt.Figure | None:
    """Medians of the quantities measured on at least two machines, and
    their ratio to the reference machine."""
    from plots.report_tables import machine_quantities
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
    ratios = []
    for j, (run, found) in enumerate(zip(runs, per_run)):
        color = EMULATED_COLOR if run.emulated else MACHINE_COLORS[j % len(MACHINE_COLORS)]
        for i, key in enumerate(keys):
            row = found.get(key)
            if row is None or row["status"] != "ok":
                continue
            y = i - 0.35 + step * (j + 0.5)
            dead = liveness.is_dead(row)
            _plot_local(ax, row, y, color, None, marker=DEAD_MARKER if dead else "o",
                        hollow=labels.is_stand_in(row) or dead, points=False)
            ref_row = per_run[reference].get(key)
            if j != reference and ref_row is not None and ref_row["status"] == "ok":
                ratio = row["median"] / ref_row["median"]
                ratios.append(ratio)
                rax.plot([ratio], [y], ls="", marker=DEAD_MARKER if dead else "o", ms=6,
                         color=color, mfc="white" if labels.is_stand_in(row) or dead else color)
    rax.axvline(1.0, color="0.3", lw=1)
    ax.set_yticks(range(len(keys)), [pairing.quantity_label(k, harness_label) for k in keys])
    ax.set_ylim(len(keys) - 0.5, -0.5)
    for a in (ax, rax):
        _rung_bands(a, len(keys))
    log_ticks(ax, "x")
    ax.set_xlabel(LATENCY_AXIS)
    rax.set_xlabel(_wrap(f"median ÷ median of {runs[reference].label} (log scale; "
                         f"> 1×: slower)", 34))
    if ratios:
        span = max(max(abs(np.log2(r)) for r in ratios), 1.0) + 0.5
        rax.set_xlim(2 ** -span, 2 ** span)
    ratio_ticks(rax)
    for a in (ax, rax):
        a.grid(True, which="minor", axis="x", alpha=0.2)
    fig.suptitle("Machines side by side: latency per operation (median, 95% CI)")
    handles = [Line2D([], [], marker="o", ms=6, lw=2,
                      color=EMULATED_COLOR if run.emulated else MACHINE_COLORS[j % len(MACHINE_COLORS)],
                      label=_wrap(run.label + (" (reference)" if j == reference else ""), 50))
               for j, run in enumerate(runs)]
    if any(labels.is_stand_in(f[k]) for f in per_run for k in keys if k in f):
        handles.append(Line2D([], [], marker="o", ms=6, mfc="white", color="0.3", lw=2,
                              label="stand-in (hollow)"))
    if any(liveness.is_dead(f[k]) for f in per_run for k in keys if k in f):
        handles.append(_dead_handle(marker=True))
    _figure_legend(fig, handles, ncols=min(len(handles), 4))
    return fig


# ---- the sampler --------------------------------------------------------------------------------

def sampler_rows(runs: list[Run]) -> list[tuple[Run, dict]]:
    return [(run, r) for run in runs for r in run.rows if r["path"] == "sampler"]


def sampler_category(row: dict) -> str:
    """The x category of a sampler row: its mechanism, and the null sampler
    (the bare timer loop measured beside it: target "null: ...") apart."""
    return f"{row['op']}\nnull timer" if (row.get("target") or "").startswith("null:") else row["op"]


def _sampler_panel(ax, pairs, metric, ylabel, log, hue_order, colors, order):
    data = [{"mechanism": sampler_category(r), "machine": run.label, "value": v,
             "hatch": _hatch(r) or ""}
            for run, r in pairs if r["metric"] == metric and r["status"] == "ok"
            for v in r["samples"] if not log or v > 0]
    df = pd.DataFrame(data, columns=["mechanism", "machine", "value", "hatch"])
    if log:
        ax.set_yscale("log")
    common = dict(x="mechanism", y="value", hue="machine", order=order, hue_order=hue_order,
                  dodge=True, ax=ax, legend=False, log_scale=log or None)
    for hatch, sub in df.groupby("hatch"):
        sns.boxplot(data=sub, palette=colors, showfliers=False, width=0.8, gap=0.1, linewidth=0.9,
                    boxprops={"hatch": hatch or None, "alpha": 0.85,
                              "linestyle": _edge_style(hatch)}, **common)
    if not df.empty:
        sns.stripplot(data=df, palette={k: _darker(c) for k, c in colors.items()}, size=2.6,
                      alpha=0.8, jitter=0.12, zorder=3, **common)
    slot = 0.8 / len(hue_order)
    for run, r in pairs:
        if r["metric"] == metric and r["status"] != "ok" and sampler_category(r) in order:
            x = order.index(sampler_category(r)) - 0.4 + slot * (hue_order.index(run.label) + 0.5)
            ax.plot([x], [0.04], marker="x", ms=7, mew=2, color=NOT_OK_COLOR,
                    transform=ax.get_xaxis_transform(), clip_on=False, zorder=4)
    ax.set_xlim(-0.5, len(order) - 0.5)
    if log and not df.empty:
        log_ticks(ax, "y")
    ax.set_ylabel(ylabel)
    ax.set_xlabel("sampler mechanism")


def _machine_colors(runs):
    return {run.label: (EMULATED_COLOR if run.emulated else MACHINE_COLORS[j % len(MACHINE_COLORS)])
            for j, run in enumerate(runs)}


MECHANISM_ORDER = registry.MECHANISMS


def _mechanisms(pairs):
    """Categories in mechanism order, each sampler before its null timer."""
    found = list(dict.fromkeys(sampler_category(r) for _, r in pairs))

    def key(category):
        op = category.split("\n")[0]
        return (MECHANISM_ORDER.index(op) if op in MECHANISM_ORDER else 99, op, category)
    return sorted(found, key=key)


def _sampler_legend(fig, runs, pairs):
    colors = _machine_colors(runs)
    handles = [Patch(facecolor=colors[run.label], edgecolor="0.3", label=_wrap(run.label, 50))
               for run in runs if any(p[0] is run for p in pairs)]
    handles.append(Line2D([], [], ls="", marker="o", ms=4, color="0.25", label="one repetition"))
    if any(labels.is_stand_in(r) for _, r in pairs):
        handles.append(Patch(facecolor="white", edgecolor="0.3", hatch=STAND_IN_HATCH,
                             label="stand-in"))
    if any(liveness.is_dead(r) for _, r in pairs):
        handles.append(_dead_handle())
    if any(r["status"] != "ok" for _, r in pairs):
        handles.append(Line2D([], [], ls="", marker="x", ms=7, mew=2, color=NOT_OK_COLOR,
                              label="unavailable / error (reason in the table)"))
    _figure_legend(fig, handles, ncols=min(len(handles), 5))


def sampler_figure(runs: list[Run]) -> plt.Figure | None:
    """Achieved rate and interval jitter of the 1 kHz sampler per mechanism."""
    pairs = sampler_rows(runs)
    if not any(r["metric"] in ("rate_hz", "jitter_us") for _, r in pairs):
        return None
    order = _mechanisms(pairs)
    hue_order = [run.label for run in runs if any(p[0] is run for p in pairs)]
    colors = _machine_colors(runs)
    fig, (ax, jax) = plt.subplots(1, 2, figsize=SAMPLER_SIZE, layout="constrained")
    _sampler_panel(ax, pairs, "rate_hz", "achieved rate (Hz)", False, hue_order, colors, order)
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    ax.axhline(1000, color="0.3", ls="--", lw=1)
    ax.annotate("1 kHz requested", xy=(1.0, 1000), xycoords=("axes fraction", "data"),
                xytext=(-4, 4), textcoords="offset points", ha="right", va="bottom", fontsize=8)
    ax.set_title("Achieved sampling rate")
    _sampler_panel(jax, pairs, "jitter_us", "interval jitter (µs, log scale)", True, hue_order,
                   colors, order)
    jax.set_title("Jitter of the interval between ticks")
    fig.suptitle("The 1 kHz sampler per mechanism, beside its null timer (same deadlines, "
                 "no counter read)")
    _sampler_legend(fig, runs, pairs)
    return fig


def overhead_figure(runs: list[Run], refs: list[dict]) -> plt.Figure | None:
    """The sampler's overhead per mechanism with its 95% CI, and the
    published tool overheads at 1 kHz beside it."""
    pairs = [(run, r) for run, r in sampler_rows(runs) if r["metric"] == "overhead_pct"]
    if not pairs:
        return None
    order = _mechanisms(pairs)
    hue_order = [run.label for run in runs if any(p[0] is run for p in pairs)]
    colors = _machine_colors(runs)
    fig, (ax, hax) = plt.subplots(1, 2, figsize=OVERHEAD_SIZE, width_ratios=(1, 1.15),
                                  layout="constrained")
    data = [{"mechanism": sampler_category(r), "machine": run.label, "value": v}
            for run, r in pairs if r["status"] == "ok" for v in r["samples"]]
    df = pd.DataFrame(data, columns=["mechanism", "machine", "value"])
    if not df.empty:
        sns.stripplot(data=df, x="mechanism", y="value", hue="machine", order=order,
                      hue_order=hue_order, dodge=True, palette=colors, size=3, alpha=0.45,
                      jitter=0.1, legend=False, ax=ax)
    slot = 0.8 / len(hue_order)
    for run, r in pairs:
        x = order.index(sampler_category(r)) - 0.4 + slot * (hue_order.index(run.label) + 0.5)
        if r["status"] != "ok":
            ax.plot([x], [0.04], marker="x", ms=7, mew=2, color=NOT_OK_COLOR,
                    transform=ax.get_xaxis_transform(), clip_on=False)
            continue
        med = r["median"]
        hollow = labels.is_stand_in(r)
        ax.errorbar([x], [med], yerr=[[med - r["ci95_low"]], [r["ci95_high"] - med]], fmt="D",
                    ms=6, color=_darker(colors[run.label]), mfc="white" if hollow else None,
                    capsize=4, lw=2, zorder=5)
    ax.set_xlim(-0.5, len(order) - 0.5)
    ax.set_ylim(bottom=min(0, *(df["value"] if not df.empty else [0])))
    ax.set_xlabel("sampler mechanism")
    ax.set_ylabel("slowdown of the workload (%)")
    ax.set_title(_wrap("This report: stress-ng run time under the 1 kHz sampler "
                       "(median, 95% CI)", 60))
    published = [r for r in refs if r["metric"] == "overhead_pct"]
    if published:
        label = source_label(published[0])
        rows = [r for r in published if source_label(r) == label]
        tools = list(dict.fromkeys(r["op"] for r in rows))
        benches = list(dict.fromkeys(r.get("target") for r in rows))
        matrix = pd.DataFrame(np.nan, index=tools, columns=[f"NAS {b}" for b in benches])
        for r in rows:
            matrix.loc[r["op"], f"NAS {r.get('target')}"] = r["median"]
        sns.heatmap(matrix, annot=True, fmt=".2f", cmap="rocket_r", ax=hax, linewidths=0.5,
                    annot_kws={"fontsize": 7.5},
                    cbar_kws={"label": "run-time overhead (%)", "shrink": 0.85})
        hax.set_title(_wrap(f"Published: {label}: slowdown of NAS benchmarks under "
                            f"each tool at 1 kHz", 62))
        hax.set_xlabel("NAS benchmark")
        hax.set_ylabel("tool sampling RAPL at 1 kHz")
        hax.tick_params(axis="x", rotation=0)
    else:
        hax.axis("off")
        hax.text(0.5, 0.5, "no published overhead figures (results/reference/)",
                 ha="center", va="center", transform=hax.transAxes, color=NOT_OK_COLOR)
    fig.suptitle("Overhead of sampling at 1 kHz")
    _sampler_legend(fig, runs, pairs)
    return fig
