"""The overhead and sampler figures on generated runs (issue 32, item 4):
whatever values a run produces (resolved, not resolved, within noise,
negative, too few pairs, unavailable; small and large, one machine or two),
no label overlaps another label, and no label lies over the data. The test
that draws the report of a real QUICK run stays (results/test_bench_all.py).
"""

import json

import matplotlib.pyplot as plt
import numpy as np
import pytest

from results import registry, rows

from plots import figures_sampler, label_overlap
from plots.fixtures import INTEL
from plots.runs import Run

MACHINE = json.loads((INTEL / "results.jsonl").read_text().splitlines()[0])["machine"]
CASES = ("resolved", "not resolved", "within noise", "negative", "too few pairs", "unavailable")


def overhead_rows(common, mechanism, case, placement, rng):
    """The wall- and CPU-time rows of one mechanism and placement in `case`."""
    cpu = 1 if placement == "same CPU" else 0
    out = []
    for measure in ("wall time", "CPU time"):
        target = f"stress-ng --cpu 1, fixed work pinned to CPU 1: {measure}"
        if case == "unavailable":
            out.append(rows.not_ok_row(common, harness="hyperfine", path="sampler",
                                       op=mechanism, metric="overhead_pct", target=target,
                                       cpu=cpu, reason="generated: not measured"))
            continue
        centre = {"negative": -rng.uniform(5, 60), "within noise": 0.0}.get(
            case, rng.uniform(0.5, 80))
        spread = rng.uniform(0.1, 40) if case != "resolved" else rng.uniform(0.05, 0.4)
        n = 3 if case == "too few pairs" else int(rng.integers(6, 40))
        samples = list(centre + rng.normal(0, spread, n))
        resolution = ({"resolved": False, "note": "generated: not resolved"}
                      if case == "not resolved" else None)
        out.append(rows.measured_row(common, harness="hyperfine", path="sampler", op=mechanism,
                                     target=target, cpu=cpu, target_cpu=None,
                                     metric="overhead_pct", unit="%", samples=samples,
                                     parameters={"placement": placement},
                                     resolution=resolution))
    return out


def above_null(common, mechanism, rng):
    """The sampler's CPU per tick above its null loop, within noise or not."""
    centre = rng.choice([0.0, rng.uniform(-20, 120)])
    samples = list(centre + rng.normal(0, rng.uniform(0.1, 30), int(rng.integers(3, 12))))
    return rows.measured_row(common, harness="sampler", path="sampler", op=mechanism,
                             target=f"msr/tsc/ @ 1000 Hz", cpu=0, target_cpu=None,
                             metric="cpu_us_per_sample", unit="us", samples=samples,
                             role=rows.ABOVE_NULL)


def generated_run(seed: int, label: str) -> Run:
    rng = np.random.default_rng(seed)
    common = rows.common(f"generated-{seed}", "2026-11-27T00:00:00Z", MACHINE)
    out = []
    for i, mechanism in enumerate(registry.MECHANISMS):
        for j, placement in enumerate(("same CPU", "other CPU")):
            case = CASES[(seed + 2 * i + j) % len(CASES)]
            out += overhead_rows(common, mechanism, case, placement, rng)
        out.append(above_null(common, mechanism, rng))
    return Run(path=INTEL / "results.jsonl", rows=out, label=label)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("machines", [1, 2])
def test_the_overhead_figure_keeps_its_labels_apart_and_off_the_data(seed, machines, refs):
    runs = [generated_run(seed + 100 * k, f"machine {k + 1}") for k in range(machines)]
    covered = {case for k in range(machines) for i in range(len(registry.MECHANISMS))
               for j in range(2) for case in [CASES[(seed + 100 * k + 2 * i + j) % len(CASES)]]}
    assert covered == set(CASES)  # every case is drawn in every figure
    fig = figures_sampler.overhead_figure(runs, refs)
    assert label_overlap.overlapping_texts(fig) == []
    assert label_overlap.texts_over_data(fig) == []
    assert label_overlap.texts_beyond_their_axes(fig) == []
    plt.close(fig)


def test_texts_over_data_sees_a_label_on_a_point():
    fig, ax = plt.subplots()
    ax.plot([0.5], [0.5], "o")
    ax.text(0.5, 0.5, "over the point", ha="center", va="center")
    ax.text(0.1, 0.9, "beside it")
    assert label_overlap.texts_over_data(fig) == ["over the point"]
    plt.close(fig)


