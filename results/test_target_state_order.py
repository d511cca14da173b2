"""Does the suite order a cross-CPU read's busy and idle target the way an
independent timing loop does? (issue 34)

A read of another CPU's counter through /dev/cpu/N/cpuid (the msr device's
stand-in) or a CPU-bound perf event (msr/tsc/) runs code on that CPU (an
IPI), so its cost depends on what the target CPU is doing. The suite times
these rows with the target idle and busy (QUICK: one run of the latency
harnesses, shared). For each of the two routes this process can read (a
test each; the cpuid device needs root, the perf event CAP_PERFMON or
perf_event_paranoid <= 0), the test times the route itself, on the CPU pair
the suite's rows name, written apart from the harnesses: plain Python,
os.pread / os.read, perf_event_open through ctypes, the reading thread
pinned to the reader CPU, a spinner process pinned to the target CPU,
running in busy blocks and stopped (SIGSTOP) in idle ones, idle and busy
blocks of ~20 ms alternating. Only the statistics are the suite's
(significance.bootstrap_ci of the ratio of the blocks' medians).

Where both the independent loop and a harness put busy and idle beyond
noise (the ratio's 95% CI excludes 1; the two rows' 95% CIs do not
overlap), they must order them the same way. Whatever the noise, the suite
must have produced ok rows in both states for the route, and the spinner
must really have occupied the target CPU in busy blocks and not run at all
in idle ones: those are the assertions that can fail when nothing compares.
Other work on the target CPU (the spinner sharing it, tasks running there
in idle blocks; or the suite's own contention verdict) dilutes the states:
the independent loop is tried again, and a contended side is not compared.

Serial: it times reads and runs the latency harnesses (conftest.py).
"""

import ctypes
import errno
import json
import os
import platform
import signal
import statistics
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from results import significance as sig

pytestmark = pytest.mark.serial

REPO = Path(__file__).resolve().parent.parent
HARNESSES = ("gbench", "criterion")
STATES = ("idle", "busy")

BLOCKS = 48            # alternating idle, busy, idle, busy, ... (24 each)
WARMUP_BLOCKS = 2      # one of each, timed and dropped
BLOCK_NS = 20_000_000  # ~20 ms of reads per block
BATCH = 4              # reads per perf_counter_ns pair; a block's figure is the median batch
SUITE_TIMEOUT_S = 180
ATTEMPTS = 3           # independent loops tried while other work shares the target CPU
RUN_SHARE = 0.8        # a busy block's spinner below this share of the CPU: contended
OTHERS_IN_IDLE = 0.25  # tasks on the target for more of the idle blocks' ticks: contended

# the spinner: pins itself to the target CPU, says so, spins in user space
SPINNER = ("import os, sys\n"
           "os.sched_setaffinity(0, {int(sys.argv[1])})\n"
           "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
           "n = 0\n"
           "while True:\n"
           "    n += 1\n")


# ---- the routes ---------------------------------------------------------------------------------

@dataclass
class Route:
    """One IPI route the suite names with path/op/target, and how this test
    reads it on a target CPU, without the suite's code."""
    path: str
    op: str
    target: str
    open: object              # open(target_cpu) -> (read(), close())
    why_not: object           # why_not(target_cpu) -> None or the reason it cannot be read


def _cpuid_device(cpu: int) -> str:
    return f"/dev/cpu/{cpu}/cpuid"


def _open_cpuid(cpu: int):
    fd = os.open(_cpuid_device(cpu), os.O_RDONLY | os.O_CLOEXEC)
    pread = os.pread

    def read():
        return pread(fd, 16, 0)
    return read, lambda: os.close(fd)


def _cpuid_why_not(cpu: int) -> str | None:
    path = _cpuid_device(cpu)
    try:
        read, close = _open_cpuid(cpu)
    except OSError as e:
        hint = " (needs root)" if e.errno in (errno.EACCES, errno.EPERM) else \
            " (modprobe cpuid; kernel needs CONFIG_X86_CPUID)" if e.errno == errno.ENOENT else ""
        return f"{path}: {os.strerror(e.errno)}{hint}"
    try:
        got = read()
        if len(got) != 16:
            return f"{path}: a pread of 16 bytes at offset 0 gave {len(got)}"
    except OSError as e:
        return f"{path}: pread: {os.strerror(e.errno)}"
    finally:
        close()
    return None


