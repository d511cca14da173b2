"""Was the machine busy with something else while a run measured it?
(issue 30: two runs at once were both about 1.8x slower, and neither
said so.)

Between steps, never while a step measures, bench-all takes a snapshot of
/proc: the CPU time of every process that is not the run's own (not
bench-all nor a descendant of it; a process's own time and the time of
the children it reaped, so short-lived commands of another job are seen
through their parent), the machine's steal time (/proc/stat: time the
hypervisor gave this guest's vCPUs to someone else), and the load
average. A step is busy when other processes used BUSY_OTHERS_CPUS (on at
least MIN_OTHERS_CPU_S of CPU time) or steal reached BUSY_STEAL_PCT; a run
is busy when any step is. The verdict and the per-step figures (their
fields: results/README.md, `contention`) go into machine.json, so every
row carries them and the report and the terminal table say so wherever
the run's figures are shown (plots/labels.py, contention_note).
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

# Thresholds. On an otherwise idle 2-vCPU development VM a QUICK run's
# steps saw 0.001-0.005 CPUs of other work (kernel threads, the VM's agent)
# and 0.0-0.06% steal; beside a Rust build and another test run they saw
# 1.4-2.0 CPUs. A tenth of a CPU of other work is 20x the idle floor and
# still small next to what a second run or a build does; 5% steal is a
# host overcommitted enough to slow the guest's timers visibly.
BUSY_OTHERS_CPUS = 0.10
BUSY_STEAL_PCT = 5.0
# CPU time is counted in ticks (10 ms at USER_HZ 100): in a step of 0.1 s
# one tick of a daemon is a tenth of a CPU. Other work under 5 ticks is
# never enough to call a step busy.
MIN_OTHERS_CPU_S = 0.05
TOP = 3  # other processes named per step
PROC = Path("/proc")


@dataclasses.dataclass
class Snapshot:
    at: float                       # time.monotonic()
    ticks: dict                     # (pid, start) -> (comm, ppid, CPU ticks incl. reaped children)
    cpu: list                       # /proc/stat's "cpu" line: jiffies per state
    load1: float | None


def _stat(pid_dir: Path):
    """(pid, comm, ppid, start, cpu ticks) of one /proc/PID, or None."""
    try:
        raw = (pid_dir / "stat").read_text()
    except OSError:
        return None
    head, _, tail = raw.rpartition(")")
    comm = head.partition("(")[2]
    f = tail.split()
    # after "comm)": state ppid ... utime(11) stime(12) cutime(13) cstime(14) ... starttime(19)
    try:
        return (int(pid_dir.name), comm, int(f[1]), int(f[19]),
                int(f[11]) + int(f[12]) + int(f[13]) + int(f[14]))
    except (IndexError, ValueError):
        return None


def snapshot(proc: Path = PROC) -> Snapshot:
    found = [got for d in proc.iterdir() if d.name.isdigit() and (got := _stat(d))]
    ticks = {(pid, start): (comm, ppid, cpu) for pid, comm, ppid, start, cpu in found}
    try:
        cpu = [int(x) for x in (proc / "stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        cpu = []
    try:
        load1 = float((proc / "loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        load1 = None
    return Snapshot(time.monotonic(), ticks, cpu, load1)


def ours(snap: Snapshot, root: int) -> set[int]:
    """`root` and its descendants in `snap`."""
    children: dict[int, list[int]] = {}
    for (pid, _), (_, ppid, _) in snap.ticks.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def others_by_command(a: Snapshot, b: Snapshot, root: int, hz: int | None = None) -> dict:
    """{command: CPU seconds} of the processes outside `root`'s tree from
    `a` to `b`."""
    hz = hz or os.sysconf("SC_CLK_TCK")
    mine = ours(a, root) | ours(b, root)
    used: dict[str, float] = {}
    for key, (comm, _, cpu) in b.ticks.items():
        if key[0] in mine:
            continue
        before = a.ticks.get(key)
        delta = cpu - (before[2] if before else 0)
        if delta > 0:
            used[comm] = used.get(comm, 0.0) + delta / hz
    return used


def between(a: Snapshot, b: Snapshot, root: int, hz: int | None = None,
            cpus: int | None = None) -> dict:
    """What other work ran from `a` to `b` (`root`: the run's own process).
    others_cpus is at most the machine's `cpus` (default: online CPUs): a
    child reaped in the interval brings its whole CPU time, also what it
    spent before the interval began."""
    wall = max(b.at - a.at, 1e-9)
    used = others_by_command(a, b, root, hz)
    cpus = cpus or os.cpu_count() or 1
    steal_pct = None
    if len(a.cpu) > 7 and len(b.cpu) > 7:
        d = [y - x for x, y in zip(a.cpu, b.cpu)]
        total = sum(d[:8])  # user nice system idle iowait irq softirq steal (guest is in user)
        steal_pct = round(100.0 * d[7] / total, 2) if total > 0 else 0.0
    top = sorted(used.items(), key=lambda kv: -kv[1])[:TOP]
    return {"wall_s": round(wall, 3),
            "others_cpu_s": round(sum(used.values()), 3),
            "others_cpus": round(min(sum(used.values()) / wall, cpus), 3),
            "steal_pct": steal_pct,
            "load1": b.load1,
            "top": [{"command": c, "cpu_s": round(s, 3)} for c, s in top]}


def is_busy(step: dict) -> bool:
    return ((step["others_cpus"] >= BUSY_OTHERS_CPUS
             and step["others_cpu_s"] >= MIN_OTHERS_CPU_S)
            or (step["steal_pct"] or 0.0) >= BUSY_STEAL_PCT)


def verdict(steps: dict[str, dict]) -> dict:
    """The machine.json "contention" object of a run's steps ({step: between()})."""
    busy = [name for name, s in steps.items() if is_busy(s)]
    if busy:
        worst = max((steps[n] for n in busy), key=lambda s: s["others_cpus"])
        who = ", ".join(t["command"] for t in worst["top"]) or "?"
        steal = max((steps[n]["steal_pct"] or 0.0) for n in busy)
        reason = (f"busy machine during {', '.join(busy)}: other processes used up to "
                  f"{worst['others_cpus']:.2f} CPUs ({who}), steal up to {steal:.1f}%")
    else:
        reason = None
    return {"busy": bool(busy), "reason": reason,
            "thresholds": {"others_cpus": BUSY_OTHERS_CPUS, "steal_pct": BUSY_STEAL_PCT},
            "steps": steps}


class Watch:
    """Snapshots around a run's steps: `step(name)` after each step."""

    def __init__(self, root: int | None = None):
        self.root = root or os.getpid()
        self.last = snapshot()
        self.steps: dict[str, dict] = {}

    def step(self, name: str) -> dict:
        now = snapshot()
        got = between(self.last, now, self.root)
        self.steps[name] = got
        self.last = now
        return got

    def result(self) -> dict:
        return verdict(self.steps)
