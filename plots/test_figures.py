"""Figures: log scale for latency with units on the axes, stand-ins and
emulated CPUs marked, unavailable rows shown, and no overlapping labels."""

import copy

import matplotlib.pyplot as plt
import pytest

from plots import figures, label_overlap, labels
from plots.fixtures import emulated_copy
from plots.runs import Run
from results import registry
from results import rows as rows_mod

NOT_RUN = ("this kernel (6.18.44) has no loadable-module support (CONFIG_MODULES off: "
           "/proc/modules missing); use make kbench-test to run the module under QEMU")


def vm_run(run: Run) -> Run:
    """A virtual machine like the development VMs: no kernel module (one
    harness-level row per kbench path), no sampler, hypervisor kvm."""
    rows = [copy.deepcopy(r) for r in run.rows if r["harness"] != "kbench" and r["path"] != "sampler"]
    for r in rows:
        r["machine"]["hypervisor"] = "kvm"
    common = {k: rows[0][k] for k in ("schema_version", "run_id", "timestamp", "machine")}
    for path in registry.paths_of("kbench"):
        rows.append(rows_mod.not_ok_row(common, harness="kbench", path=path, op="*", target=None,
                                        cpu=None, target_cpu=None, metric="latency", unit="ns",
                                        reason=NOT_RUN))
    return Run(run.path, rows, label=labels.machine_name(rows[0]["machine"]) + " [VM]")


@pytest.fixture(scope="module")
def layouts(runs):
    """Report layouts to draw: the two fixture machines, a VM alone, a VM
    beside an emulated CPU (the kbench-qemu rows)."""
    vm = vm_run(runs[1])
    qemu = emulated_copy([r for r in runs[0].rows if r["harness"] == "kbench"])
    for r in qemu:  # the model name QEMU reports: a long label
        r["machine"]["cpu_model_name"] = "QEMU Virtual CPU version 2.5+"
    emulated = Run(runs[0].path, qemu, label="Intel QEMU Virtual CPU version 2.5+ [emulated]")
    return {"two machines": runs, "vm": [vm], "vm + emulated": [vm, emulated]}


def all_figures(runs, refs):
    made = {}
    for family in labels.FAMILIES:
        made[f"latency-{family[0]}"] = figures.latency_figure(runs, family)
    for run in runs:
        made[f"ladder-{run.label}"] = figures.ladder_figure(run, refs)
    made["reference"] = figures.reference_figure(runs, refs)
    made["machines"] = figures.machines_figure(runs)
    made["sampler"] = figures.sampler_figure(runs)
    made["overhead"] = figures.overhead_figure(runs, refs)
    return {name: fig for name, fig in made.items() if fig is not None}


@pytest.fixture(scope="module")
def two_machines_figures(runs, refs):
    """all_figures of the two fixture machines, drawn once for the module:
    the tests below only read them (the overlap checks draw them again)."""
    made = all_figures(runs, refs)
    yield made
    for fig in made.values():
        plt.close(fig)


@pytest.mark.parametrize("layout", ["two machines", "vm", "vm + emulated"])
def test_no_overlapping_labels(layouts, refs, two_machines_figures, layout):
    shared = layout == "two machines"  # layouts["two machines"] is `runs`
    made = two_machines_figures if shared else all_figures(layouts[layout], refs)
    assert made
    for name, fig in made.items():
        assert label_overlap.overlapping_texts(fig) == [], f"{layout}: {name}"
        assert label_overlap.texts_over_data(fig) == [], f"{layout}: {name}"
        if not shared:
            plt.close(fig)


def test_latency_axes_are_log_with_units(runs, two_machines_figures):
    made = two_machines_figures  # the figures of `runs`, shared
    for family in labels.FAMILIES:
        fig = made[f"latency-{family[0]}"]
        for ax in fig.axes:
            assert ax.get_yscale() == "log"
            assert ax.get_ylabel() == "ns per operation (log scale)"
        assert fig.axes[-1].get_xlabel()
    for fig in (made[f"ladder-{runs[0].label}"], made["reference"], made["machines"]):
        ax = fig.axes[0]
        assert ax.get_xscale() == "log" and ax.get_xlabel() == "ns per operation (log scale)"


def test_sampler_axes_have_units(two_machines_figures):
    made = two_machines_figures
    fig = made["sampler"]
    rate, jitter = fig.axes[:2]
    assert rate.get_ylabel() == "achieved rate (Hz)"
    assert jitter.get_ylabel() == "interval jitter (µs, log scale)" and jitter.get_yscale() == "log"
    fig = made["overhead"]
    assert fig.axes[0].get_ylabel() == "slowdown of the workload (%)"
    assert "Diamond & Stoico 2026, Table 1" in fig.axes[1].get_title()
    # the kernel mechanism among the local ones (the categories under the
    # strip of the sampler's own cost); the tool whose design it follows named
    strip = next(a for a in fig.axes if a.get_ylabel() == "CPU/tick\nabove null")
    assert "kernel" in [t.get_text() for t in strip.get_xticklabels()]
    tools = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert "Ref_Rapl_Kernel\n(design of kernel)" in tools and "Ref_Rapl_User" in tools