MSR_PMU = Path("/sys/bus/event_source/devices/msr/type")
PERF_EVENT_OPEN = {"x86_64": 298, "i386": 336, "i686": 336}.get(platform.machine())
PERF_FLAG_FD_CLOEXEC = 8


def _perf_event_open(pmu_type: int, config: int, cpu: int) -> int:
    """perf_event_open(attr{type, config}, pid=-1, cpu, group_fd=-1): a
    counting event bound to `cpu`, enabled; raises OSError."""
    # struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes): type, size,
    # config, sample_period, sample_type, read_format, flags (0: enabled,
    # counting), wakeup_events, bp_type, config1
    attr = ctypes.create_string_buffer(struct.pack("IIQQQQQIIQ", pmu_type, 64, config,
                                                   0, 0, 0, 0, 0, 0, 0), 64)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(PERF_EVENT_OPEN), attr, ctypes.c_int(-1), ctypes.c_int(cpu),
                      ctypes.c_int(-1), ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC))
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return int(fd)


def _open_tsc(cpu: int):
    fd = _perf_event_open(int(MSR_PMU.read_text()), 0, cpu)
    read = os.read

    def one():
        return read(fd, 8)
    return one, lambda: os.close(fd)


def _tsc_why_not(cpu: int) -> str | None:
    if PERF_EVENT_OPEN is None:
        return f"perf_event_open's syscall number on {platform.machine()} is not known here"
    if not MSR_PMU.exists():
        return f"no msr PMU ({MSR_PMU} missing)"
    try:
        read, close = _open_tsc(cpu)
    except OSError as e:
        paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
        level = paranoid.read_text().strip() if paranoid.exists() else "?"
        return (f"perf_event_open(msr/tsc/, pid=-1, cpu={cpu}): {os.strerror(e.errno)} "
                f"(needs CAP_PERFMON or perf_event_paranoid <= 0; it is {level})")
    try:
        if len(read()) != 8:
            return "a read of the msr/tsc/ event did not give 8 bytes"
    except OSError as e:
        return f"read of the msr/tsc/ event: {os.strerror(e.errno)}"
    finally:
        close()
    return None


ROUTES = (Route("msr-dev", "pread", "cpuid:0x0", _open_cpuid, _cpuid_why_not),
          Route("perf", "read", "msr/tsc/", _open_tsc, _tsc_why_not))


# ---- the spinner --------------------------------------------------------------------------------

def _schedstat(pid: int) -> tuple[int, int]:
    """(ns the task ran on a CPU, ns it waited runnable on a run queue):
    /proc/<pid>/schedstat's first two fields."""
    ran, waited, _ = Path(f"/proc/{pid}/schedstat").read_text().split()
    return int(ran), int(waited)


