"""What every figure of the report shares: the backend (Agg), the seaborn
theme, colours, hatches and markers, the figure sizes (pixels = inches x
DPI), saving, and the helpers for titles, legends and log-scale ticks. The
conventions they implement are listed in plots/figures.py.
"""

import re
import textwrap
import weakref
import zlib

import matplotlib

matplotlib.use("Agg")

import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from results import liveness  # noqa: E402
from results.files import replacing  # noqa: E402

from plots import labels  # noqa: E402
from plots.label_overlap import drawn, tick_labels_collide  # noqa: E402
from plots.runs import Run  # noqa: E402

DPI = 100
LATENCY_AXIS = "ns per operation (log scale)"
STAND_IN_HATCH, EMULATED_HATCH, DEAD_HATCH = "//", "xx", ".."
DEAD_MARKER = "p"  # where there is no box: a hollow pentagon for a dead counter
DEAD_LABEL = "frozen / no-unit counter: route timed, no energy"
EMULATED_COLOR = "#b00020"
EMULATED_FACE = "#fbe9eb"  # the background of a panel of emulated figures
NOT_OK_COLOR = "0.45"
# the grey x of a row that is not ok, in a figure and in its legend
NOT_OK_MARKER = {"marker": "x", "ms": 7, "mew": 2, "color": NOT_OK_COLOR}
_CB = sns.color_palette("colorblind", 10)
PLACEMENT_COLORS = {**dict(zip(labels.PLACEMENTS, _CB[:3])),
                    # another CPU in a target state: none the colour of a plain "other CPU"
                    **dict(zip(map(labels.other_cpu_in, labels.TARGET_STATES),
                               (_CB[8], _CB[3], _CB[4])))}
MACHINE_COLORS = [_CB[i] for i in (0, 1, 4, 8, 9, 5)]
# A published machine's (colour, marker), the same in every figure that draws
# published figures (the ladder, reference.png): keyed by the published
# source's label (plots.runs.source_label), never by the order in which a
# figure meets its sources. A source not listed (a new reference file) takes
# one of OTHER_PUBLISHED_STYLES by a checksum of its label: still one style
# per source in every figure; list it here to choose it.
PUBLISHED_STYLES = {
    "Diamond & Stoico 2026, Table 3 (Intel 8809G)": ("black", "D"),
    "Diamond & Stoico 2026, Table 1 (Intel 8809G)": ("black", "D"),  # the same machine
    "Raffin & Trystram 2024, Table III (Lenovo Thinkpad L15 Gen1 laptop, Linux 6.1; "
    "CPU not stated)": ("#762a83", "^"),
    "Raffin & Trystram 2024, Table III (2x AMD EPYC 7702, Linux 4.18.0)": ("#01665e", "v"),
    "Raffin & Trystram 2024, Table III (2x Intel Xeon E5-2680 v4, Linux 4.18.0)":
        ("#8c510a", "s"),
}
OTHER_PUBLISHED_STYLES = (("#4d4d4d", "P"), ("#b35806", "h"), ("#2166ac", "X"),
                          ("#1b7837", "*"), ("#c51b7d", "d"), ("#542788", "8"))
# a value of 0 or less cannot sit on a log axis: it is marked at the axis's
# floor (below_axis_mark) with this legend entry, never dropped
BELOW_AXIS_LABEL = "0 ns or less (below the log axis): marked at its floor"

# the legend entry of a hollow ci_errorbar
NOISE_LABEL = ("95% CI holds 0 (within noise), lies below 0 (baseline drift, not a saving) "
               "or too few pairs: not resolved (hollow)")

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
    """Write a PNG of exactly figsize x DPI pixels; returns (width, height).
    The pixels are those of the figure's last draw when nothing changed
    since (the draw its label checks measured: label_overlap.drawn), as
    savefig would draw them again."""
    fit_log_ticks(fig)  # a figure without a legend
    with replacing(path) as tmp:  # never a half-written PNG under its name (a full disk)
        with drawn(fig):
            matplotlib.image.imsave(tmp, fig.canvas.buffer_rgba(), format="png", origin="upper",
                                    dpi=DPI, metadata={"Software": "raplbench plots"})
    size = pixels(tuple(fig.get_size_inches()))
    plt.close(fig)
    return size


# ---- helpers ---------------------------------------------------------------------------------

def wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width)) or text


def machine_color(run: Run, j: int):
    """The colour of the j-th machine of a figure (emulated: red)."""
    return EMULATED_COLOR if run.emulated else MACHINE_COLORS[j % len(MACHINE_COLORS)]


def published_style(source: str) -> tuple:
    """(colour, marker) of a published source (plots.runs.source_label):
    PUBLISHED_STYLES, else one of OTHER_PUBLISHED_STYLES by the label's CRC-32
    (deterministic, whatever else a figure shows)."""
    if source in PUBLISHED_STYLES:
        return PUBLISHED_STYLES[source]
    return OTHER_PUBLISHED_STYLES[zlib.crc32(source.encode()) % len(OTHER_PUBLISHED_STYLES)]


