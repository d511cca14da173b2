"""The sampler's figures: achieved rate and interval jitter of the 1 kHz
sampler per mechanism beside its null timer, and the difference between
them (its rows above the null loop); its overhead beside the published tool
overheads.
"""

from plots.figures_common import (NOISE_LABEL, NOT_OK_COLOR, OVERHEAD_SIZE, SAMPLER_SIZE,
                                  STAND_IN_HATCH, boxes_and_points, ci_errorbar, darker,
                                  dead_handle, dodged_x, figure_legend, log_ticks, machine_color,
                                  not_ok_handle, not_ok_mark, row_hatch, wrap)

import matplotlib.pyplot as plt  # noqa: E402  (after figures_common: the Agg backend)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from results import meaning, registry  # noqa: E402

from plots import labels  # noqa: E402
from plots.label_overlap import widen_until_labels_fit  # noqa: E402
from plots.runs import Run, source_label  # noqa: E402


# The sampler above its null loop (role above-null: one difference per pair
# of windows), a panel per metric under the levels: (metric, y label, title)
DIFFERENCES = (("cpu_us_per_sample", "CPU per tick above null (µs)",
                "Its own CPU per tick: above its null loop"),
               ("rate_hz", "rate above null (Hz)", "Its achieved rate: above its null loop"))
# the figure with the differences' row of panels (without: SAMPLER_SIZE)
SAMPLER_DIFFERENCES_SIZE = (12.0, 8.6)


def sampler_rows(runs: list[Run]) -> list[tuple[Run, dict]]:
    return [(run, r) for run in runs for r in run.rows
            if r["path"] == "sampler" and r["harness"] in ("sampler", "hyperfine")]


def sampler_category(row: dict) -> str:
    """The x category of a sampler row: its mechanism, and the null sampler
    (the bare timer loop measured beside it: role null) apart."""
    return f"{row['op']}\nnull timer" if meaning.of(row).is_null else row["op"]


def _sampler_panel(ax, pairs, metric, ylabel, log, hue_order, colors, order):
    data = [{"mechanism": sampler_category(r), "machine": run.label, "value": v,
             "hatch": row_hatch(r) or ""}
            for run, r in pairs if r["metric"] == metric and r["status"] == "ok"
            for v in r["samples"] if not log or v > 0]
    df = pd.DataFrame(data, columns=["mechanism", "machine", "value", "hatch"])
    if log:
        ax.set_yscale("log")
    common = dict(x="mechanism", y="value", hue="machine", order=order, hue_order=hue_order,
                  dodge=True, ax=ax, legend=False, log_scale=log or None)
    boxes_and_points(df, colors, common)
    for run, r in pairs:
        if r["metric"] == metric and r["status"] != "ok" and sampler_category(r) in order:
            not_ok_mark(ax, dodged_x(order.index(sampler_category(r)),
                                     hue_order.index(run.label), len(hue_order)),
                        0.04, ax.get_xaxis_transform())
    ax.set_xlim(-0.5, len(order) - 0.5)
    if log and not df.empty:
        log_ticks(ax, "y")
    ax.set_ylabel(ylabel)
    ax.set_xlabel("sampler mechanism")


def _machines(runs, pairs):
    """The labels of the machines with rows among pairs, in order, and each
    machine's colour."""
    return ([run.label for run in runs if any(p[0] is run for p in pairs)],
            {run.label: machine_color(run, j) for j, run in enumerate(runs)})


def overhead_category(row: dict) -> str:
    """The x category of an overhead row: its mechanism and where the
    sampler ran ("perf\nsame": the workload's CPU, "perf\nother"); the
    mechanism alone for older rows."""
    where = labels.overhead_placement(row)
    return row["op"] if where is None else f"{row['op']}\n{where.split()[0]}"


def _mechanisms(pairs, category=sampler_category):
    """Categories in mechanism order, each sampler before its null timer."""
    found = list(dict.fromkeys(category(r) for _, r in pairs))

    def key(category):
        op = category.split("\n")[0]
        return (labels.mechanism_rank(op), op, category)
    return sorted(found, key=key)


