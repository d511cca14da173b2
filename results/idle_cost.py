"""What each sampler mechanism costs an idle machine (issue 16, part 4).

Raffin & Trystram saw a 1 kHz sampler raise an idle server's power by 25 to
49 W, because its wakeups keep cores out of deep C-states, and the cost grew
with the frequency. We cannot measure power on every machine, so this step
measures the causes, per mechanism and frequency (10, 100, 1000 and
10000 Hz; QUICK: 1000 Hz only), on an otherwise idle machine:

- wakeups_per_s: interrupts and softirqs per second of wall time, the whole
  machine: the delta of every per-CPU line of /proc/interrupts (ERR and MIS
  are single error totals, not interrupts taken on a CPU: left out) plus
  every line of /proc/softirqs, summed over the CPUs. A timer interrupt
  that raises a softirq counts twice: a bpf_timer tick (a soft hrtimer) is
  a local timer interrupt (LOC) and an HRTIMER softirq, a timerfd tick (a
  hard hrtimer) only the LOC; the raw file keeps each line apart.
- busy_pct: CPU time that was not idle, per second of wall time, in % of one
  CPU: the machine's CPU time (online CPUs x wall time) minus its idle time.
  Where the kernel exposes cpuidle states, the idle time is the residency of
  every state (the `time` files, microseconds) and each CPU is visited (this
  process moves onto it) before its files are read, so that a CPU asleep at
  the snapshot has accounted its current residency (the kernel adds it only
  when the CPU leaves the state). Elsewhere the idle time is /proc/stat's
  idle + iowait, in USER_HZ ticks (os.sysconf("SC_CLK_TCK"), 100 here):
  10 ms per CPU per snapshot, so a window of W seconds resolves busy_pct to
  about +-(1 / W) points per CPU. /proc/stat's user, system, irq and softirq
  fields are not used: with tick accounting they are sampled by the
  scheduler tick (HZ = 250 here: 4 ms per tick), which a periodic sampler
  can beat against; they are kept in the raw file. steal is not busy (the
  hypervisor ran something else).
- deep_idle_pct: residency of the deepest cpuidle state (the highest-
  numbered state*/ of each CPU that is not disabled, e.g. C6 on a bare-metal
  Intel box, "haltpoll idle" in a KVM guest with cpuidle-haltpoll), summed
  over the CPUs, in % of the machine's CPU time. Unavailable where the
  kernel exposes no states.

Design, as the overhead experiment's (results/overhead.py): for each
mechanism and frequency, PAIRS pairs of a window with the sampler running
and an adjacent window of the same length with nothing started, the order
alternating (AB, BA, ...) so that a drift of the machine cancels within a
pair; one sample per pair (the sampler window's value minus its paired
no-sampler window's). The cells (mechanism, frequency) are visited in
rounds, each round in a shuffled order (seeded by the run id), so drift
spreads over all of them. A sampler window: raplbench-sample --mechanism M
--frequency N (no output file) is started, ready once it says on stderr
that it samples (its banner, printed after its set-up), left SETTLE_S to
settle, then the window runs between two snapshots, then it is stopped
with SIGINT (it exits cleanly). A no-sampler window waits SETTLE_S too (the
last sampler's exit settles) before its first snapshot.

Rows: harness idle, path sampler, op the mechanism, target "<the sampler's
target> @ <N> Hz" (the label its banner and its own rows give the counters
it reads), cpu the CPU the sampling thread is pinned to (null for ebpf and
kernel: in-kernel timers; null for an unpinned thread), target_cpu null,
stand_in the sampler's, parameters {"rate_hz", "baseline_median" (the
median of the no-sampler windows' value), "window_s", "idle_source" (where
the idle time came from), "deep_state" (the deepest state's name)}. Every
registered mechanism gets rows: measured, or unavailable (or error) with the
reason. The kernel mechanism runs with the ksample module loaded for the
whole experiment (results/ksample_module.py). Every window's snapshot
deltas are kept in raw/idle-cost.json, so every number can be recomputed:
each /proc/interrupts and /proc/softirqs line (summed over the CPUs), the
wakeups per second on each CPU (where they land: a timer pinned to one CPU
or armed on all), the /proc/stat cpu fields, each CPU's cpuidle residency
per state.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import random
import re
import time
from pathlib import Path

from results import ksample_module, registry, rows, stats
from results import sampler as sampler_step

HARNESS = "idle"
PATH = "sampler"
MECHANISMS = registry.MECHANISMS
FREQUENCIES = (10, 100, 1000, 10000)
QUICK_FREQUENCIES = (1000,)
METRICS = (("wakeups_per_s", "/s"), ("busy_pct", "%"), ("deep_idle_pct", "%"))
RAW_NAME = "idle-cost.json"
PROC, SYS = Path("/proc"), Path("/sys")


def pairs(quick: bool) -> int:
    """Pairs per mechanism and frequency: 10, the fewest the gate compares
    (ci/gate.toml, min_samples); QUICK's 2 are a smoke test."""
    return 2 if quick else 10


