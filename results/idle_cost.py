"""What each sampler mechanism costs an idle machine (issue 16, part 4).

Raffin & Trystram saw a 1 kHz sampler raise an idle server's power by 25 to
49 W, because its wakeups keep cores out of deep C-states, and the cost grew
with the frequency. We cannot measure power on every machine, so this step
measures the causes, per mechanism and frequency, on an otherwise idle
machine: wakeups per second, busy CPU time and deep-idle residency
(results/idle_counters.py says how each is read), in pairs of a window with
the sampler and one without, as the overhead experiment does. The
experiment and its rows: results/README.md, "The idle machine". Beyond it:
the cells (mechanism, frequency) take their pairs in rounds shuffled by a
generator seeded with the run id; a row's target is the label the
sampler's banner gives its counters, its cpu the CPU its sampling thread
is pinned to (null for the in-kernel mechanisms and an unpinned thread),
its parameters also `idle_source` and `deep_state`; the kernel mechanism
runs with the ksample module loaded for the whole experiment
(results/ksample_module.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import time
from pathlib import Path

from results import ksample_module, registry, rows, stats
from results.idle_counters import PROC, SYS, no_cpuidle_reason, snapshot, window
from results import sampler as sampler_step

HARNESS = "idle"
PATH = "sampler"
MECHANISMS = registry.MECHANISMS
FREQUENCIES = (10, 100, 1000, 10000)
QUICK_FREQUENCIES = (1000,)
METRICS = (("wakeups_per_s", "/s"), ("busy_pct", "%"), ("deep_idle_pct", "%"))
RAW_NAME = "idle-cost.json"


def pairs(quick: bool) -> int:
    """Pairs per mechanism and frequency: 10, the fewest the gate compares
    (ci/gate.toml, min_samples); QUICK's 2 are a smoke test."""
    return 2 if quick else 10


def window_s(quick: bool, hz: int) -> float:
    """Seconds of one window at `hz`: 0.3 s up to 100 Hz (30 of the
    sampler's wakeups at least), 0.15 s from 1 kHz (150 at least), 0.1 s
    under QUICK. On the 2-vCPU KVM guest, four mechanisms: the full step
    (x four frequencies x 10 pairs, 320 windows) takes about 2 minutes
    (0.5 s windows: 3.4 minutes); QUICK (1000 Hz, 2 pairs, 16 windows)
    about 4 s."""
    if quick:
        return 0.1
    return 0.3 if hz <= 100 else 0.15


# Seconds between a sampler's readiness (or its exit) and the window's first
# snapshot, QUICK or not.
SETTLE_S = 0.1


def frequencies(quick: bool) -> tuple[int, ...]:
    return QUICK_FREQUENCIES if quick else FREQUENCIES


# --- the experiment ----------------------------------------------------------------------------


@dataclasses.dataclass
class Cell:
    """One mechanism at one frequency, and its pairs so far."""
    mechanism: str
    hz: int
    window_s: float = 0.5        # seconds of each window (window_s)
    label: str | None = None     # the sampler's counters, from its banner
    cpu: int | None = None
    failed: str | None = None    # why it stopped taking pairs
    pairs: list = dataclasses.field(default_factory=list)  # (sampler window, bare window)


def measure_window(settle: float, seconds: float, proc_root: Path, sys_root: Path,
                   clk_tck: int) -> dict:
    time.sleep(settle)
    a = snapshot(proc_root, sys_root)
    time.sleep(seconds)
    b = snapshot(proc_root, sys_root)
    return window(a, b, clk_tck)


def one_pair(cell: Cell, sampler_first: bool, settle: float,
             proc_root: Path = PROC, sys_root: Path = SYS) -> None:
    """The sampler window and the bare window of one pair, in the given
    order; appended to cell.pairs, or cell.failed set."""
    clk_tck, seconds = os.sysconf("SC_CLK_TCK"), cell.window_s
    got = {}
    for sampled in ((True, False) if sampler_first else (False, True)):
        if not sampled:
            got[False] = measure_window(settle, seconds, proc_root, sys_root, clk_tck)
            continue
        # no output file; its banner gives the label and CPU of the rows
        try:
            background = sampler_step.Background(cell.mechanism, frequency=cell.hz,
                                                 duration_s=settle + seconds + 60)
        except sampler_step.SamplerFailed as e:
            cell.failed = e.reason
            return
        try:
            got[True] = measure_window(settle, seconds, proc_root, sys_root, clk_tck)
        finally:
            try:
                background.stop(require_clean_exit=True)
            except sampler_step.SamplerFailed as e:
                cell.failed = e.reason
        if cell.failed:
            return
        cell.label, cell.cpu = background.label, background.cpu
    cell.pairs.append((got[True], got[False]))


def experiment(cells: list[Cell], k: int, settle: float, seed: str,
               proc_root: Path = PROC, sys_root: Path = SYS) -> float:
    """k rounds over the cells, each in a shuffled order; pair i of a cell
    runs the sampler first when i is odd (AB, BA, ...). Returns the time taken."""
    shuffle = random.Random(seed)
    start = time.monotonic()
    for i in range(k):
        order = [c for c in cells if c.failed is None]
        shuffle.shuffle(order)
        for c in order:
            one_pair(c, sampler_first=i % 2 == 1, settle=settle, proc_root=proc_root,
                     sys_root=sys_root)
    return time.monotonic() - start


