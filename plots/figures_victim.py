"""The victim side (issue 16): what a read costs the CPU it reads, beside
what it costs the reader (victim_figure: a row per route and victim
placement), and what a sampler costs an idle machine by frequency
(idle_figure: a line per mechanism). plots/README.md says what each shows;
the rows are read by victim_rows.py.
"""

from plots.figures_common import (EMULATED_COLOR, EMULATED_FACE, LATENCY_AXIS, NOISE_LABEL,
                                  NOT_OK_COLOR, PLACEMENT_COLORS, STAND_IN_HATCH, ci_errorbar,
                                  darker, figure_legend, log_ticks, machine_line, not_ok_handle,
                                  not_ok_mark, plain, rung_bands, title_run, wrap)

import math  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402  (after figures_common: the Agg backend)
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter, SymmetricalLogLocator  # noqa: E402

from results import meaning, registry  # noqa: E402
from results.table import median_and_interval  # noqa: E402

from plots import labels  # noqa: E402
from plots import victim_rows as vr  # noqa: E402
from plots.label_overlap import tick_labels_collide, wrap_texts_to_their_axes  # noqa: E402
from plots.runs import Run  # noqa: E402

_CB = sns.color_palette("colorblind", 10)
# the neighbour's rate (right panel): not the placement colours of the left panel
RATE_STYLE = {vr.FLAT_OUT: (_CB[4], "D"), "1000 Hz": (_CB[5], "o")}
OTHER_RATE_STYLE = (_CB[7], "v")
HARNESS_MARKERS = {"gbench": "o", "criterion": "s"}
# one colour a mechanism, in the registry's order (the palette has 10)
MECHANISM_COLORS = dict(zip(registry.MECHANISMS, _CB))
NOT_MEASURED_LABEL = "not measured: unavailable / error (reason in the table)"
# said once where every line of the idle figure is a stand-in (then none is dashed)
ALL_STAND_INS_LABEL = ("all mechanisms here measured on stand-ins (the idle-cost table's "
                       "footnotes name the substitutes)")
STOLEN_AXIS = "time stolen from the victim CPU per read (ns)"
# a line of a route's label at most (a long perf event's name is wrapped)
ROUTE_LABEL_WIDTH = 56
IDLE_WIDTH = 12.0


def victim_size(n_routes: list[int]) -> tuple[float, float]:
    """12 in wide; 0.5 in per route row, plus titles and legend per machine."""
    return 12.0, 1.9 + sum(1.0 + 0.5 * n for n in n_routes)


def idle_size(n_runs: int) -> tuple[float, float]:
    return IDLE_WIDTH, 1.7 + 3.6 * n_runs


# ---- scales --------------------------------------------------------------------------------

def scale_axis(ax, rows: list[dict], axis: str = "x", unit: str = "") -> str:
    """Set a linear, log or symmetric log scale for the medians and CI bounds
    of the rows drawn; resolved: those whose CI excludes 0. Log where the
    positive values span more than 1.5 decades and none is ≤ 0; symmetric
    log (linear within ±t, t the power of ten at or below the smallest
    resolved median) where they span it and some are ≤ 0. Returns the
    words for the axis label ("", "log scale", "symmetric log scale: linear
    within ±t")."""
    values = [v for r in rows for v in (r["median"], r["ci95_low"], r["ci95_high"])
              if v is not None and math.isfinite(v)]
    if not values:
        return ""
    hi = max(abs(v) for v in values)
    resolved = (r["median"] for r in rows if not meaning.of(r).not_resolved)
    positive = [abs(v) for v in resolved if v is not None and v != 0] or [hi]
    floor = 10 ** math.floor(math.log10(min(positive))) if min(positive) > 0 else 1.0
    if hi <= 0 or hi / floor < 30:
        return ""
    set_scale, set_lim = getattr(ax, f"set_{axis}scale"), getattr(ax, f"set_{axis}lim")
    target = getattr(ax, f"{axis}axis")
    if min(values) > 0:
        set_scale("log")
        set_lim(min(values) / 1.6, hi * 1.6)
        return "log scale"
    set_scale("symlog", linthresh=floor, linscale=0.6)
    set_lim(min(min(values) * 1.8, -floor), max(max(values) * 1.8, floor))
    target.set_major_locator(SymmetricalLogLocator(base=10, linthresh=floor,
                                                   subs=(1.0,)))
    target.set_major_formatter(FuncFormatter(lambda v, _: plain(v)))
    target.set_minor_formatter(NullFormatter())
    return f"symmetric log scale, linear within ±{plain(floor)}{' ' + unit if unit else ''}"