def _sampler_legend(fig, runs, pairs, extra=()):
    hue_order, colors = _machines(runs, pairs)
    handles = [Patch(facecolor=colors[label], edgecolor="0.3", label=wrap(label, 50))
               for label in hue_order]
    handles.append(Line2D([], [], ls="", marker="o", ms=4, color="0.25", label="one repetition"))
    if any(labels.is_stand_in(r) for _, r in pairs):
        handles.append(Patch(facecolor="white", edgecolor="0.3", hatch=STAND_IN_HATCH,
                             label="stand-in"))
    if any(meaning.of(r).dead for _, r in pairs):
        handles.append(dead_handle())
    handles += extra
    if any(r["status"] != "ok" for _, r in pairs):
        handles.append(not_ok_handle())
    figure_legend(fig, handles)


def sampler_figure(runs: list[Run]) -> plt.Figure | None:
    """Achieved rate and interval jitter of the 1 kHz sampler per mechanism
    beside its null timer; under them, where the runs have its rows above the
    null loop (differences, not rates: on axes of their own), the difference
    per mechanism, the finding: CPU per tick and rate above null, median and
    95% CI, hollow where not resolved (results/meaning.py)."""
    every = sampler_rows(runs)
    pairs = [(run, r) for run, r in every if not meaning.of(r).above_null]
    if not any(r["metric"] in ("rate_hz", "jitter_us") for _, r in pairs):
        return None
    above = [(run, r) for run, r in every if meaning.of(r).above_null
             and r["metric"] in {metric for metric, _, _ in DIFFERENCES}]
    order = _mechanisms(pairs)
    hue_order, colors = _machines(runs, pairs)
    if above:
        fig, ((ax, jax), *below) = plt.subplots(2, 2, figsize=SAMPLER_DIFFERENCES_SIZE,
                                                layout="constrained")
    else:
        fig, (ax, jax) = plt.subplots(1, 2, figsize=SAMPLER_SIZE, layout="constrained")
    _sampler_panel(ax, pairs, "rate_hz", "achieved rate (Hz)", False, hue_order, colors, order)
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    # named in the legend: a label beside the line met the boxes and points
    # near 1000 Hz in a short panel
    ax.axhline(1000, color="0.3", ls="--", lw=1)
    ax.set_title("Achieved sampling rate")
    _sampler_panel(jax, pairs, "jitter_us", "interval jitter (µs, log scale)", True, hue_order,
                   colors, order)
    jax.set_title("Jitter of the interval between ticks")
    title = ("The 1 kHz sampler per mechanism, beside its null timer (same deadlines, "
             "no counter read)")
    extra = [Line2D([], [], ls="--", lw=1, color="0.3", label="1 kHz requested")]
    if above:
        hollow = False
        # a mechanism that did not run (its self-report not ok) keeps its slot
        failed = [(run, r) for run, r in pairs if r["status"] != "ok" and r["harness"] == "sampler"
                  and not meaning.of(r).is_null]
        ops = _mechanisms(above + failed, lambda r: r["op"])
        failed = {(run.label, r["op"]) for run, r in failed}
        for dax, (metric, ylabel, panel_title) in zip(below[0], DIFFERENCES):
            hollow |= _difference_panel(dax, ops, above, failed, metric, hue_order, colors)
            dax.set_ylabel(ylabel)
            dax.set_title(panel_title)
        title += ("\nbelow: the sampler minus its null loop, pair by pair, what reading the "
                  "counter costs")
        extra.append(Line2D([], [], ls="-", marker="D", ms=6, color="0.3",
                            label="above null: median of the pairs' differences, 95% CI"))
        if hollow:
            extra.append(Line2D([], [], ls="--", marker="D", ms=6, mfc="white", color="0.3",
                                label=NOISE_LABEL))
    fig.suptitle(title)
    _sampler_legend(fig, runs, pairs, extra)
    widen_until_labels_fit(fig)
    return fig