def test_stand_ins_and_unavailable_rows_are_marked(two_machines_figures):
    # file reads: AMD msr-dev stand-ins
    fig = two_machines_figures[f"latency-{labels.FAMILIES[2][0]}"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "stand-in (substitute measured)" in legend
    assert "unavailable / error (reason in the table)" in legend  # Intel msr-dev 0x64d
    amd = fig.axes[1]
    hatched = [p for p in amd.patches if p.get_hatch() == figures.STAND_IN_HATCH]
    assert hatched  # the stand-in boxes
    ticks = [t.get_text() for t in amd.get_xticklabels()]
    assert any("stand-in" in t for t in ticks)


def test_ladder_marks_missing_rungs(layouts, refs):
    vm = layouts["vm"][0]
    fig = figures.ladder_figure(vm, refs)
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert ticks[0] == "nop · kernel loop  [unavailable]"
    assert "nop · user space" in ticks
    assert any(t.endswith("[stand-in]") for t in ticks)
    plt.close(fig)


def test_a_family_with_nothing_measured_has_no_figure(layouts):
    assert figures.latency_figure(layouts["vm"], labels.FAMILIES[0]) is None  # no kbench


def test_saved_png_is_figsize_times_dpi(tmp_path, runs):
    fig = figures.latency_figure(runs[:1], labels.FAMILIES[1])
    size = figures.save(fig, tmp_path / "x.png")
    assert size == figures.pixels(figures.latency_size(1)) == (1200, 540)


def test_the_overlap_check_finds_overlaps():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xticks(range(12), [f"a long label {i}" for i in range(12)])
    assert label_overlap.overlapping_texts(fig)  # horizontal labels run into each other
    for label in ax.get_xticklabels():
        label.set_rotation(30)
        label.set_horizontalalignment("right")
        label.set_rotation_mode("anchor")
    assert label_overlap.overlapping_texts(fig)  # still too crowded at 30 degrees
    ax.set_xticks(range(3), ["a", "b", "c"])
    assert label_overlap.overlapping_texts(fig) == []
    ax.text(1.5, 0.5, "beyond the right edge of the figure", transform=ax.transAxes)
    assert ("beyond the right edge of the figure", "(figure edge)") \
        in label_overlap.overlapping_texts(fig)
    plt.close(fig)


def test_a_machine_with_many_zones_gets_a_wider_figure_whose_labels_fit(runs):
    """A two-socket server's eight powercap zones, read by both harnesses:
    the slanted labels would collide at the default width."""
    plt.close("all")
    base = [r for r in runs[0].rows if r["path"] == "powercap" and r["status"] == "ok"]
    rows = []
    for zone in ("intel-rapl:0", "intel-rapl:0:0", "intel-rapl:0:1", "intel-rapl:0:2",
                 "intel-rapl:1", "intel-rapl:1:0", "intel-rapl:1:1", "intel-rapl:1:2"):
        for r in base:
            rows.append({**copy.deepcopy(r), "target": f"{zone}/energy_uj"})
    family = next(f for f in labels.FAMILIES if "powercap" in f[2])
    fig = figures.latency_figure([Run(runs[0].path, rows, label=runs[0].label)], family)
    assert fig.get_size_inches()[0] > figures.latency_size(1)[0]
    assert label_overlap.overlapping_texts(fig) == []


def sampler_run_of_today(run: Run) -> Run:
    """`run` as the sampler and overhead steps write it since they pin and
    pair: each mechanism beside its null timer (role null), its
    overhead measured at two placements."""
    rows = []
    for r in run.rows:
        if r["harness"] == "sampler" and r["status"] == "ok" and r["op"] != "timer" \
                and r["metric"] in ("rate_hz", "jitter_us"):
            rows.append({**copy.deepcopy(r), "target": "bare timerfd loop @ 1000 Hz",
                         "role": "null"})
        if r["metric"] == "overhead_pct" and r["status"] == "ok":
            for placement, cpu in (("same CPU", 1), ("other CPU", 0)):
                rows.append({**copy.deepcopy(r), "cpu": cpu,
                             "parameters": {**(r.get("parameters") or {}),
                                            "placement": placement}})
            continue
        rows.append(r)
    return Run(run.path, rows, label=run.label)


def test_sampler_and_overhead_figures_widen_until_their_labels_fit(runs, refs, monkeypatch):
    """Every mechanism beside its null timer, or at two placements: at the
    default width the labels run into each other ('powercap' into
    'powercap\\nnull timer', seen on a 2-vCPU model 207 guest); the figures
    widen until they fit."""
    from plots import figures_sampler
    plt.close("all")
    run = sampler_run_of_today(runs[1])  # AMD: five mechanisms and the timer
    for draw in (lambda: figures.sampler_figure([run]),
                 lambda: figures.overhead_figure([run], refs)):
        fig = draw()
        assert label_overlap.overlapping_texts(fig) == []
        widened = fig.get_size_inches()[0]
        plt.close(fig)
        with monkeypatch.context() as m:
            m.setattr(figures_sampler, "widen_until_labels_fit", lambda fig: None)
            fig = draw()
            assert label_overlap.overlapping_texts(fig)  # this layout needs the widening
            assert fig.get_size_inches()[0] < widened
            plt.close(fig)


def test_an_axes_turned_off_draws_no_tick_labels():
    """The overhead figure without published figures turns its right panel
    off: its hidden tick labels are not texts to check (they once crossed
    the figure's edge and would widen the figure to its maximum)."""
    fig, (ax, off) = plt.subplots(1, 2, figsize=(4, 3))
    off.set_xticks([0, 1], ["a label far too long to fit in its panel", "b"])
    assert label_overlap.overlapping_texts(fig)
    off.axis("off")
    assert label_overlap.overlapping_texts(fig) == []
    plt.close(fig)


@pytest.mark.parametrize("width, labelled", [(12.0, [2, 5, 10, 20, 50, 100, 200, 500]),
                                             (3.2, [10, 100, 1000, 10000])])
def test_log_ticks_label_1_2_5_where_they_fit_and_powers_of_ten_where_not(width, labelled):
    """The victim figure's reader panel, four decades in 430 pixels, once
    read "5 0001 0 000"; a wide axis keeps its 1-2-5 labels."""
    from plots.figures_common import fit_log_ticks, log_ticks
    fig, ax = plt.subplots(figsize=(width, 2))
    ax.set_xscale("log")
    ax.set_xlim(1.5, 15000)
    log_ticks(ax, "x")
    fit_log_ticks(fig)  # the figure's legend does it (figure_legend)
    assert not label_overlap.tick_labels_collide(ax.xaxis)
    shown = [round(t.get_loc()) for t in ax.xaxis.get_major_ticks()
             if 1.5 <= t.get_loc() <= 15000 and t.label1.get_text()]
    assert shown[:len(labelled)] == labelled
    plt.close(fig)


def test_a_figure_legend_too_wide_for_its_columns_takes_fewer():
    """Long entries in four columns would run past both edges of the figure
    (an unprivileged run's victim figure, every kind of entry present)."""
    from matplotlib.lines import Line2D

    from plots.figures_common import figure_legend
    fig, ax = plt.subplots(figsize=(8, 3), layout="constrained")
    handles = [Line2D([], [], marker="o", ls="", label=f"entry {i}: " + "a long label " * 4)
               for i in range(5)]
    legend = figure_legend(fig, handles, ncols=4)
    assert fig.legends == [legend] and legend._ncols < 4
    assert label_overlap.overlapping_texts(fig) == []
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 3), layout="constrained")
    short = [Line2D([], [], marker="o", ls="", label=f"entry {i}") for i in range(5)]
    assert figure_legend(fig, short, ncols=4)._ncols == 4  # one that fits keeps its columns
    plt.close(fig)