def thin_symlog_ticks(fig):
    """A symmetric log axis whose tick labels collide (values over many
    decades both sides of 0 in a narrow panel: "−100 000−10 000") labels
    every other decade, then every third, ... until they do not (the
    locator's numticks sets its stride)."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            locator = axis.get_major_locator()
            if not isinstance(locator, SymmetricalLogLocator):
                continue
            for numticks in (8, 6, 5, 4, 3):
                if not tick_labels_collide(axis):
                    break
                locator.set_params(numticks=numticks)
                ax.stale = True


# ---- the victim figure ---------------------------------------------------------------------

def _route_label(w: vr.Where, stand_in: bool) -> str:
    what = labels.short_target(w.route)
    first = f"{w.path} {labels.op_label(w.op)}" + (f" · {what}" if what else "")
    if stand_in:
        first += " (stand-in)"
    place = vr.placement_of(w)  # same or other CPU: both CPUs known
    if place == labels.NO_TARGET:
        second = place + (f" (reader on CPU {w.cpu})" if w.cpu is not None else "")
    else:
        second = f"{place} {w.cpu}→{w.target_cpu}"
    second += f"; {vr.victim_label(w)}"
    return "\n".join(wrap(line, ROUTE_LABEL_WIDTH) for line in (first, second))


def _routes(run: Run) -> list[tuple[tuple, list[vr.Experiment]]]:
    """[(route key, its experiments by rate)] of a run's route rows, in order."""
    found: dict[tuple, list[vr.Experiment]] = {}
    for e in vr.victim_experiments(run.rows, sampler=False):
        found.setdefault(vr.route_key(e.where), []).append(e)
    return list(found.items())


def _rate_style(label: str):
    return RATE_STYLE.get(label, OTHER_RATE_STYLE)


def victim_figure(runs: list[Run]) -> plt.Figure | None:
    """Reader-side latency and victim-side stolen time per read, a row per
    route and victim placement, a pair of panels per machine."""
    drawn = [(run, routes) for run in runs if (routes := _routes(run))]
    if not drawn:
        return None
    sizes = [len(routes) for _, routes in drawn]
    fig = plt.figure(figsize=victim_size(sizes), layout="constrained")
    grid = fig.add_gridspec(len(drawn), 2, height_ratios=[1.0 + 0.5 * n for n in sizes],
                            width_ratios=(1, 1.15))
    flags = {"harness": set(), "places": set(), "rates": set(), "noise": False,
             "not_ok": False, "no_latency": False}
    for i, (run, routes) in enumerate(drawn):
        lat = fig.add_subplot(grid[i, 0])
        stolen = fig.add_subplot(grid[i, 1], sharey=lat)
        _victim_panels(lat, stolen, run, routes, flags)
        title_run(lat, run, width=50)
    fig.suptitle("What a read costs the CPU it reads (victim side) beside what it costs the "
                 "reader, per route")
    # the panels' width is what the routes' labels leave: an x label or a
    # note wider than its panel ran off the figure (issue 33)
    wrap_texts_to_their_axes(fig)
    figure_legend(fig, _victim_legend(flags), ncols=4)
    thin_symlog_ticks(fig)
    return fig


