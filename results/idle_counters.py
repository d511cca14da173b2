"""The machine's idle counters, read at an instant and differenced over a
window (results/idle_cost.py measures each sampler mechanism with them):
wakeups_per_s, busy_pct and deep_idle_pct, as results/README.md defines
them ("The idle machine"). Why they are read as they are: a snapshot
visits each CPU before reading its cpuidle files, because the kernel adds a
sleeping CPU's current residency only when it leaves the state; without
cpuidle states the idle time is /proc/stat's idle + iowait in USER_HZ
ticks (10 ms per CPU per snapshot: a window of W seconds resolves busy_pct
to about +-(1 / W) points per CPU); /proc/stat's user, system, irq and
softirq fields are not used: with tick accounting they are sampled by the
scheduler tick (HZ = 250 here: 4 ms per tick), which a periodic sampler
can beat against (the raw file keeps them).
"""

from __future__ import annotations

import glob
import os
import re
import time
from pathlib import Path

PROC, SYS = Path("/proc"), Path("/sys")


# --- parsers: pure functions of the files' text -------------------------------------------


def _cpu_columns(header: str) -> list[int]:
    """The CPU numbers of a header line ("CPU0 CPU1 CPU3": [0, 1, 3])."""
    return [int(w[3:]) for w in header.split() if re.fullmatch(r"CPU\d+", w)]


def parse_per_cpu(text: str) -> dict[str, dict[int, int]]:
    """/proc/interrupts or /proc/softirqs -> {line label: {cpu: count}}. The
    header names the CPU columns; each line has that many counts after its
    label (fewer only on /proc/interrupts' ERR and MIS lines, single error
    totals that are left out), then /proc/interrupts' descriptions."""
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
    interrupts = parse_per_cpu((proc_root / "interrupts").read_text())
    softirqs = parse_per_cpu((proc_root / "softirqs").read_text())
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
