"""The latency figures, one per path family: a panel per machine, boxes of
the repetitions per operation, same CPU and other CPU side by side.
"""

from plots.figures_common import (DEAD_HATCH, EMULATED_FACE, EMULATED_HATCH, LATENCY_AXIS,
                                  NOT_OK_COLOR, PLACEMENT_COLORS, STAND_IN_HATCH,
                                  below_axis_mark, boxes_and_points, dodged_x, figure_legend,
                                  latency_size, legend_handles, log_ticks, not_ok_mark,
                                  row_hatch, title_run, wrap)

import matplotlib.pyplot as plt  # noqa: E402  (after figures_common: the Agg backend)
import pandas as pd  # noqa: E402

from results import liveness  # noqa: E402
from results.findings import LATENCY_HARNESSES  # noqa: E402
from results import table as text_table  # noqa: E402

from plots import labels, pairing  # noqa: E402
from plots.label_overlap import widen_until_labels_fit  # noqa: E402
from plots.runs import Run  # noqa: E402


def _not_run(whole: list[dict]) -> str:
    """"kbench unavailable: proc-read, sys-read; criterion error: powercap"
    for the harness-level rows (op "*") of paths that did not run."""
    groups: dict[tuple, list[str]] = {}
    for r in whole:
        groups.setdefault((r["harness"], r["status"]), []).append(r["path"])
    return "; ".join(f"{h} {status}: {', '.join(sorted(set(paths)))}"
                     for (h, status), paths in groups.items())


def _category(row: dict, multi_path: bool, harness: bool, target: bool = True) -> str:
    """The tick label of one slot: operation, what it reads (unless `target`
    is False: machines read different targets there, each panel names its
    own), the harness (when several timed it) and "stand-in" where it
    applies."""
    op, target_text = row["op"], row.get("target")
    if op.startswith("rdmsr:"):
        address = op.split(":", 1)[1]
        lines = ["rdmsr", labels.short_target(address) if target
                 else pairing.quantity(row).what]
    elif op.startswith("cpuid:"):
        lines = [f"cpuid leaf {op.split(':', 1)[1]}"]
    else:
        short = labels.short_target(target_text) if target else ""
        lines = [op, short] if short else [op]
    if multi_path:
        lines[0] = f"{row['path']} {lines[0]}"
    tags = [row["harness"]] if harness else []
    if target:
        tags += pairing.status_tags(row)
    if tags:
        lines.append(f"({', '.join(tags)})")
    return "\n".join(lines)


def _what_it_read(row: dict) -> tuple:
    return (row.get("target"), labels.is_stand_in(row), liveness.tag(row))


def _read_label(row: dict) -> str:
    """What one panel read in a slot the machines share: "msr/tsc\nstand-in"."""
    text = (row["target"].lower() if row["op"].startswith("rdmsr:")
            else labels.short_target(row.get("target")))
    tags = pairing.status_tags(row)
    return "\n".join([text] + ([", ".join(tags)] if tags else []))


def harness_rank(harness: str) -> tuple[int, str]:
    """A harness's place among a route's slots, the same in every path and
    panel: results/findings.LATENCY_HARNESSES (gbench, criterion, kbench),
    then any other by name."""
    return (LATENCY_HARNESSES.index(harness) if harness in LATENCY_HARNESSES
            else len(LATENCY_HARNESSES), harness)


def _route(row: dict) -> tuple:
    """A slot's route: the path, operation and (for rdmsr) the MSR's name."""
    q = pairing.quantity(row)
    return q.path, q.op, q.what


def slots(per_run: list[list[dict]], multi_path: bool):
    """(slot of a row, {(run index, slot): what that run read there}).

    A slot is a route (pairing.quantity without the placement, which the
    boxes dodge by): the same path, operation and harness line up across the
    panels whatever each machine read through it. Where every machine read
    one and the same target, the slot's label names it, as for one machine;
    where they read different ones (the msr/tsc/ stand-in here,
    power/energy-psys there), the label names the route and each panel names
    its own target above the slot; where one machine read several targets
    through a route (powercap zones, MSRs), each target keeps a slot."""
    harnesses: dict[tuple, set] = {}
    reads: dict[tuple, dict[int, set]] = {}
    for i, rows in enumerate(per_run):
        for r in rows:
            if r["op"] != "*":
                harnesses.setdefault(_route(r), set()).add(r["harness"])
                reads.setdefault((_route(r), r["harness"]), {}).setdefault(i, set()).add(
                    _what_it_read(r))
    shared: dict[int, str] = {}
    annotations: dict[tuple[int, str], str] = {}
    for i, rows in enumerate(per_run):
        for r in rows:
            if r["op"] == "*":
                continue
            by_run = reads[(_route(r), r["harness"])]
            several = any(len(found) > 1 for found in by_run.values())
            differ = not several and len(set().union(*by_run.values())) > 1
            label = _category(r, multi_path, len(harnesses[_route(r)]) > 1, target=not differ)
            shared[id(r)] = label
            if differ:
                annotations[(i, label)] = _read_label(r)
    return (lambda r: shared[id(r)]), annotations


