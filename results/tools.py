"""The tools people run to read energy (issue 36), as conditions of the
overhead experiment: their registry (results/tools.json), a user's own
command (`--tool NAME='command ... {period_ms} ...'`), what each needs that
a machine may lack, and a tool sampling beside the workload (Background).
results/README.md, "The tools people run", gives the experiment.

A tool is never patched: it runs at its own shortest period, or at 1 ms
where it accepts that. It is started in a session of its own (child.spawn),
pinned to the CPU of its placement, its stdout and stderr in one log file;
it is ready once a line of its output matches its `energy` pattern (a
user's command: once it printed anything), which is also how raplbench
sees that it read energy: a tool that falls back to a model, or reads
nothing, prints no such line and fails. It is stopped with SIGINT to its
process group, and killed STOP_TIMEOUT_S later. Its own CPU time is the
sum of its process group's threads' schedstat (not getrusage: tick-sampled).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

from results import child, registry

REGISTRY_FILE = Path(__file__).with_name("tools.json")
PERIODS = ("{period_ms}", "{period_s}")
PERIOD_MS = 1.0          # the seeds' 1 kHz, where a tool accepts it
START_TIMEOUT_S = 10.0   # from its start to its first energy line
STOP_TIMEOUT_S = 2.0     # from SIGINT to its exit, then SIGKILL
TAIL_LINES = 5
TAIL_BYTES = 65536       # of its output, searched for its energy line and quoted
NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")

# What a tool may need that a machine may lack: (present?, why not, as a
# person can act on it).
NEEDS = {
    "msr-device": (lambda: Path("/dev/cpu/0/msr").exists(),
                   "it reads the RAPL MSRs, and /dev/cpu/0/msr is missing (as root: modprobe msr)"),
    "powercap": (lambda: any(Path("/sys/class/powercap").glob("intel-rapl:*")),
                 "it reads the powercap RAPL zones, and /sys/class/powercap has none (as root: "
                 "modprobe intel_rapl_msr)"),
}


@dataclasses.dataclass(frozen=True)
class Tool:
    name: str                       # "perf-stat", or a user's NAME
    title: str
    command: tuple[str, ...]        # argv with its placeholders
    min_period_ms: float
    route: str                      # "perf", "msr", "powercap" or "its own"
    needs: tuple[str, ...] = ()     # keys of NEEDS
    energy: str | None = None       # a regex one line of its output matches; None: any line
    debian: str | None = None       # the package that installs it
    version_command: tuple[str, ...] = ()
    version_pattern: str | None = None
    user: bool = False              # given with --tool
    stand_in_note: str | None = None  # what reading a stand-in changes in its cost

    @property
    def period_ms(self) -> float:
        return max(PERIOD_MS, self.min_period_ms)

    def argv(self, perf_events: str | None = None) -> list[str]:
        """Its command line at its period ({perf_events}: the events perf counts)."""
        fill = {"{period_ms}": f"{self.period_ms:g}", "{period_s}": f"{self.period_ms / 1e3:g}",
                "{perf_events}": perf_events or ""}
        out = []
        for arg in self.command:
            for key, value in fill.items():
                arg = arg.replace(key, value)
            out.append(arg)
        return out


def load(path: Path = REGISTRY_FILE) -> dict[str, Tool]:
    """The registry's tools by name; ValueError naming the entry and the fault."""
    doc = json.loads(path.read_text())
    out = {}
    for name, e in doc["tools"].items():
        try:
            if not NAME.fullmatch(name) or not any(p in a for a in e["command"] for p in PERIODS):
                raise ValueError("a name of [a-z0-9._-], and a command with {period_ms} or "
                                 "{period_s}")
            unknown = set(e["needs"]) - set(NEEDS)
            if unknown:
                raise ValueError(f"unknown needs {sorted(unknown)} (known: {sorted(NEEDS)})")
            re.compile(e["energy"])
            out[name] = Tool(name=name, title=e["title"], command=tuple(e["command"]),
                             min_period_ms=float(e["min_period_ms"]), route=e["route"],
                             needs=tuple(e["needs"]), energy=e["energy"], debian=e["debian"],
                             version_command=tuple(e["version"]["command"]),
                             version_pattern=e["version"]["pattern"],
                             stand_in_note=e.get("stand_in_note"))
        except (KeyError, TypeError, ValueError, re.error) as err:
            raise ValueError(f"{path}: tool {name!r}: {err!r}") from None
    return out


def user_tool(spec: str) -> Tool:
    """`NAME=command ...` as --tool gives it: the command (split as a shell
    would, never run by one) with {period_ms} or {period_s} where its period
    goes; ValueError saying what is wrong."""
    name, sep, command = spec.partition("=")
    if not sep or not command.strip():
        raise ValueError(f"--tool {spec!r}: give NAME='command ... {{period_ms}} ...'")
    if not NAME.fullmatch(name):
        raise ValueError(f"--tool {spec!r}: NAME must be lower case letters, digits, . _ -")
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise ValueError(f"--tool {spec!r}: {e}") from None
    if not any(p in a for a in argv for p in PERIODS):
        raise ValueError(f"--tool {spec!r}: the command has no {{period_ms}} or {{period_s}}, so "
                         "raplbench cannot set its sampling period")
    return Tool(name=name, title=f"a user's command: {command.strip()}", command=tuple(argv),
                min_period_ms=PERIOD_MS, route="its own", user=True)