def test_texts_beyond_their_axes_sees_a_label_that_leaves_its_axes():
    fig, ax = plt.subplots(figsize=(3, 1))
    ax.text(0.5, 0.5, "inside", ha="center", va="center", transform=ax.transAxes)
    ax.text(0.5, 0.5, "\n".join(["far too tall"] * 12), transform=ax.transAxes)
    assert label_overlap.texts_beyond_their_axes(fig) == ["\n".join(["far too tall"] * 12)]
    plt.close(fig)


SAMPLER_CASES = ("resolved", "within noise", "negative", "too few pairs", "unavailable")


def _spread(centre, half, n, rng):
    """n samples over centre ± half, shuffled: a CI that holds 0 exactly when
    the interval does (within noise), clear of it otherwise."""
    return list(rng.permutation(centre + half * np.linspace(-1.0, 1.0, n)))


def self_report(common, mechanism, case, rng):
    """One mechanism's self-report in `case`: rate and jitter of the sampler
    and of its null loop, and the sampler above it (CPU per tick and rate;
    "negative": a CPU per tick below its null loop's, baseline drift)."""
    target = "msr/tsc/ @ 1000 Hz"
    if case == "unavailable":
        return [rows.not_ok_row(common, harness="sampler", path="sampler", op=mechanism,
                                metric=metric, target=target, reason="generated: not measured")
                for metric in ("rate_hz", "jitter_us", "cpu_us_per_sample")]
    n = 3 if case == "too few pairs" else int(rng.integers(6, 16))
    out = []
    for role, where in ((rows.MEASURED, target), (rows.NULL, "bare timerfd loop @ 1000 Hz")):
        for metric, samples in (("rate_hz", 1000 - np.abs(rng.normal(0, rng.uniform(0.1, 30), n))),
                                ("jitter_us", rng.lognormal(np.log(rng.uniform(0.5, 50)), 0.3, n))):
            out.append(rows.measured_row(common, harness="sampler", path="sampler", op=mechanism,
                                         target=where, cpu=0, target_cpu=None, metric=metric,
                                         unit=rows.METRIC_UNITS[metric], samples=list(samples),
                                         role=role))
    for metric, scale in (("cpu_us_per_sample", rng.uniform(0.5, 150)),
                          ("rate_hz", rng.uniform(0.05, 40))):
        centre = {"within noise": 0.0, "negative": -scale}.get(case, scale)
        half = scale * (rng.uniform(0.5, 3) if case == "within noise" else rng.uniform(0.05, 0.6))
        out.append(rows.measured_row(common, harness="sampler", path="sampler", op=mechanism,
                                     target=target, cpu=0, target_cpu=None, metric=metric,
                                     unit=rows.METRIC_UNITS[metric],
                                     samples=_spread(centre, half, n, rng), role=rows.ABOVE_NULL))
    return out


def generated_sampler_run(seed: int, label: str) -> Run:
    rng = np.random.default_rng(seed)
    common = rows.common(f"generated-{seed}", "2026-11-27T00:00:00Z", MACHINE)
    out = [row for i, mechanism in enumerate(registry.MECHANISMS)
           for row in self_report(common, mechanism,
                                  SAMPLER_CASES[(seed + i) % len(SAMPLER_CASES)], rng)]
    return Run(path=INTEL / "results.jsonl", rows=out, label=label)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("machines", [1, 2])
def test_the_sampler_figure_draws_every_difference_and_keeps_its_labels_apart(seed, machines):
    """Issue 33, item 4: the sampler's rows above its null loop in their own
    panels, whatever they are (resolved, within noise, baseline drift, too
    few pairs, not run): a point each, hollow exactly where results/meaning.py
    says not resolved, no label over another, over the data or off the
    figure."""
    from results import meaning
    runs = [generated_sampler_run(seed + 100 * k, f"machine {k + 1}") for k in range(machines)]
    above = [r for run in runs for r in run.rows if meaning.of(r).above_null]
    said = [meaning.of(r) for r in above]
    assert any(m.drift for m in said) and any(m.too_few for m in said)
    assert any(m.within_noise for m in said) and any(not m.not_resolved for m in said)
    fig = figures_sampler.sampler_figure(runs)
    points = [line for ax in fig.axes[2:] for line in ax.lines if line.get_marker() == "D"]
    hollow = [p for p in points if p.get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0))]
    assert len(points) == len(above)
    assert len(hollow) == sum(m.not_resolved for m in said)
    assert label_overlap.overlapping_texts(fig) == []
    assert label_overlap.texts_over_data(fig) == []
    assert label_overlap.texts_beyond_their_axes(fig) == []
    plt.close(fig)