def window_s(quick: bool) -> float:
    """Seconds of one window. On the 2-vCPU KVM guest, four mechanisms: the
    full step (x four frequencies x 10 pairs, 320 windows) takes about
    3.5 minutes; QUICK (1000 Hz, 2 pairs, 16 windows) about 5 s."""
    return 0.2 if quick else 0.5


def settle_s(quick: bool) -> float:
    """Seconds between a sampler's readiness (or its exit) and the window's
    first snapshot."""
    return 0.1


def frequencies(quick: bool) -> tuple[int, ...]:
    return QUICK_FREQUENCIES if quick else FREQUENCIES


# --- parsers: pure functions of the files' text -------------------------------------------


def _cpu_columns(header: str) -> list[int]:
    """The CPU numbers of a header line ("CPU0 CPU1 CPU3": [0, 1, 3])."""
    return [int(w[3:]) for w in header.split() if re.fullmatch(r"CPU\d+", w)]


def parse_interrupts_per_cpu(text: str) -> dict[str, dict[int, int]]:
    """/proc/interrupts -> {line label: {cpu: count}}. The header names the
    CPU columns; each line has that many counts after its label (fewer only
    on the ERR and MIS lines, single error totals that are left out)."""
    lines = text.splitlines()
    if not lines:
        return {}
    cpus = _cpu_columns(lines[0])
    out = {}
    for line in lines[1:]:
        label, sep, rest = line.partition(":")
        if not sep:
            continue
        words = rest.split()[:len(cpus)]
        if len(words) < len(cpus) or not all(w.isdigit() for w in words):
            continue  # ERR, MIS: one number, not per CPU
        out[label.strip()] = {cpu: int(w) for cpu, w in zip(cpus, words)}
    return out


def parse_softirqs_per_cpu(text: str) -> dict[str, dict[int, int]]:
    """/proc/softirqs -> {softirq: {cpu: count}}: the same table as
    /proc/interrupts (a header of CPU columns, a label and a count per CPU
    on each line), without the trailing descriptions."""
    return parse_interrupts_per_cpu(text)


def totals(per_cpu: dict[str, dict[int, int]]) -> dict[str, int]:
    """{label: count summed over the CPUs}."""
    return {label: sum(counts.values()) for label, counts in per_cpu.items()}


def by_cpu(*per_cpu: dict[str, dict[int, int]]) -> dict[str, int]:
    """{cpu (a string, as JSON keys are): every line's count summed}."""
    out: dict[str, int] = {}
    for table in per_cpu:
        for counts in table.values():
            for cpu, n in counts.items():
                out[str(cpu)] = out.get(str(cpu), 0) + n
    return out


def parse_interrupts(text: str) -> dict[str, int]:
    """/proc/interrupts -> {line label: count summed over the CPUs}."""
    return totals(parse_interrupts_per_cpu(text))


def parse_softirqs(text: str) -> dict[str, int]:
    """/proc/softirqs -> {softirq: count summed over the CPUs}."""
    return totals(parse_softirqs_per_cpu(text))


STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
               "guest", "guest_nice")


def parse_stat(text: str) -> tuple[dict[str, int], int]:
    """/proc/stat -> ({field: USER_HZ ticks} of the `cpu` line, the number
    of cpuN lines: online CPUs). guest and guest_nice are already in user
    and nice."""
    total, ncpu = {}, 0
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "cpu":
            total = {name: int(w) for name, w in zip(STAT_FIELDS, words[1:])}
        elif re.fullmatch(r"cpu\d+", words[0]):
            ncpu += 1
    return total, ncpu


