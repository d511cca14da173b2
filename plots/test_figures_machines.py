"""The cross-machine latency figure of issue 17: two KVM guests whose perf
and eBPF routes read different counters (msr/tsc/ stand-in, frozen
power/energy-psys) share slots, each panel names what it read, and the
label check catches the old layout's interleaved tick labels."""

import matplotlib.pyplot as plt
import pytest

from plots import figures, figures_latency, label_overlap, labels
from plots.fixtures import KVM_FROZEN, KVM_VICTIM
from plots.runs import load_runs

PERF_EBPF = next(f for f in labels.FAMILIES if f[0] == "perf-ebpf")


@pytest.fixture(scope="module")
def pair():
    return load_runs([KVM_VICTIM, KVM_FROZEN])


def _old_slots(per_run, multi_path):
    """The layout before issue 17: a slot per (path, op, target), so two
    machines reading different targets never share one."""
    harnesses = {}
    for rows in per_run:
        for r in rows:
            harnesses.setdefault((r["path"], r["op"], r.get("target")), set()).add(r["harness"])
    return (lambda r: figures_latency._category(
        r, multi_path, len(harnesses[(r["path"], r["op"], r.get("target"))]) > 1)), {}


def test_routes_share_slots_and_each_panel_names_what_it_read(pair):
    plt.close("all")
    fig = figures.latency_figure(pair, PERF_EBPF)
    victim, frozen = (ax for ax in fig.axes if ax.get_ylabel())
    ticks = [t.get_text() for t in frozen.get_xticklabels()]
    routes = {(r["path"], r["op"], r["harness"]) for run in pair for r in run.rows
              if r["metric"] == "latency" and r["path"] in PERF_EBPF[2] and r["op"] != "*"}
    assert len(ticks) == len(routes)  # one slot per route, not per target
    assert "perf read\n(gbench)" in ticks
    slot = ticks.index("perf read\n(gbench)")
    def top(ax):  # the panel's secondary top axis: what it read, per slot
        (child,) = ax.child_axes
        return dict(zip((round(x) for x in child.get_xticks()),
                        (t.get_text() for t in child.get_xticklabels())))

    assert top(victim)[slot] == "msr/tsc\nstand-in"
    assert top(frozen)[slot] == "energy-psys\nfrozen"
    assert label_overlap.overlapping_texts(fig) == []
    assert tuple(fig.get_size_inches()) == figures.latency_size(2)  # fits without widening
    plt.close(fig)


def test_the_label_check_catches_the_old_layout(pair, monkeypatch):
    """Drawn as before (a slot per target, at the default width), the slanted
    three-line labels interleave: the check says so, and only because
    neighbouring tick labels must keep TICK_GAP apart."""
    plt.close("all")
    monkeypatch.setattr(figures_latency, "slots", _old_slots)
    monkeypatch.setattr(figures_latency, "widen_until_labels_fit", lambda fig: None)
    fig = figures.latency_figure(pair, PERF_EBPF)
    found = label_overlap.overlapping_texts(fig)
    assert found and all("\n" in a and "\n" in b for a, b in found)  # tick labels
    assert label_overlap.overlapping_texts(fig, tick_gap=-1.0) == []  # the old rule missed it
    plt.close(fig)
    monkeypatch.undo()
    monkeypatch.setattr(figures_latency, "slots", _old_slots)
    fig = figures.latency_figure(pair, PERF_EBPF)  # the old slots, widened until they fit
    assert fig.get_size_inches()[0] > figures.latency_size(2)[0]
    assert label_overlap.overlapping_texts(fig) == []
    plt.close(fig)


def test_a_crowded_axis_of_slanted_labels_is_caught():
    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    names = [f"perf read\nmsr/tsc\n(harness {i}, stand-in)" for i in range(6)]
    ax.set_xticks(range(6), names)
    for label in ax.get_xticklabels():
        label.set_rotation(30)
        label.set_horizontalalignment("right")
        label.set_rotation_mode("anchor")
    assert label_overlap.overlapping_texts(fig)
    ax.set_xticks(range(3), names[:3])
    assert label_overlap.overlapping_texts(fig) == []
    plt.close(fig)