def _state_of(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def _last_cpu(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[36])  # field 39, "processor"


def _cpu_ticks(cpu: int) -> tuple[int, int]:
    """(ticks tasks ran, all ticks) of `cpu` in /proc/stat: what else ran
    there. Interrupts (the IPIs of the reads themselves) and steal are left
    out of both."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{cpu} "):
            user, nice, system, idle, iowait = map(int, line.split()[1:6])
            busy = user + nice + system
            return busy, busy + idle + iowait
    raise AssertionError(f"no cpu{cpu} line in /proc/stat")


def _wait(predicate, what: str, timeout_s: float = 2.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.0005)


class Spinner:
    """A child process pinned to `cpu` spinning in user space, kept stopped
    (SIGSTOP) except between run() and stop()."""

    def __init__(self, cpu: int):
        self.proc = subprocess.Popen([sys.executable, "-c", SPINNER, str(cpu)],
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.pid = self.proc.pid
        line = self.proc.stdout.readline()
        assert line == b"ready\n", f"the spinner did not start: {line!r}"
        assert os.sched_getaffinity(self.pid) == {cpu}
        self.stop()

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)
        _wait(lambda: _state_of(self.pid) == "T", "the spinner to stop")

    def run(self) -> None:
        """SIGCONT, returning once it has run 0.2 ms: it is in its loop."""
        before = _schedstat(self.pid)[0]
        os.kill(self.pid, signal.SIGCONT)
        _wait(lambda: _schedstat(self.pid)[0] > before + 200_000, "the spinner to run")

    def close(self) -> None:
        self.proc.kill()  # SIGKILL ends a stopped process too
        self.proc.wait(timeout=5)
        self.proc.stdout.close()


# ---- the independent loop -----------------------------------------------------------------------

def _per_state(make):
    return field(default_factory=lambda: {s: make() for s in STATES})


@dataclass
class Independent:
    """The independent loop's blocks and what the target CPU did meanwhile, per state."""
    reader: int
    target: int
    blocks: dict = _per_state(list)              # ns per read, one per block
    wall_ns: dict = _per_state(int)
    ran_ns: dict = _per_state(int)               # the spinner on a CPU
    waited_ns: dict = _per_state(int)            # the spinner runnable, not on a CPU
    ticks: dict = _per_state(lambda: [0, 0])     # the target's ticks tasks ran, all ticks
    on_target: list = field(default_factory=list)  # the spinner's last CPU, per busy block

    def median(self, state: str) -> float:
        return statistics.median(self.blocks[state])

    def ratio_ci(self):
        """95% CI of median(busy blocks) / median(idle blocks)."""
        return sig.bootstrap_ci(_median_ratio, self.blocks["busy"], self.blocks["idle"])

    def share(self, what: dict, state: str) -> float:
        return what[state] / self.wall_ns[state]

    def contended(self) -> str | None:
        """Why other work of the machine shared the target CPU, or None."""
        if self.share(self.ran_ns, "busy") < RUN_SHARE:
            return (f"the spinner had {self.share(self.ran_ns, 'busy'):.0%} of the target CPU "
                    f"in busy blocks, other work the rest")
        if self.others_in_idle() > OTHERS_IN_IDLE:
            return (f"other tasks ran on the target CPU for {self.others_in_idle():.0%} of the "
                    f"idle blocks")
        return None

    def others_in_idle(self) -> float:
        """The share of the idle blocks' clock ticks tasks ran on the target CPU (/proc/stat)."""
        busy, total = self.ticks["idle"]
        return busy / total if total else 0.0


def _median_ratio(a, b, axis=-1):
    return np.median(a, axis=axis) / np.median(b, axis=axis)


def _time_block(read) -> float:
    """ns per read, the median over batches of BATCH reads, for ~BLOCK_NS."""
    clock = time.perf_counter_ns
    per_read = []
    end = clock() + BLOCK_NS
    while True:
        t0 = clock()
        for _ in range(BATCH):
            read()
        t1 = clock()
        per_read.append((t1 - t0) / BATCH)
        if t1 >= end:
            return statistics.median(per_read)


def time_independently(route: Route, reader: int, target: int) -> Independent:
    """Idle and busy blocks in turn, the reading thread on `reader`, the
    spinner on `target` running in busy blocks only."""
    out = Independent(reader, target)
    affinity = os.sched_getaffinity(0)
    spinner = None
    read, close = route.open(target)
    try:
        os.sched_setaffinity(0, {reader})
        spinner = Spinner(target)
        for i in range(WARMUP_BLOCKS + BLOCKS):
            state = STATES[i % 2]
            if state == "busy":
                spinner.run()
            (ran, waited), ticks = _schedstat(spinner.pid), _cpu_ticks(target)
            t0 = time.perf_counter_ns()
            ns = _time_block(read)
            wall = time.perf_counter_ns() - t0
            (ran2, waited2), ticks2 = _schedstat(spinner.pid), _cpu_ticks(target)
            if state == "busy":
                out.on_target.append(_last_cpu(spinner.pid))
                spinner.stop()
            if i >= WARMUP_BLOCKS:
                out.blocks[state].append(ns)
                out.wall_ns[state] += wall
                out.ran_ns[state] += ran2 - ran
                out.waited_ns[state] += waited2 - waited
                out.ticks[state][0] += ticks2[0] - ticks[0]
                out.ticks[state][1] += ticks2[1] - ticks[1]
    finally:
        close()
        if spinner is not None:
            spinner.close()
        os.sched_setaffinity(0, affinity)
    return out


# ---- the suite ----------------------------------------------------------------------------------

def run_suite(runs: Path) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "results.bench_all", "--quick",
                           "--only", "gbench,criterion", "--runs-dir", str(runs)],
                          cwd=REPO, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S)
    assert done.returncode == 0, f"bench_all failed ({done.returncode}):\n{done.stderr[-3000:]}"
    jsonl = runs / "latest" / "results.jsonl"
    assert jsonl.exists(), f"no {jsonl}:\n{done.stdout[-2000:]}"
    return [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]