def darker(color, factor=0.6):
    return tuple(c * factor for c in matplotlib.colors.to_rgb(color))


def row_hatch(row: dict) -> str:
    hatch = STAND_IN_HATCH if labels.is_stand_in(row) else ""
    if liveness.is_dead(row):
        hatch += DEAD_HATCH
    if labels.is_emulated(row["machine"]):
        hatch += EMULATED_HATCH
    return hatch or None


def machine_line(run: Run) -> str:
    """"<machine>: <platform>, Linux <kernel>", the line that names a
    figure's machine (the label's platform tag is said in full by the
    platform, a busy machine's note included, so it can be long: wrap it)."""
    name = re.sub(r" \[[^\]]*\]", "", run.label, count=1)
    return f"{name}: {labels.platform(run.machine)}, Linux {run.machine.get('kernel')}"


def title_run(ax, run: Run, extra: str = "", width: int = 120):
    """The panel's machine, platform and kernel, left-aligned, wrapped to
    `width` characters (red and bold for an emulated CPU)."""
    ax.set_title(wrap(machine_line(run) + extra, width), loc="left",
                 color=EMULATED_COLOR if run.emulated else "black",
                 fontweight="bold" if run.emulated else "normal")


def dead_handle(marker=False):
    if marker:
        return Line2D([], [], marker=DEAD_MARKER, ms=7, mfc="white", color="0.3", lw=2,
                      label=DEAD_LABEL)
    return Patch(facecolor="white", edgecolor="0.3", hatch=DEAD_HATCH, linestyle=":",
                 label=DEAD_LABEL)


def legend_handles(placements=(), stand_in=False, emulated=False, not_ok=False, dead=False,
                   below=False):
    handles = [Patch(facecolor=PLACEMENT_COLORS[p], edgecolor="0.3", label=p) for p in placements]
    handles.append(Line2D([], [], ls="", marker="o", ms=4, color="0.25", label="one repetition"))
    if stand_in:
        handles.append(Patch(facecolor="white", edgecolor="0.3", hatch=STAND_IN_HATCH,
                             label="stand-in (substitute measured)"))
    if dead:
        handles.append(dead_handle())
    if emulated:
        handles.append(Patch(facecolor=EMULATED_FACE, edgecolor=EMULATED_COLOR,
                             hatch=EMULATED_HATCH, label="emulated CPU (qemu-tcg): not hardware"))
    if not_ok:
        handles.append(not_ok_handle())
    if below:
        handles.append(below_axis_handle())
    return handles


def below_axis_handle(marker="v", color="0.3"):
    """The legend entry of below_axis_mark."""
    return Line2D([], [], ls="", marker=marker, ms=7, mfc="white", mec=color, mew=1.6,
                  label=BELOW_AXIS_LABEL)


def below_axis_mark(ax, x, y, color, marker="v", transform=None, filled=True):
    """A mark where a value of 0 or less would be on a log axis: at its floor
    (the caller's x or y in axes coordinates through `transform`), a triangle
    pointing off the axis, tagged gid "below-axis"."""
    ax.plot([x], [y], ls="", marker=marker, ms=7, mew=1.6, mec=darker(color, 0.8),
            mfc=color if filled else "white", transform=transform or ax.transData,
            clip_on=False, zorder=5, gid="below-axis")


def ci_errorbar(ax, x, y, row, color, marker, hollow, size=6, horizontal=True):
    """A median with its 95% CI; hollow (white face, dashed bar) when it is
    not resolved (meaning.of(row).not_resolved: the victim, idle and sampler
    figures)."""
    lo, hi = row["median"] - row["ci95_low"], row["ci95_high"] - row["median"]
    err = [[max(lo, 0)], [max(hi, 0)]]
    kwargs = dict(fmt=marker, ms=size, color=color, mec=color, capsize=3, lw=1.6,
                  mfc="white" if hollow else color, mew=1.4, zorder=5)
    if horizontal:
        bars = ax.errorbar([row["median"]], [y], xerr=err, **kwargs)
    else:
        bars = ax.errorbar([x], [row["median"]], yerr=err, **kwargs)
    if hollow:
        for line in bars.lines[2]:
            line.set_linestyle("--")
    return bars


def not_ok_handle(label="unavailable / error (reason in the table)"):
    return Line2D([], [], ls="", label=label, **NOT_OK_MARKER)


def hollow_handle(label, color="0.3", marker="o"):
    """A hollow marker with its bar: a stand-in, or a user-space stand-in for a kernel loop."""
    return Line2D([], [], marker=marker, ms=6, mfc="white", color=color, lw=2, label=label)


def not_ok_mark(ax, x, y, transform, zorder=4):
    """A grey x where a row that is not ok would be (the tables give the reason)."""
    ax.plot([x], [y], **NOT_OK_MARKER, transform=transform, clip_on=False, zorder=zorder)