def cpuidle_dir(sys_root: Path, cpu: int) -> Path:
    return sys_root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cpuidle"


def online_cpus(sys_root: Path) -> list[int]:
    """The CPUs that have a cpuN directory, in order (/sys/devices/system/cpu)."""
    found = glob.glob(str(sys_root / "devices" / "system" / "cpu" / "cpu[0-9]*"))
    return sorted(int(m.group(1)) for p in found
                  if (m := re.fullmatch(r"cpu(\d+)", os.path.basename(p))))


def read_cpuidle_states(sys_root: Path, cpu: int) -> list[dict]:
    """The cpuidle states of `cpu` in index order: [{"name", "time_us",
    "usage", "disabled"}]; [] where the kernel exposes none."""
    states = []
    found = glob.glob(str(cpuidle_dir(sys_root, cpu) / "state[0-9]*"))
    for path in sorted(found, key=lambda p: int(os.path.basename(p)[5:])):
        p = Path(path)
        try:
            states.append({"name": (p / "name").read_text().strip(),
                           "time_us": int((p / "time").read_text()),
                           "usage": int((p / "usage").read_text()),
                           "disabled": _flag(p / "disable")})
        except (OSError, ValueError):
            continue
    return states


def _flag(path: Path) -> bool:
    try:
        return path.read_text().strip() not in ("", "0")
    except OSError:
        return False


def deepest(states: list[dict]) -> int:
    """The index of the deepest state a CPU may enter: the highest-numbered
    one not disabled (the highest-numbered one when all are)."""
    enabled = [i for i, s in enumerate(states) if not s.get("disabled")]
    return enabled[-1] if enabled else len(states) - 1


def no_cpuidle_reason(sys_root: Path = SYS) -> str:
    return (f"no cpuidle states under {cpuidle_dir(sys_root, 0)}: this kernel exposes no "
            "C-states (a VM's idle is the hypervisor's); wakeups and CPU time stand in")


# --- snapshots and windows ------------------------------------------------------------------


def snapshot(proc_root: Path = PROC, sys_root: Path = SYS, visit: bool = True) -> dict:
    """Everything a window needs at one instant: the monotonic time (ns,
    the middle of the snapshot), /proc/interrupts, /proc/softirqs and
    /proc/stat parsed, and each CPU's cpuidle states with the time they
    were read. visit: move onto each CPU before reading its states (it
    wakes the CPU, which accounts its current residency); CPUs this process
    may not run on are read from where it is."""
    start = time.monotonic_ns()
    cpuidle = {}
    allowed = os.sched_getaffinity(0) if visit else set()
    try:
        for cpu in online_cpus(sys_root):
            if cpu in allowed:
                os.sched_setaffinity(0, {cpu})
            states = read_cpuidle_states(sys_root, cpu)
            if states:
                cpuidle[str(cpu)] = {"t_ns": time.monotonic_ns(), "states": states}
    finally:
        if visit:
            os.sched_setaffinity(0, allowed)
    interrupts = parse_interrupts_per_cpu((proc_root / "interrupts").read_text())
    softirqs = parse_softirqs_per_cpu((proc_root / "softirqs").read_text())
    stat, ncpu = parse_stat((proc_root / "stat").read_text())
    end = time.monotonic_ns()
    return {"t_ns": (start + end) // 2, "read_ns": end - start,
            "interrupts": totals(interrupts), "softirqs": totals(softirqs),
            "wakeups_by_cpu": by_cpu(interrupts, softirqs),
            "stat": stat, "ncpu": ncpu, "cpuidle": cpuidle}


def _delta(a: dict, b: dict) -> dict:
    return {k: b[k] - a[k] for k in b if k in a}