def test_not_resolved_stays_clear_of_the_cost_above_null_at_the_bottom(runs, refs):
    """A QUICK run's overhead is never resolved: its 'not resolved' sat just
    above the CI, and a CI low in the panel met the sampler's own cost
    written upwards from the bottom ('+3.3 µs (noise)'), which made the
    report check of make test fail on some runs. Both now go in the strip
    under the data, one label per slot (test_figure_layouts.py draws every
    case)."""
    plt.close("all")
    run = sampler_run_of_today(runs[1])
    rows = copy.deepcopy(run.rows)
    walls = [r for r in rows if r["metric"] == "overhead_pct" and r["status"] == "ok"
             and labels.overhead_measure(r) == "wall time"]
    low, high = walls[0], walls[1]
    low.update(median=0.2, ci95_low=0.0, ci95_high=0.4, samples=[0.0, 0.2, 0.4],
               resolution={**(low.get("resolution") or {}), "resolved": False,
                           "note": "a QUICK run (3 pairs) is never an overhead finding"})
    high.update(median=30.0, ci95_low=28.0, ci95_high=32.0, samples=[28.0, 30.0, 32.0])
    cost = next(r for r in rows if r["path"] == "sampler" and r["status"] == "ok"
                and r["metric"] == "cpu_us_per_sample")
    rows.append({**copy.deepcopy(cost), "op": low["op"],
                 "role": "above-null", "median": 3.3, "ci95_low": -1.0,
                 "ci95_high": 7.0, "n": 10, "samples": [-1.0, 0.0, 1.0, 2.0, 3.0, 3.6, 4.0,
                                                        5.0, 6.0, 7.0]})
    fig = figures.overhead_figure([Run(run.path, rows, label=run.label)], refs)
    texts = [t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text"))]
    assert "+3.3 µs\n(noise)\nnot resolved" in texts
    assert label_overlap.overlapping_texts(fig) == []
    assert label_overlap.texts_over_data(fig) == []
    plt.close(fig)