def _victim_panels(lat, stolen, run, routes, flags):
    n = len(routes)
    ticks = []
    any_latency = False
    drawn = []
    for y, (key, exps) in enumerate(routes):
        w = exps[0].where
        stand_in = any(labels.is_stand_in(e.first) for e in exps)
        ticks.append(_route_label(w, stand_in))
        # reader side: the route's latency rows
        found = vr.latency_rows(run.rows, w)
        place = vr.placement_of(w)
        if not any(r["status"] == "ok" for r in found.values()):
            not_ok_mark(lat, 0.02, y, lat.get_yaxis_transform())
            flags["no_latency"] = True
        for j, (harness, r) in enumerate(found.items()):
            if r["status"] != "ok":
                continue
            offset = (j - (len(found) - 1) / 2) * 0.22
            ci_errorbar(lat, None, y + offset, r, darker(PLACEMENT_COLORS[place], 0.85),
                        HARNESS_MARKERS.get(harness, "^"), False)
            flags["harness"].add(harness)
            any_latency = True
            flags["places"].add(place)
        # victim side: stolen ns per read, one mark per rate
        rates = sorted(exps, key=lambda e: (not e.where.rate_known, e.where.rate_hz is not None,
                                            e.where.rate_hz or 0))
        not_ok = []
        for j, e in enumerate(rates):
            r = e.get(vr.STOLEN)
            offset = (j - (len(rates) - 1) / 2) * 0.24
            label = e.where.rate_label
            color, marker = _rate_style(label)
            if r is None or r["status"] != "ok":
                not_ok.append(label)
                not_ok_mark(stolen, 0.015, y + offset, stolen.get_yaxis_transform())
                continue
            noise = meaning.of(r).not_resolved
            ci_errorbar(stolen, None, y + offset, r, color, marker, noise)
            flags["rates"].add(label)
            flags["noise"] |= noise
            drawn.append(r)
        if not_ok:
            flags["not_ok"] = True
            status = sorted({(e.get(vr.STOLEN) or e.first)["status"] for e in exps
                             if e.where.rate_label in not_ok})
            stolen.text(0.04, y, f"not measured ({', '.join(not_ok)}): {'/'.join(status)}, "
                        "reason in the victim table", transform=stolen.get_yaxis_transform(),
                        va="center", ha="left", fontsize=7.5, color=NOT_OK_COLOR)
    for ax in (lat, stolen):
        rung_bands(ax, n)
        ax.set_ylim(n - 0.5, -0.5)
    lat.set_yticks(range(n), ticks, fontsize=7.5)
    stolen.tick_params(axis="y", labelleft=False)
    if any_latency:
        lat.set_xscale("log")
        log_ticks(lat, "x")
    else:  # a run without the latency steps (bench_all --only victim): nothing to scale
        lat.set_xticks([])
        lat.text(0.5, 0.5, "no latency rows in this run", ha="center", va="center",
                 transform=lat.transAxes, fontsize=9, color=NOT_OK_COLOR)
    lat.set_xlabel(wrap(f"reader side: {LATENCY_AXIS}", 60))
    words = scale_axis(stolen, drawn, unit="ns")
    stolen.axvline(0, color="0.5", lw=0.8, zorder=1)
    stolen.set_xlabel(wrap(f"victim side: {STOLEN_AXIS}" + (f" ({words})" if words else ""),
                           70))
    stolen.set_title("stolen ns per read: median, 95% CI over pairs of windows", fontsize=9)
    if run.emulated:
        for ax in (lat, stolen):
            ax.set_facecolor(EMULATED_FACE)


def _victim_legend(flags):
    handles = [Patch(facecolor=darker(PLACEMENT_COLORS[p], 0.85), edgecolor="0.3",
                     label=f"latency, reader on the {p}" if p != labels.NO_TARGET
                     else f"latency, {p} counter") for p in labels.PLACEMENTS
               if p in flags["places"]]
    handles += [Line2D([], [], ls="", marker=HARNESS_MARKERS[h], ms=6, color="0.3",
                       label=f"{h} latency") for h in vr.LATENCY_HARNESSES if h in flags["harness"]]
    for label in sorted(flags["rates"], key=lambda s: (s != vr.FLAT_OUT, s)):
        color, marker = _rate_style(label)
        handles.append(Line2D([], [], ls="", marker=marker, ms=6, color=color,
                              label=f"stolen, reader {label}"))
    if flags["noise"]:
        handles.append(Line2D([], [], ls="--", marker="o", ms=6, mfc="white", color="0.3",
                              label=NOISE_LABEL))
    if flags["not_ok"] or flags["no_latency"]:
        handles.append(not_ok_handle(NOT_MEASURED_LABEL))
    return handles