def route_rows(rows: list[dict], route: Route) -> list[dict]:
    """The route's cross-CPU rows in a target state, of either harness."""
    return [r for r in rows
            if r.get("harness") in HARNESSES and r.get("target_state") in STATES
            and (r.get("path"), r.get("op"), r.get("target"))
            == (route.path, route.op, route.target)
            and r.get("cpu") is not None and r.get("target_cpu") is not None
            and r["cpu"] != r["target_cpu"]]


def _why_missing(rows: list[dict], harness: str, route: Route) -> str:
    """The reasons of the harness's rows of the route's path that were not timed."""
    reasons = sorted({r.get("reason") or "" for r in rows if r.get("harness") == harness
                      and r.get("path") == route.path and r.get("status") != "ok"} - {""})
    return (" (its rows of " + route.path + ": " + "; ".join(reasons) + ")") if reasons else ""


# ---- verdicts and figures -----------------------------------------------------------------------

def order_of_ci(lo: float, hi: float, one: float) -> str:
    """"busy slower", "busy faster" or "within noise" from a CI against `one`."""
    return "busy slower" if lo > one else "busy faster" if hi < one else "within noise"


def suite_order(idle: dict, busy: dict) -> str:
    if busy["ci95_low"] > idle["ci95_high"]:
        return "busy slower"
    if busy["ci95_high"] < idle["ci95_low"]:
        return "busy faster"
    return "within noise"


def independent_order(ind: Independent, ci) -> str:
    if ind.contended():
        return "not compared: " + ind.contended()
    return order_of_ci(*ci, 1.0) if ci else "within noise"


def suite_contended(rows: list[dict]) -> str | None:
    """The suite's own word that other work ran during its run (machine.contention)."""
    for r in rows:
        c = (r.get("machine") or {}).get("contention") or {}
        if c.get("busy"):
            return c.get("reason") or "the machine was busy with other work"
    return None


def _ns(x) -> str:
    return "—" if x is None else f"{x / 1000:.2f} µs" if x >= 1000 else f"{x:.0f} ns"


def figures(route: Route, ind: Independent, ci, by_harness: dict, contended: str | None,
            attempts: int) -> str:
    lines = [f"route {route.path} {route.op} {route.target}, reader CPU {ind.reader} -> "
             f"target CPU {ind.target}"]
    ratio = ind.median("busy") / ind.median("idle")
    lines.append(f"  independent: idle {_ns(ind.median('idle'))}, busy {_ns(ind.median('busy'))} "
                 f"per read ({len(ind.blocks['idle'])}+{len(ind.blocks['busy'])} blocks, "
                 f"attempt {attempts}); busy/idle {ratio:.3f}, 95% CI "
                 + (f"{ci[0]:.3f}–{ci[1]:.3f}" if ci else "—")
                 + f" -> {independent_order(ind, ci)}")
    lines.append(f"  target CPU {ind.target}: in busy blocks the spinner ran "
                 f"{ind.share(ind.ran_ns, 'busy'):.0%} of the time and waited for it "
                 f"{ind.share(ind.waited_ns, 'busy'):.0%}; in idle blocks it ran "
                 f"{ind.share(ind.ran_ns, 'idle'):.1%} and tasks ran there for "
                 f"{ind.others_in_idle():.0%} of the ticks ({ind.ticks['idle'][1]}); "
                 f"spinner last on CPU(s) {sorted(set(ind.on_target))}")
    for harness, states in by_harness.items():
        cells = []
        for s in STATES:
            r = states.get(s)
            cells.append(f"{s} " + ("missing" if r is None else
                                    f"{r['status']}: {_ns(r.get('median'))} "
                                    f"({_ns(r.get('ci95_low'))}–{_ns(r.get('ci95_high'))})"))
        lines.append(f"  {harness}: " + ", ".join(cells)
                     + f" -> {_harness_order(states, contended)}")
    return "\n".join(lines)