def _difference_panel(ax, ops, above, failed, metric, hue_order, colors) -> bool:
    """The rows of `metric` above the null loop, a median and its 95% CI per
    mechanism (`ops`, the x categories) and machine, hollow where not
    resolved (within noise, baseline drift, too few pairs: results/meaning.py);
    a grey x where the mechanism did not run on a machine ((label, op) in
    `failed`). A mechanism that ran without a null loop has no slot. Returns
    whether a point is hollow."""
    rows = {(run.label, r["op"]): r for run, r in above if r["metric"] == metric}
    hollow = False
    for label in hue_order:
        for op in ops:
            x = dodged_x(ops.index(op), hue_order.index(label), len(hue_order))
            r = rows.get((label, op))
            if r is None or r["status"] != "ok":
                if r is not None or (label, op) in failed:
                    not_ok_mark(ax, x, 0.04, ax.get_xaxis_transform())
                continue
            unresolved = meaning.of(r).not_resolved
            ci_errorbar(ax, x, None, r, darker(colors[label]), "D", unresolved,
                        horizontal=False)
            hollow |= unresolved
    ax.axhline(0, color="0.5", lw=0.8, zorder=1)
    ax.set_xticks(range(len(ops)), ops)
    ax.set_xlim(-0.5, len(ops) - 0.5)
    ax.set_xlabel("sampler mechanism")
    return hollow