# ---- the idle figure -----------------------------------------------------------------------

IDLE_PANELS = ((vr.WAKEUPS, "wakeups per second above baseline",
                "Wakeups: interrupts + softirqs"),
               (vr.BUSY, "busy % of one CPU above baseline",
                "CPU time of the whole machine"),
               (vr.DEEP_IDLE, "deepest C-state residency above baseline (% of CPU time)",
                "Deep idle (C-state residency)"))


def _baseline_text(exps, metric) -> str:
    """" (baseline 0.944 %)": the median of the experiments' baselines, in 3
    significant digits with its unit as the idle-cost table gives it
    (results/table.py)."""
    based = [e.get(metric) for e in exps if vr.baseline(e.get(metric)) is not None]
    if not based:
        return ""
    median = float(np.median([vr.baseline(r) for r in based]))
    shown, _ = median_and_interval({"status": "ok", "unit": based[0]["unit"], "median": median})
    return f" (baseline {shown})"


def idle_figure(runs: list[Run]) -> plt.Figure | None:
    """Wakeups and busy % above baseline against the sampling frequency, a
    line per mechanism, a row of panels per machine. A stand-in's line is
    dashed beside real counters' lines; where every line is a stand-in, all
    are solid and the legend says so once (ALL_STAND_INS_LABEL)."""
    drawn = [(run, exps) for run in runs if (exps := vr.idle_experiments(run.rows))]
    if not drawn:
        return None
    deep = any(e.get(vr.DEEP_IDLE) is not None for _, exps in drawn for e in exps)
    ncols = 3 if deep else 2
    fig, axes = plt.subplots(len(drawn), ncols, figsize=idle_size(len(drawn)), squeeze=False,
                             layout="constrained")
    lines = [stand_in for _, exps in drawn for metric, _, _ in IDLE_PANELS[:ncols]
             for stand_in in _line_stand_ins(exps, metric).values()]
    # dashed tells a stand-in from a real counter; where every line is one,
    # the dashes tell nothing: all solid, and the legend says it once
    flags = {"mechanisms": {}, "noise": False, "unavailable": set(),
             "dash": not (lines and all(lines))}
    for i, (run, exps) in enumerate(drawn):
        for j, (metric, ylabel, title) in enumerate(IDLE_PANELS[:ncols]):
            _idle_panel(axes[i, j], run, exps, metric, ylabel, title, flags)
        if len(drawn) > 1:  # the machine of each row, above its first panel's title
            first = axes[i, 0]
            first.set_title(f"{run.label}\n{first.get_title()}", fontsize=9,
                            color=EMULATED_COLOR if run.emulated else "black")
    title = ("What a sampler costs an otherwise idle machine, by sampling frequency: medians "
             "of pairs of windows with and without it, 95% CI")
    if len(drawn) == 1:
        run = drawn[0][0]
        title += "\n" + wrap(machine_line(run), 110)  # as wide as the line above
    fig.suptitle(title)
    figure_legend(fig, _idle_legend(flags), ncols=4)
    thin_symlog_ticks(fig)
    return fig


def _drawn_rows(exps, metric) -> list[tuple[vr.Experiment, dict]]:
    """The (experiment, row) of the idle panel of `metric`: ok, at a frequency."""
    return [(e, r) for e in exps if (r := e.get(metric)) is not None
            and r["status"] == "ok" and e.where.rate_hz]