def _harness_order(states: dict, contended: str | None) -> str:
    if not all(s in states and states[s].get("status") == "ok" for s in STATES):
        return "not comparable"
    order = suite_order(states["idle"], states["busy"])
    return f"{order}; not compared: the suite's run was contended ({contended})" if contended \
        else order


# ---- the test -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def suite_rows(tmp_path_factory):
    """One QUICK run of the latency harnesses, shared by the routes."""
    return run_suite(tmp_path_factory.mktemp("target-state") / "runs")


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.path}-{r.op}")
def test_busy_and_idle_target_ordered_as_an_independent_loop_orders_them(route, request):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip(f"one CPU allowed here ({cpus}): no other CPU to read from")
    why = route.why_not(cpus[0])
    if why:
        refused = [w for r in ROUTES if (w := why if r is route else r.why_not(cpus[0]))]
        pytest.skip("no IPI route here: " + "; ".join(refused) if len(refused) == len(ROUTES)
                    else f"{route.path} {route.target} cannot be read here: {why}")

    rows = request.getfixturevalue("suite_rows")
    mine = route_rows(rows, route)
    if not mine and route.path == "msr-dev" and any(
            r.get("path") == "msr-dev" and r.get("target_state") for r in rows):
        pytest.skip("the suite read the msr device itself, not its cpuid stand-in")
    assert mine, (f"the suite timed no cross-CPU row of {route.path} {route.op} {route.target} "
                  f"in a target state, though this test can read it")
    pairs = {(r["cpu"], r["target_cpu"]) for r in mine}
    assert len(pairs) == 1, f"the suite's rows of {route.target} name several CPU pairs: {pairs}"
    (reader, target), = pairs
    assert {reader, target} <= set(cpus), f"the suite's pair {reader}->{target} is not allowed here"
    by_harness = {h: {r["target_state"]: r for r in mine if r["harness"] == h} for h in HARNESSES}
    contended = suite_contended(rows)

    why = route.why_not(target)
    assert why is None, f"{route.target} cannot be read on the suite's target CPU {target}: {why}"
    for attempt in range(1, ATTEMPTS + 1):  # other work on the target CPU: again, a few times
        ind = time_independently(route, reader, target)
        if not ind.contended():
            break
    ci = ind.ratio_ci()
    report = figures(route, ind, ci, by_harness, contended, attempt)
    print("\n" + report)

    # what holds whatever the noise: the suite timed the route in both states ...
    for harness, states in by_harness.items():
        for s in STATES:
            assert s in states, (f"{harness} has no {s} row for {route.target}"
                                 f"{_why_missing(rows, harness, route)}\n{report}")
            row = states[s]
            assert row["status"] == "ok", (
                f"{harness}'s {s} row is {row['status']}: {row.get('reason')}\n{report}")
            assert states[s].get("samples"), f"{harness}'s {s} row has no samples\n{report}"
    # ... and the independent loop's states were what they say (busy: the
    # spinner was on the target CPU, or runnable there while other work of
    # the machine ran in its place, for most of the busy blocks; idle: it
    # never ran)
    occupied = (ind.ran_ns["busy"] + ind.waited_ns["busy"]) / ind.wall_ns["busy"]
    assert occupied >= 0.8, (
        f"the target CPU was occupied for {occupied:.0%} of the busy blocks only\n{report}")
    ran = ind.share(ind.ran_ns, "busy")
    assert ran >= 0.1, f"the spinner ran for {ran:.0%} of the busy blocks only\n{report}"
    assert ind.ran_ns["idle"] <= 0.01 * ind.wall_ns["idle"], (
        f"the spinner ran during idle blocks\n{report}")
    assert set(ind.on_target) == {target}, f"the spinner left CPU {target}\n{report}"
    assert ci is not None, f"no bootstrap CI of the independent ratio\n{report}"

    # the comparison: where both are beyond noise (and neither contended), the same order
    mine_order = independent_order(ind, ci)
    for harness, states in by_harness.items():
        theirs = _harness_order(states, contended)
        if mine_order not in ("busy slower", "busy faster") or \
                theirs not in ("busy slower", "busy faster"):
            continue
        assert theirs == mine_order, (
            f"{harness} finds {theirs}, the independent loop {mine_order}\n{report}")