def overhead_figure(runs: list[Run], refs: list[dict]) -> plt.Figure | None:
    """The sampler's overhead per mechanism with its 95% CI, and the
    published tool overheads at 1 kHz beside it."""
    every = [(run, r) for run, r in sampler_rows(runs) if r["metric"] == "overhead_pct"]
    pairs = [(run, r) for run, r in every if labels.overhead_measure(r) == "wall time"]
    if not pairs:
        return None
    cpu_time = {(run.label, overhead_category(r)): r for run, r in every
                if labels.overhead_measure(r) == "CPU time"}
    order = _mechanisms(pairs, overhead_category)
    hue_order, colors = _machines(runs, pairs)
    # The figures' own words go in a strip under the data (sax, sharing its
    # x), never over it: a label in the data's axes met the data and the
    # other labels for some values (issue 32).
    # wider with more slots than the 20 (5 mechanisms, 2 placements, 2
    # machines) it was drawn for: the strip's upright words keep apart
    slots = len(order) * len(hue_order)
    size = (OVERHEAD_SIZE[0] * max(1.0, slots / 20), OVERHEAD_SIZE[1])
    axes = plt.figure(figsize=size, layout="constrained").subplot_mosaic(
        [["main", "heat"], ["strip", "heat"]], width_ratios=(1, 1.15), height_ratios=(3.2, 1))
    ax, sax, hax = axes["main"], axes["strip"], axes["heat"]
    fig = ax.figure
    sax.sharex(ax)
    data = [{"mechanism": overhead_category(r), "machine": run.label, "value": v}
            for run, r in pairs if r["status"] == "ok" for v in r["samples"]]
    df = pd.DataFrame(data, columns=["mechanism", "machine", "value"])
    if not df.empty:
        sns.stripplot(data=df, x="mechanism", y="value", hue="machine", order=order,
                      hue_order=hue_order, dodge=True, palette=colors, size=3, alpha=0.45,
                      jitter=0.1, legend=False, ax=ax)
    slot = 0.8 / len(hue_order)
    for run, r in pairs:
        x = dodged_x(order.index(overhead_category(r)), hue_order.index(run.label), len(hue_order))
        if r["status"] != "ok":
            not_ok_mark(ax, x, 0.04, ax.get_xaxis_transform(), zorder=None)
            continue
        med, said = r["median"], meaning.of(r)
        hollow = labels.is_stand_in(r) or said.drift
        unresolved = said.unresolved_note is not None or said.drift
        ax.errorbar([x], [med], yerr=[[med - r["ci95_low"]], [r["ci95_high"] - med]], fmt="D",
                    ms=6, color=NOT_OK_COLOR if unresolved else darker(colors[run.label]),
                    mfc="white" if hollow else None, capsize=4, lw=2, zorder=5)
        # a slowdown below 0 is the bare runs moving (meaning.DRIFT), never a saving
        words, grey = ((["baseline drift"] if said.drift else ["not resolved"], True)
                       if unresolved else ([], False))
        extra = labels.above_null_row(run.rows, r["op"])
        if extra is not None and extra["status"] == "ok":
            # grey and marked where its CI holds 0: not a finding of a cost
            said = meaning.of(extra)
            noise = (["(noise)"] if said.within_noise else ["(drift)"] if said.drift
                     else ["(too few)"] if said.too_few else [])
            words[:0] = [f"{extra['median']:+.1f} µs", *noise]
            grey = grey or bool(noise)
        if words:
            # a line per word: rotated, the lines stand side by side, and the
            # longest ("not resolved") fits the strip's height
            sax.text(x, 0.5, "\n".join(words), ha="center", va="center", rotation=90,
                     fontsize=6.5, transform=sax.get_xaxis_transform(),
                     color=NOT_OK_COLOR if grey else darker(colors[run.label]))
        other = cpu_time.get((run.label, overhead_category(r)))
        if other is not None and other["status"] == "ok":
            ax.plot([x + slot * 0.3], [other["median"]], marker="o", ms=4, mfc="white",
                    color=darker(colors[run.label]), zorder=6)
    ax.set_xlim(-0.5, len(order) - 0.5)
    ax.set_ylim(bottom=min(0, *(df["value"] if not df.empty else [0])))
    ax.tick_params(axis="x", labelbottom=False)
    ax.set_xlabel("")
    sax.tick_params(axis="x", labelsize=8)
    sax.set_yticks([])
    sax.set_ylabel("CPU/tick\nabove null", fontsize=7)
    for side in ("top", "right", "left"):
        sax.spines[side].set_visible(False)
    sax.set_xlabel(wrap("sampler mechanism, pinned to the workload's CPU (same) or to another "
                        "(other)", 50))
    ax.set_ylabel("slowdown of the workload (%)")
    ax.axhline(0, color="0.6", lw=0.8, zorder=1)
    ax.set_title(wrap("This report: the pinned stress-ng workload's wall time under the "
                      "1 kHz sampler (◆ median, 95% CI; ○ its CPU time; grey: CI wider than "
                      "its target, not a finding; grey and hollow, 'baseline drift': a CI below "
                      "0, the bare runs moving, not a saving; under it: the sampler's own CPU "
                      "per tick above its null loop, grey '(noise)' where its CI holds 0, "
                      "'(drift)' below 0, '(too few)' with too few pairs for one)", 66))
    published = [r for r in refs if r["metric"] == "overhead_pct"]
    if published:
        label = source_label(published[0])
        rows = [r for r in published if source_label(r) == label]
        tools = list(dict.fromkeys(r["op"] for r in rows))
        benches = list(dict.fromkeys(r.get("target") for r in rows))
        matrix = pd.DataFrame(np.nan, index=tools, columns=[f"NAS {b}" for b in benches])
        for r in rows:
            matrix.loc[r["op"], f"NAS {r.get('target')}"] = r["median"]
        # a tool whose design a mechanism of this report follows says which
        designs = {registry.mechanism(m).design: m for m in registry.MECHANISMS}
        matrix.index = [f"{tool}\n(design of {designs[tool]})" if tool in designs else tool
                        for tool in matrix.index]
        sns.heatmap(matrix, annot=True, fmt=".2f", cmap="rocket_r", ax=hax, linewidths=0.5,
                    annot_kws={"fontsize": 7.5},
                    cbar_kws={"label": "run-time overhead (%)", "shrink": 0.85})
        hax.set_title(wrap(f"Published: {label}: slowdown of NAS benchmarks under "
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
    widen_until_labels_fit(fig)
    return fig