def _line_stand_ins(exps, metric) -> dict[str, bool]:
    """{mechanism: whether its line in the panel of `metric` is a stand-in}."""
    found: dict[str, bool] = {}
    for e, r in _drawn_rows(exps, metric):
        found[e.where.op] = found.get(e.where.op, False) or labels.is_stand_in(r)
    return found


def _idle_panel(ax, run, exps, metric, ylabel, title, flags):
    rows = [(e, e.get(metric)) for e in exps if e.get(metric) is not None]
    ok = _drawn_rows(exps, metric)
    if not ok:
        reason = next((r["reason"] for _, r in rows if r.get("reason")), None)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
        if metric == vr.DEEP_IDLE:
            text = "No C-state residency to show: " + (reason or "no deep_idle_pct row")
        else:
            text = f"not measured on this machine: {reason}" if reason else "no row"
        ax.text(0.5, 0.5, wrap(text, 44), transform=ax.transAxes, ha="center", va="center",
                fontsize=8, color=NOT_OK_COLOR)
        ax.set_title(title + _baseline_text(exps, metric), fontsize=9)
        flags["unavailable"].update(e.where.op for e, _ in rows)
        return
    by_mech: dict[str, list] = {}
    for e, r in ok:
        by_mech.setdefault(e.where.op, []).append((e.where.rate_hz, r, e))
    drawn = []
    for op, points in sorted(by_mech.items(), key=lambda kv: labels.mechanism_rank(kv[0])):
        points.sort(key=lambda p: p[0])
        stand_in = any(labels.is_stand_in(r) for _, r, _ in points)
        color = MECHANISM_COLORS.get(op, "0.3")
        ax.plot([p[0] for p in points], [p[1]["median"] for p in points], color=color,
                ls="--" if stand_in and flags["dash"] else "-", lw=1.4, zorder=3)
        for rate, r, _ in points:
            noise = meaning.of(r).not_resolved
            ci_errorbar(ax, rate, None, r, color, "o", noise, size=5, horizontal=False)
            flags["noise"] |= noise
            drawn.append(r)
        flags["mechanisms"][op] = flags["mechanisms"].get(op, False) or stand_in
    flags["unavailable"].update(e.where.op for e, r in rows if r["status"] != "ok")
    ax.set_xscale("log")
    rates = sorted({p[0] for pts in by_mech.values() for p in pts})
    ax.set_xticks(rates, [plain(r) for r in rates])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(rates[0] / 2, rates[-1] * 2)
    words = scale_axis(ax, drawn, axis="y", unit=ok[0][1]["unit"])
    if words == "log scale":
        log_ticks(ax, "y")
    ax.axhline(0, color="0.5", lw=0.8, zorder=1)
    ax.set_xlabel("sampling frequency (Hz, log scale)")
    ax.set_ylabel(ylabel + (f"\n({words})" if words else ""), fontsize=8.5)
    ax.set_title(title + _baseline_text(exps, metric), fontsize=9)
    if run.emulated:
        ax.set_facecolor(EMULATED_FACE)
        ax.title.set_color(EMULATED_COLOR)


def _idle_legend(flags):
    handles = []
    for op in sorted(flags["mechanisms"], key=labels.mechanism_rank):
        stand_in = flags["mechanisms"][op] and flags["dash"]
        handles.append(Line2D([], [], ls="--" if stand_in else "-", marker="o", ms=5,
                              color=MECHANISM_COLORS.get(op, "0.3"),
                              label=f"{op} (stand-in, dashed)" if stand_in else op))
    if flags["mechanisms"] and not flags["dash"]:
        handles.append(Patch(facecolor="white", edgecolor="0.3", hatch=STAND_IN_HATCH,
                             label=ALL_STAND_INS_LABEL))
    if flags["noise"]:
        handles.append(Line2D([], [], ls="--", marker="o", ms=5, mfc="white", color="0.3",
                              label=NOISE_LABEL))
    missing = sorted(flags["unavailable"] - set(flags["mechanisms"]), key=labels.mechanism_rank)
    if missing:
        handles.append(not_ok_handle(f"not measured: {', '.join(missing)} (reason in the table)"))
    return handles