def user_tools(specs) -> list[Tool]:
    """The --tool `specs` (user_tool each); ValueError for a name a
    mechanism, a registry tool or another --tool already has (their rows and
    raw files are named by it)."""
    out = [user_tool(s) for s in specs]
    taken = set(registry.MECHANISMS) | set(load())
    for t in out:
        if t.name in taken:
            raise ValueError(f"--tool {t.name}=...: the name {t.name!r} is taken (by a "
                             f"mechanism, a registry tool or another --tool): choose another")
        taken.add(t.name)
    return out


def why_not(tool: Tool, perf_events: str | None) -> str | None:
    """Why `tool` cannot run here, with what would fix it; None if it can."""
    binary = tool.command[0]
    if shutil.which(binary) is None:
        fix = (f"as root: apt-get install {tool.debian}" if tool.debian
               else "install it, or give its full path")
        return f"{binary} is not installed ({fix})"
    for need in tool.needs:
        present, reason = NEEDS[need]
        if not present():
            return reason
    if any("{perf_events}" in a for a in tool.command) and not perf_events:
        return "the perf mechanism found no energy event here (nor the msr/tsc/ stand-in)"
    return None


def version(tool: Tool) -> str | None:
    """Its version as it prints it, or None."""
    if tool.user or not tool.version_command:
        return None
    try:
        done = subprocess.run(tool.version_command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(tool.version_pattern or r"(\S+)", done.stdout + done.stderr)
    return found.group(1) if found else None


def group_cpu_ns(pgid: int, proc: Path = Path("/proc")) -> int:
    """CPU ns of every thread of the processes in group `pgid` (schedstat)."""
    total = 0
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # pgrp, the 5th field
                continue
            for task in (stat.parent / "task").iterdir():
                total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # it exited meanwhile
    return total


class ToolFailed(RuntimeError):
    """A tool that did not read energy, exited early or would not start."""


class Background:
    """`tool` sampling, pinned to `cpu`, its output in `log`; ready (the
    constructor returns) once it printed an energy line. stop() stops it
    and returns its own CPU ms per second of wall time since it was ready."""

    def __init__(self, tool: Tool, argv: list[str], cpu: int, log: Path,
                 start_timeout_s: float = START_TIMEOUT_S):
        self.tool, self.log = tool, log
        self.pattern = re.compile(tool.energy or r"\S", re.MULTILINE)
        with open(log, "wb") as out:
            self.proc = child.spawn(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT,
                                    preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
        deadline = time.monotonic() + start_timeout_s
        while not self.pattern.search(self._output()):
            if self.proc.poll() is not None:
                self._end()
                raise ToolFailed(f"{tool.name} exited with status {self.proc.returncode} "
                                 f"before it printed an energy reading: {self.tail()}")
            if time.monotonic() > deadline:
                self._end()
                raise ToolFailed(f"{tool.name} printed no energy reading (/{self.pattern.pattern}/)"
                                 f" within {start_timeout_s:g} s; killed. Its output: "
                                 f"{self.tail()}")
            time.sleep(0.002)
        self.started, self.cpu_start = time.monotonic(), group_cpu_ns(self.proc.pid)

    def _output(self) -> str:
        """The last TAIL_BYTES of its output (a tool may write without end)."""
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL_BYTES))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def tail(self) -> str:
        """Its last TAIL_LINES lines, each cut to 200 characters."""
        lines = [x[:200] for x in self._output().splitlines() if x.strip()]
        return " | ".join(lines[-TAIL_LINES:]) or "(nothing)"

    def _end(self) -> None:
        """SIGINT to its group; SIGKILL STOP_TIMEOUT_S later."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill_group(self.proc.pid)
                self.proc.wait()
        child.release(self.proc)

    def stop(self) -> float:
        cpu_ns = group_cpu_ns(self.proc.pid) - self.cpu_start
        wall_s = max(time.monotonic() - self.started, 1e-9)
        if self.proc.poll() is not None:
            self._end()
            raise ToolFailed(f"{self.tool.name} exited with status {self.proc.returncode} while "
                             f"the workload ran: {self.tail()}")
        self._end()
        return cpu_ns / 1e6 / wall_s


@dataclasses.dataclass(frozen=True)
class Planned:
    """A tool the overhead experiment runs: its command line here, the
    stand-in it reads (perf-stat on msr/tsc/), its version."""
    tool: Tool
    argv: tuple[str, ...]
    stand_in: str | None
    version: str | None


# QUICK measures at most these registry tools (and every --tool)
QUICK_TOOLS = ("perf-stat",)


def plan(quick: bool, users=(), perf_events: str | None = None,
         perf_stand_in: str | None = None,
         known: dict[str, Tool] | None = None) -> tuple[list[Planned], dict[str, str]]:
    """The tools to measure here (every registry tool, QUICK_TOOLS under
    QUICK, and `users`, the user's: user_tools), and {name: why not} of
    those that cannot run. `perf_events`: what the perf mechanism counts
    here ("msr/tsc/" or the RAPL events), None where it found nothing; its
    stand-in note."""
    known = load() if known is None else known
    chosen = [t for name, t in known.items() if not quick or name in QUICK_TOOLS]
    chosen += list(users)
    runnable, missing = [], {}
    for t in chosen:
        why = why_not(t, perf_events)
        if why:
            missing[t.name] = why
            continue
        reads_perf = any("{perf_events}" in a for a in t.command)
        stand_in = perf_stand_in if reads_perf else None
        if stand_in and t.stand_in_note:
            stand_in = f"{stand_in}; {t.stand_in_note}"
        runnable.append(Planned(t, tuple(t.argv(perf_events)), stand_in, version(t)))
    return runnable, missing