def differences(cell: Cell, metric: str) -> tuple[list[float], list[float]]:
    """(sampler minus bare per pair, the bare windows' values) of one metric."""
    both = [(w[metric], b[metric]) for w, b in cell.pairs
            if w[metric] is not None and b[metric] is not None]
    return [round(w - b, 6) for w, b in both], [b for _, b in both]


def cell_rows(common: dict, cell: Cell, stand_in, sys_root: Path = SYS) -> list[dict]:
    """The three rows of one measured (or failed) cell."""
    target = None if cell.label is None else f"{cell.label} @ {cell.hz} Hz"
    cpu = None if cell.mechanism in sampler_step.IN_KERNEL else cell.cpu
    out = []
    for metric, unit in METRICS:
        key = dict(harness=HARNESS, path=PATH, op=cell.mechanism, target=target, cpu=cpu,
                   target_cpu=None, metric=metric, unit=unit, stand_in=stand_in)
        diff, base = differences(cell, metric)
        if cell.failed is not None and not cell.pairs:
            out.append(rows.not_ok_row(common, **key, status="error", reason=(
                f"raplbench-sample --mechanism {cell.mechanism} --frequency {cell.hz}: "
                f"{cell.failed}")))
        elif metric == "deep_idle_pct" and not diff:
            out.append(rows.not_ok_row(common, **key, reason=no_cpuidle_reason(sys_root)))
        else:
            last = cell.pairs[-1][1]
            params = {"rate_hz": cell.hz,
                      "baseline_median": round(stats.summarize(base)["median"], 6),
                      "window_s": cell.window_s, "pairs": len(diff),
                      "idle_source": last["idle_source"]}
            if metric == "deep_idle_pct":
                params["deep_state"] = last["deep_state"]
            out.append(rows.measured_row(common, **key, samples=diff, parameters=params))
    return out


def raw_record(cells: list[Cell], settle: float, k: int, elapsed: float) -> dict:
    def slim(w):
        keys = ("wall_s", "ncpu", "wakeups_per_s", "wakeups_per_s_by_cpu", "busy_pct",
                "deep_idle_pct", "idle_source", "deep_state", "interrupts", "softirqs", "stat",
                "cpuidle")
        return {key: w.get(key) for key in keys}
    return {"settle_s": settle, "pairs": k, "elapsed_s": round(elapsed, 3),
            "clk_tck": os.sysconf("SC_CLK_TCK"),
            "cells": [{"mechanism": c.mechanism, "rate_hz": c.hz, "window_s": c.window_s,
                       "label": c.label,
                       "cpu": c.cpu, "failed": c.failed,
                       "pairs": [{"sampler": slim(a), "bare": slim(b)} for a, b in c.pairs]}
                      for c in cells]}


def run(common: dict, raw_dir: Path, quick: bool, mechanisms: dict[str, str | None],
        proc_root: Path = PROC, sys_root: Path = SYS) -> list[dict]:
    """`mechanisms`: {mechanism: stand_in} of those the sampler can run here
    (results/sampler.stand_ins). Every registered mechanism gets rows:
    measured per frequency, or one row per metric saying why not."""
    def unavailable(op, why, status="unavailable"):
        return [rows.not_ok_row(common, harness=HARNESS, path=PATH, op=op, metric=metric,
                                reason=why, status=status) for metric, _ in METRICS]

    if not sampler_step.BINARY.exists():
        return [r for m in MECHANISMS
                for r in unavailable(m, f"{sampler_step.BINARY} not built: run make build")]
    k, settle = pairs(quick), SETTLE_S
    with ksample_module.around_experiment(MECHANISMS, mechanisms,
                                          raw_dir / "ksample.log") as (mechanisms, why_not):
        cells = [Cell(m, hz, window_s(quick, hz)) for m in MECHANISMS if m in mechanisms
                 for hz in frequencies(quick)]
        windows = "/".join(f"{w:g}" for w in sorted({c.window_s for c in cells}, reverse=True))
        print(f"  {len(cells)} cells (mechanism x frequency), {k} pairs of {windows} s "
              f"windows each (AB BA), {settle:g} s to settle", flush=True)
        elapsed = experiment(cells, k, settle, common["run_id"], proc_root, sys_root)
    (raw_dir / RAW_NAME).write_text(json.dumps(raw_record(cells, settle, k, elapsed),
                                               indent=1) + "\n")
    out = []
    for m in MECHANISMS:
        if m in mechanisms:
            for c in (c for c in cells if c.mechanism == m):
                got = cell_rows(common, c, mechanisms[m], sys_root)
                out += got
                w, b = got[0], got[1]
                if w["status"] == "ok":
                    print(f"  {m:8s} {c.hz:5d} Hz: wakeups {w['median']:+9.1f}/s "
                          f"(95% CI {w['ci95_low']:+.1f}..{w['ci95_high']:+.1f}; baseline "
                          f"{w['parameters']['baseline_median']:.0f}/s), busy "
                          f"{b['median']:+.2f}%", flush=True)
                else:
                    print(f"  {m:8s} {c.hz:5d} Hz: {w['status']}: {w['reason']}", flush=True)
        else:
            out += unavailable(m, *why_not(m))
    print(f"  idle cost: {elapsed:.1f} s of windows", flush=True)
    return out