def window(a: dict, b: dict, clk_tck: int | None = None) -> dict:
    """The deltas between snapshots a and b, and the window's values:
    wakeups_per_s, busy_pct, deep_idle_pct (None without cpuidle states),
    idle_source, deep_state."""
    clk_tck = clk_tck or os.sysconf("SC_CLK_TCK")
    wall_s = (b["t_ns"] - a["t_ns"]) / 1e9
    interrupts, softirqs = _delta(a["interrupts"], b["interrupts"]), _delta(a["softirqs"],
                                                                           b["softirqs"])
    stat = _delta(a["stat"], b["stat"])
    cpuidle = {}
    for cpu, end in b["cpuidle"].items():
        begin = a["cpuidle"].get(cpu)
        if begin is None or len(begin["states"]) != len(end["states"]):
            continue  # a CPU that came or went, or whose states changed
        cpuidle[cpu] = {"wall_us": (end["t_ns"] - begin["t_ns"]) / 1e3,
                        "deepest": deepest(end["states"]),
                        "states": [{"name": e["name"], "time_us": e["time_us"] - s["time_us"],
                                    "usage": e["usage"] - s["usage"]}
                                   for s, e in zip(begin["states"], end["states"])]}
    wakeups = sum(interrupts.values()) + sum(softirqs.values())
    # where they land: {cpu: wakeups per s}
    by_cpu_per_s = {cpu: n / wall_s
                    for cpu, n in _delta(a.get("wakeups_by_cpu", {}),
                                         b.get("wakeups_by_cpu", {})).items()}
    ncpu = b["ncpu"]
    if cpuidle:
        # each CPU over its own read times: busy = its wall time minus its residency
        busy_us = sum(c["wall_us"] - sum(s["time_us"] for s in c["states"])
                      for c in cpuidle.values())
        cpu_us = sum(c["wall_us"] for c in cpuidle.values())
        busy_pct = 100.0 * busy_us / 1e6 / wall_s
        deep_idle_pct = 100.0 * sum(c["states"][c["deepest"]]["time_us"]
                                    for c in cpuidle.values()) / cpu_us
        names = sorted({c["states"][c["deepest"]]["name"] for c in cpuidle.values()})
        idle_source, deep_state = "cpuidle residency", ", ".join(names)
    else:
        idle_s = (stat.get("idle", 0) + stat.get("iowait", 0)) / clk_tck
        busy_pct = 100.0 * (ncpu * wall_s - idle_s) / wall_s
        deep_idle_pct, idle_source, deep_state = None, "/proc/stat idle + iowait", None
    return {"wall_s": wall_s, "ncpu": ncpu, "interrupts": interrupts, "softirqs": softirqs,
            "stat": stat, "cpuidle": cpuidle, "wakeups_per_s_by_cpu": by_cpu_per_s,
            "wakeups_per_s": wakeups / wall_s, "busy_pct": busy_pct,
            "deep_idle_pct": deep_idle_pct, "idle_source": idle_source,
            "deep_state": deep_state}


# --- the experiment ----------------------------------------------------------------------------


@dataclasses.dataclass
class Cell:
    """One mechanism at one frequency, and its pairs so far."""
    mechanism: str
    hz: int
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


def one_pair(cell: Cell, sampler_first: bool, seconds: float, settle: float,
             proc_root: Path = PROC, sys_root: Path = SYS) -> None:
    """The sampler window and the bare window of one pair, in the given
    order; appended to cell.pairs, or cell.failed set."""
    clk_tck = os.sysconf("SC_CLK_TCK")
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


def experiment(cells: list[Cell], k: int, seconds: float, settle: float, seed: str,
               proc_root: Path = PROC, sys_root: Path = SYS) -> float:
    """k rounds over the cells, each in a shuffled order; pair i of a cell
    runs the sampler first when i is odd (AB, BA, ...). Returns the time taken."""
    shuffle = random.Random(seed)
    start = time.monotonic()
    for i in range(k):
        order = [c for c in cells if c.failed is None]
        shuffle.shuffle(order)
        for c in order:
            one_pair(c, sampler_first=i % 2 == 1, seconds=seconds, settle=settle,
                     proc_root=proc_root, sys_root=sys_root)
    return time.monotonic() - start


def differences(cell: Cell, metric: str) -> tuple[list[float], list[float]]:
    """(sampler minus bare per pair, the bare windows' values) of one metric."""
    diff, base = [], []
    for with_, without in cell.pairs:
        if with_[metric] is None or without[metric] is None:
            continue
        diff.append(round(with_[metric] - without[metric], 6))
        base.append(without[metric])
    return diff, base


def cell_rows(common: dict, cell: Cell, stand_in, seconds: float,
              sys_root: Path = SYS) -> list[dict]:
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
                      "window_s": seconds, "pairs": len(diff),
                      "idle_source": last["idle_source"]}
            if metric == "deep_idle_pct":
                params["deep_state"] = last["deep_state"]
            out.append(rows.measured_row(common, **key, samples=diff, parameters=params))
    return out