def latency_figure(runs: list[Run], family) -> plt.Figure | None:
    """One latency figure for a path family: a panel per machine, a slot per
    route (slots), boxes of the repetitions, same CPU and other CPU side by
    side."""
    fam_id, title, paths = family
    per_run = [[r for r in run.rows if r["metric"] == "latency" and r["path"] in paths]
               for run in runs]
    if not any(r["status"] == "ok" for rows in per_run for r in rows):
        return None
    all_rows = [r for rows in per_run for r in rows if r["op"] != "*"]
    multi_path = len({r["path"] for r in all_rows}) > 1
    cat, annotations = slots(per_run, multi_path)

    # within a path, its routes fastest first (a ladder), what was not
    # measured last; within a route, its harnesses in one order (harness_rank),
    # then each harness's slots (targets) fastest first
    fastest, route_fastest = {}, {}
    for r in all_rows:
        if r["status"] == "ok":
            fastest[cat(r)] = min(fastest.get(cat(r), r["median"]), r["median"])
            route_fastest[_route(r)] = min(route_fastest.get(_route(r), r["median"]),
                                           r["median"])
    ranked = sorted(all_rows, key=lambda r: (paths.index(r["path"]),
                                             route_fastest.get(_route(r), float("inf")),
                                             _route(r), harness_rank(r["harness"]),
                                             fastest.get(cat(r), float("inf")),
                                             text_table.sort_key(r)))
    order = list(dict.fromkeys(cat(r) for r in ranked))
    places = [p for p in labels.WHERE_READ if any(labels.where_read(r) == p for r in all_rows)]
    fig, axes = plt.subplots(len(runs), 1, figsize=latency_size(len(runs)), sharex=True,
                             sharey=True, squeeze=False, layout="constrained")
    flags = {"stand_in": False, "emulated": False, "not_ok": False, "dead": False,
             "below": False}
    for i, (ax, run, rows) in enumerate(zip(axes[:, 0], runs, per_run)):
        _latency_panel(ax, run, rows, cat, order, places, flags)
        _name_what_it_read(ax, order, {slot: text for (j, slot), text in annotations.items()
                                       if j == i})
    if flags["below"]:  # room at the foot for the marks of values of 0 or less
        lo, hi = axes[0, 0].get_ylim()
        if lo > 0 and hi > lo:
            axes[0, 0].set_ylim(lo / (hi / lo) ** 0.08, hi)
    log_ticks(axes[0, 0], "y")  # shared by every panel, now that all are drawn
    last = axes[-1, 0]
    last.set_xlabel("operation (and what it reads)")
    plt.setp(last.get_xticklabels(), rotation=30, horizontalalignment="right",
             rotation_mode="anchor")
    fig.suptitle(f"{title}: latency per operation")
    figure_legend(fig, legend_handles(places, **flags))
    widen_until_labels_fit(fig)
    return fig


def _name_what_it_read(ax, order: list[str], texts: dict[str, str]) -> None:
    """Above a panel, at each slot the machines read different targets
    through, what this machine read there (a secondary x axis at the top)."""
    if not texts:
        return
    top = ax.secondary_xaxis("top")
    slots_here = [i for i, slot in enumerate(order) if slot in texts]
    top.set_xticks(slots_here, [texts[order[i]] for i in slots_here], fontsize=7,
                   color="0.25")
    top.tick_params(axis="x", length=2, pad=1)


def _latency_panel(ax, run, rows, cat, order, places, flags):
    samples = []
    for r in rows:
        if r["status"] == "ok" and r["op"] != "*":
            samples += [{"cat": cat(r), "placement": labels.where_read(r), "ns": v,
                         "hatch": row_hatch(r) or ""} for v in r["samples"] if v > 0]
    df = pd.DataFrame(samples, columns=["cat", "placement", "ns", "hatch"])
    ax.set_yscale("log")
    common = dict(x="cat", y="ns", hue="placement", order=order, hue_order=places, dodge=True,
                  ax=ax, legend=False, log_scale=True)
    hatches = boxes_and_points(df, PLACEMENT_COLORS, common, hatched_linewidth=1.2)
    for flag, hatch in (("stand_in", STAND_IN_HATCH), ("emulated", EMULATED_HATCH),
                        ("dead", DEAD_HATCH)):
        flags[flag] |= any(hatch in h for h in hatches)
    # values of 0 or less (no place on the log axis: dropped from the boxes
    # and points above): a triangle in the placement's colour at the foot of
    # their slot, filled where the median itself is 0 or less
    below = [r for r in rows if r["status"] == "ok" and r["op"] != "*"
             and (r["median"] <= 0 or min(r["samples"], default=1) <= 0)]
    for r in below:
        below_axis_mark(ax, dodged_x(order.index(cat(r)), places.index(labels.where_read(r)),
                                     len(places)), 0.04, PLACEMENT_COLORS[labels.where_read(r)],
                        transform=ax.get_xaxis_transform(), filled=r["median"] <= 0)
        flags["below"] = True
    # rows that are not ok: a grey x at the foot of their slot
    for r in rows:
        if r["status"] == "ok" or r["op"] == "*":
            continue
        not_ok_mark(ax, dodged_x(order.index(cat(r)), places.index(labels.where_read(r)),
                                 len(places)), 0.04, ax.get_xaxis_transform())
        flags["not_ok"] = True
    if run.emulated:
        ax.set_facecolor(EMULATED_FACE)
        flags["emulated"] = True
    whole = [r for r in rows if r["op"] == "*" and r["status"] != "ok"]
    if df.empty and not below:
        reason = whole[0]["reason"] if whole else "no row of this family in this run"
        ax.text(0.5, 0.5, wrap(f"nothing measured on this machine: {reason}", 110),
                transform=ax.transAxes, ha="center", va="center", fontsize=9, color=NOT_OK_COLOR)
    title_run(ax, run, "" if not whole or df.empty else f" ({_not_run(whole)})")
    ax.set_xlim(-0.5, len(order) - 0.5)
    ax.set_ylabel(LATENCY_AXIS)
    ax.set_xlabel("")
    ax.grid(True, which="major", axis="y", alpha=0.6)
    ax.grid(True, which="minor", axis="y", alpha=0.2)