def dodged_x(slot: int, hue: int, n_hues: int) -> float:
    """The x of the hue-th of n_hues dodged boxes in a slot (seaborn's width 0.8)."""
    return slot - 0.4 + 0.8 / n_hues * (hue + 0.5)


def boxes_and_points(df, palette, common, hatched_linewidth=0.9) -> set[str]:
    """Boxes of df's values, one seaborn call per hatch (a box's edge says
    which), each repetition a point over them; returns the hatches drawn."""
    for hatch, sub in df.groupby("hatch"):
        sns.boxplot(data=sub, palette=palette, showfliers=False, width=0.8, gap=0.1,
                    linewidth=hatched_linewidth if hatch else 0.9,
                    boxprops={"hatch": hatch or None, "alpha": 0.85,
                              "linestyle": edge_style(hatch)}, **common)
    if not df.empty:
        sns.stripplot(data=df, palette={k: darker(c) for k, c in palette.items()}, size=2.6,
                      alpha=0.8, jitter=0.12, zorder=3, **common)
    return set(df["hatch"])


def figure_legend(fig, handles, ncols=None):
    """Below the axes: a legend above them would compete with the title.
    Fewer columns where its entries would run past the figure's edges (long
    labels: an unprivileged run's victim figure, every entry present).
    A figure's last element: its log axes' ticks are chosen once it is
    there (fit_log_ticks), as the legend takes its height from the panels."""
    ncols = ncols or min(len(handles), 5)
    while True:
        legend = fig.legend(handles=handles, loc="outside lower center", ncols=ncols,
                            frameon=False)
        if ncols == 1 or _legend_fits(fig, legend):
            break
        legend.remove()
        ncols -= 1
    fit_log_ticks(fig)
    return legend


def _legend_fits(fig, legend, tolerance: float = 1.0) -> bool:
    """Whether the legend, centred under the axes, stays within the figure's
    width: its width needs the texts' sizes only, not a drawing."""
    box = legend.get_window_extent(fig.canvas.get_renderer())
    return box.width <= fig.canvas.get_width_height()[0] + 2 * tolerance


def plain(value: float) -> str:
    """A tick value in plain digits: 0.05, 2, 500, 20 000, 0, −3."""
    if value == 0:
        return "0"
    sign = "−" if value < 0 else ""
    v = abs(value)
    text = f"{v:,.0f}".replace(",", "\u2009") if v >= 1 else f"{v:.10f}".rstrip("0")
    return sign + text


# figure -> [(axis, its tick choices not yet tried)]: log_ticks sets an
# axis's first choice, fit_log_ticks tries the rest where labels collide
_TICK_CHOICES = weakref.WeakKeyDictionary()


def log_ticks(ax, axis: str = "y"):
    """Labelled ticks at 1, 2 and 5 times each power of ten when the axis
    spans up to four decades and its labels fit, else at each power of ten
    (and every other power where even those collide); plain numbers. Whether
    they fit is seen once the whole figure is there: fit_log_ticks, which
    checks every log axis of the figure on one drawing."""
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    decades = np.log10(hi / lo) if lo > 0 and hi > 0 else 10
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _: plain(v)))
    target.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10)))
    target.set_minor_formatter(NullFormatter())
    # a narrow panel (the victim figure's) has no room for 1-2-5 labels over
    # four decades: "5 0001 0 000"
    choices = [((1.0, 2.0, 5.0), 40)] if decades <= 4.2 else []
    choices += [((1.0,), 40), ((1.0,), 6)]
    _set_log_locator(target, choices[0])
    _TICK_CHOICES.setdefault(ax.get_figure(), []).append((target, choices[1:]))


def _set_log_locator(target, choice):
    subs, numticks = choice
    target.set_major_locator(LogLocator(base=10, subs=subs, numticks=numticks))


def fit_log_ticks(fig):
    """Each log axis of `fig` (log_ticks) whose labels collide takes its
    next choice, until none collides or its choices run out (the last is
    kept): all axes are checked on one drawing, not one each."""
    pending = _TICK_CHOICES.pop(fig, [])
    while pending := [(target, rest) for target, rest in pending
                      if rest and tick_labels_collide(target)]:
        for target, rest in pending:
            _set_log_locator(target, rest[0])
        pending = [(target, rest[1:]) for target, rest in pending]


def ratio_ticks(ax):
    """A log2 ratio axis labelled 0.25×, 0.5×, 1×, 2×, 4×."""
    # at most ~6 labels: a wide span (a VM beside bare metal: 16×) skips powers of 2
    ax.xaxis.set_major_locator(LogLocator(base=2, numticks=6))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def rung_bands(ax, n):
    """Alternate light bands, one per row of a horizontal chart, so the
    markers offset within a row read as one group."""
    for i in range(0, n, 2):
        ax.axhspan(i - 0.5, i + 0.5, color="0.93", zorder=0, lw=0)
    ax.grid(False, axis="y")


def edge_style(hatch: str) -> str:
    """A box's edge: dotted for a dead counter, dashed for another hatch."""
    return ":" if DEAD_HATCH in hatch else "--" if hatch else "-"