def raw_record(cells: list[Cell], seconds: float, settle: float, k: int,
               elapsed: float) -> dict:
    def slim(w):
        keys = ("wall_s", "ncpu", "wakeups_per_s", "wakeups_per_s_by_cpu", "busy_pct",
                "deep_idle_pct", "idle_source", "deep_state", "interrupts", "softirqs", "stat",
                "cpuidle")
        return {key: w.get(key) for key in keys}
    return {"window_s": seconds, "settle_s": settle, "pairs": k, "elapsed_s": round(elapsed, 3),
            "clk_tck": os.sysconf("SC_CLK_TCK"),
            "cells": [{"mechanism": c.mechanism, "rate_hz": c.hz, "label": c.label,
                       "cpu": c.cpu, "failed": c.failed,
                       "pairs": [{"sampler": slim(a), "bare": slim(b)} for a, b in c.pairs]}
                      for c in cells]}


def run(common: dict, raw_dir: Path, quick: bool, mechanisms: dict[str, str | None],
        proc_root: Path = PROC, sys_root: Path = SYS) -> list[dict]:
    """`mechanisms`: {mechanism: stand_in} of those the sampler can run here
    (results/sampler.stand_ins). Every registered mechanism gets rows:
    measured per frequency, or one row per metric saying why not."""
    def unavailable(op, why, status="unavailable"):
        return [rows.not_ok_row(common, harness=HARNESS, path=PATH, op=op, target=None,
                                cpu=None, target_cpu=None, metric=metric, unit=unit,
                                reason=why, status=status) for metric, unit in METRICS]

    if not sampler_step.BINARY.exists():
        return [r for m in MECHANISMS
                for r in unavailable(m, f"{sampler_step.BINARY} not built: run make build")]
    kernel, log = ksample_module.MECHANISM, raw_dir / "ksample.log"
    not_loaded: ksample_module.NotLoaded | None = None
    if kernel in MECHANISMS and kernel not in mechanisms:
        with ksample_module.loaded(log) as not_loaded:  # only to learn why not; removed at once
            pass
    k, seconds, settle = pairs(quick), window_s(quick), settle_s(quick)
    with ksample_module.around(kernel if kernel in mechanisms else None, log) as why_not:
        if why_not is not None:
            not_loaded = why_not
            mechanisms = {m: s for m, s in mechanisms.items() if m != kernel}
        cells = [Cell(m, hz) for m in MECHANISMS if m in mechanisms for hz in frequencies(quick)]
        print(f"  {len(cells)} cells (mechanism x frequency), {k} pairs of {seconds:g} s "
              f"windows each (AB BA), {settle:g} s to settle", flush=True)
        elapsed = experiment(cells, k, seconds, settle, common["run_id"], proc_root, sys_root)
    (raw_dir / RAW_NAME).write_text(json.dumps(raw_record(cells, seconds, settle, k, elapsed),
                                               indent=1) + "\n")
    out = []
    for m in MECHANISMS:
        if m in mechanisms:
            for c in (c for c in cells if c.mechanism == m):
                got = cell_rows(common, c, mechanisms[m], seconds, sys_root)
                out += got
                w, b = got[0], got[1]
                if w["status"] == "ok":
                    print(f"  {m:8s} {c.hz:5d} Hz: wakeups {w['median']:+9.1f}/s "
                          f"(95% CI {w['ci95_low']:+.1f}..{w['ci95_high']:+.1f}; baseline "
                          f"{w['parameters']['baseline_median']:.0f}/s), busy "
                          f"{b['median']:+.2f}%", flush=True)
                else:
                    print(f"  {m:8s} {c.hz:5d} Hz: {w['status']}: {w['reason']}", flush=True)
        elif m == kernel and not_loaded is not None:
            print(f"  {m}: {not_loaded.status}: {not_loaded.reason}", flush=True)
            out += unavailable(m, not_loaded.reason, not_loaded.status)
        else:
            out += unavailable(m, "the sampler cannot sample here (see its sampler row)")
    print(f"  idle cost: {elapsed:.1f} s of windows", flush=True)
    return out
