"""The overhead experiment (make bench-overhead, part of bench-all): what
the 1 kHz sampler costs a real workload, resolved to half a percentage point
where the machine allows it. results/README.md ("What it costs: the
overhead experiment") gives the design: the workload, the two placements, the
ksample module, the paired runs (AB, BA, ...), rounds until each condition
is resolved or the budget ends, the wall-time and CPU-time rows. Why each
choice, and what README.md leaves out:

- The workload is `stress-ng --cpu 1 --cpu-method matrixprod --cpu-ops N`
  under `taskset -c W`, W the last CPU this process may use, N calibrated
  to about WORKLOAD_S seconds: one pinned worker has far less run-to-run
  variance than two floating ones, and its wall time shows any CPU the
  sampler takes from it.
- kernel's hrtimer runs on each package's lead CPU (kbench/ksample.h), so
  on a one-package machine whose workload CPU is not the lead CPU even
  "same CPU" puts only the drain thread beside the workload.
- When the sampler step could not run the kernel mechanism, the
  experiment still tries the load (and removes the module at once) to give
  its reason rather than a pointer to the sampler's row.
- A pair's two runs back to back cancel the machine's drift (the same work
  takes 0.28 s or 0.48 s depending on the minute); a row's median and
  distribution-free 95% CI (results/stats.py) are robust to the pairs that
  straddle a jump of its speed. Looking at the CI after every round lets
  the experiment stop early (a mild optional-stopping bias, which
  min_pairs() limits).
- `parameters` hold what varies from run to run (the calibrated count, the
  pairs taken, the bare run's median wall and CPU time), never the key.

Rows: harness hyperfine, path sampler, op the mechanism, target
"<workload>: wall time" or "<workload>: CPU time", cpu the CPU the sampler
is pinned to, target_cpu null, metric overhead_pct. The hyperfine JSON of
every timed run is kept in raw/hyperfine/.
"""

import contextlib
import dataclasses
import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from results import child, ksample_module, rows, sampler, stats, tools
from results.schedule import step_budget_s

HARNESS = "hyperfine"
TARGET_HALF_WIDTH = 0.5  # percentage points: Diamond & Stoico report 0.25 % to 46.75 %
WALL, CPU = "wall time", "CPU time"


# Seconds of one workload run, QUICK or not: short, so that many pairs fit
# the budget and a pair is over before the machine drifts. On a 2-vCPU
# Intel guest, 240 s of interleaved same-CPU powercap pairs at 0.05, 0.1
# and 0.25 s gave the same median (+3.3, +3.3, +2.7 %, CIs overlapping)
# and CI half-widths that needed 2.6x less time at 0.05 s than at 0.25 s;
# stress-ng's ~7 ms start, inside each timed run, dilutes nothing visible.
WORKLOAD_S = 0.05
CALIBRATION_RUNS = 3
# Seconds the step spends after its last pair (rows, the module's removal):
# kept out of the rounds' budget, so that the step ends within its own.
ROWS_TAIL_S = 0.5


def budget_s(quick: bool) -> float:
    """Seconds the whole experiment may take, calibration and warm-up
    included: the overhead step's budget (results/schedule.json), so that a
    full run's steps fit in 10 minutes."""
    return step_budget_s("overhead", quick)


def min_pairs(quick: bool) -> int:
    """Pairs before a condition may stop: a 95% CI from order statistics
    needs 6 at least (a QUICK run takes just those: it is never a finding);
    20 keeps the optional-stopping bias small."""
    return 6 if quick else 20


def workload(ops: int, cpu: int) -> list[str]:
    # --temp-path: stress-ng refuses to start in a working directory it
    # cannot write ("temp-path '.' must be readable and writeable"), which
    # a checkout owned by another user is
    return ["taskset", "-c", str(cpu), "stress-ng", "--cpu", "1", "--cpu-method", "matrixprod",
            "--cpu-ops", str(ops), "--temp-path", tempfile.gettempdir(), "--quiet"]


def describe_workload(cpu: int) -> str:
    """The workload as the rows name it: without the calibrated count."""
    return f"stress-ng --cpu 1 --cpu-method matrixprod, fixed work pinned to CPU {cpu}"


@dataclasses.dataclass(frozen=True)
class Placement:
    name: str         # "same CPU" or "other CPU"
    sampler_cpu: int
    workload_cpu: int


def placements(allowed: set[int]) -> list[Placement]:
    """The workload on the last allowed CPU; the sampler on it and, when
    there is one, on the first other CPU."""
    w = max(allowed)
    out = [Placement("same CPU", w, w)]
    others = sorted(allowed - {w})
    if others:
        out.append(Placement("other CPU", others[0], w))
    return out


def calibrate(target_s: float, cpu: int) -> int:
    """The --cpu-ops count that takes about target_s seconds here: after a
    warm-up run, the median of CALIBRATION_RUNS runs of a count long enough
    to scale from. A cold first run once took 0.083 s for what takes 0.01 s
    warm, and a run calibrated on it timed a 15 ms workload, not 50 ms."""
    def took(ops: int) -> float:
        times = []
        for _ in range(CALIBRATION_RUNS):
            start = time.monotonic()
            child.run(workload(ops, cpu), check=True, capture_output=True)
            times.append(time.monotonic() - start)
        return sorted(times)[len(times) // 2]

    ops = 25
    child.run(workload(ops, cpu), check=True, capture_output=True)  # warm-up
    while True:
        t = took(ops)
        if t >= target_s / 2 or ops >= 10_000_000:
            return max(1, round(ops * target_s / t))
        ops *= 4


def time_once(command: list[str], out: Path) -> tuple[float, float]:
    """One hyperfine run of `command` (no shell): (wall s, user + system s)."""
    cmd = ["hyperfine", "-N", "--runs", "1", "--style", "none", "--export-json", str(out),
           " ".join(command)]
    child.run(cmd, check=True, capture_output=True, text=True)
    result = json.loads(out.read_text())["results"][0]
    return result["times"][0], result["user"] + result["system"]


@dataclasses.dataclass
class Condition:
    """One mechanism (or tool) in one placement, and the pairs measured so far."""
    mechanism: str                  # the mechanism, or the tool's name
    placement: Placement
    wall: list = dataclasses.field(default_factory=list)   # overhead % per pair
    cpu: list = dataclasses.field(default_factory=list)
    bare: list = dataclasses.field(default_factory=list)   # (wall s, cpu s) of each bare run
    tool: tools.Planned | None = None                      # a tool, not raplbench-sample
    tool_cpu: list = dataclasses.field(default_factory=list)  # its CPU ms per s, per pair
    failed: str | None = None                              # why a tool stopped being measured

    @property
    def tag(self) -> str:
        return f"{self.mechanism}-{self.placement.name.split()[0]}"


def half_width(samples) -> float | None:
    """The larger half of the row's 95% CI around its median (results/stats.py);
    None below 6 samples, where min and max cover less than 95 %."""
    if len(samples) < 6:
        return None
    s = stats.summarize(samples)
    return max(s["median"] - s["ci95_low"], s["ci95_high"] - s["median"])


def is_resolved(c: Condition, quick: bool) -> bool:
    hw = half_width(c.wall)
    return (not quick and len(c.wall) >= min_pairs(quick) and hw is not None
            and hw <= TARGET_HALF_WIDTH)


def is_done(c: Condition, quick: bool) -> bool:
    """No more pairs: resolved, or a QUICK run's min_pairs (never a finding)."""
    return is_resolved(c, quick) or quick and len(c.wall) >= min_pairs(quick)


def one_pair(c: Condition, base: list[str], raw_dir: Path, sampled_first: bool,
             label: str | None = None):
    """Times the bare workload and the workload under c's sampler, back to
    back, in the given order; appends the pair's overheads to c."""
    label = label or f"{len(c.wall):03d}"
    times = {}
    for sampled in ((True, False) if sampled_first else (False, True)):
        out = raw_dir / "hyperfine" / f"{c.tag}-{label}-{'sampled' if sampled else 'bare'}.json"
        if not sampled:
            times[False] = time_once(base, out)
            continue
        # pinned to the placement's CPU (an in-kernel mechanism's drain thread
        # only); stop() raises when it died while the workload ran
        if c.tool is not None:
            background = tools.Background(c.tool.tool, list(c.tool.argv),
                                          c.placement.sampler_cpu, raw_dir / f"tool-{c.tag}.log")
        else:
            background = sampler.Background(c.mechanism,
                                            output=raw_dir / f"overhead-{c.tag}.csv",
                                            cpu=c.placement.sampler_cpu)
        try:
            times[True] = time_once(base, out)
        finally:
            tool_cpu = background.stop()
    if c.tool is not None:
        c.tool_cpu.append(tool_cpu)
    (bw, bc), (sw, sc) = times[False], times[True]
    c.wall.append(round(100.0 * (sw / bw - 1.0), 6))  # no 2e-14 from float noise
    c.cpu.append(round(100.0 * (sc / bc - 1.0), 6))
    c.bare.append((bw, bc))


def paired(c: Condition, into: Condition, base: list[str], raw_dir: Path, **how) -> None:
    """one_pair of `into` (c, or a warm-up's throwaway copy); a tool that
    crashes, hangs or reads no energy marks `c` failed with its output's
    tail, and the experiment goes on without it."""
    try:
        one_pair(into, base, raw_dir, **how)
    except tools.ToolFailed as e:
        c.failed = str(e)
        print(f"  {c.mechanism}: {e}", flush=True)


def resolution(c: Condition, samples, quick: bool) -> dict:
    """The row's resolution: resolved only in a full run whose wall-time CI
    half-width reached the target (the CPU-time row says how wide its own CI is)."""
    hw = half_width(samples)
    if quick:
        note = f"a QUICK run ({len(samples)} pairs) is never an overhead finding"
    elif hw is None or hw > TARGET_HALF_WIDTH:
        width = "no CI" if hw is None else f"±{hw:.2f} points"
        note = (f"not resolved at this n: {len(samples)} pairs gave {width}, "
                f"the target is ±{TARGET_HALF_WIDTH:g}")
    else:
        note = None
    return {"target_half_width": TARGET_HALF_WIDTH,
            "half_width": None if hw is None else round(hw, 4),
            "resolved": note is None, "note": note}


def condition_rows(common: dict, c: Condition, ops: int, stand_in, quick: bool,
                   elapsed_s: float, budget: float) -> list[dict]:
    workload_text = describe_workload(c.placement.workload_cpu)
    path = "sampler" if c.tool is None else "tool"
    if c.failed is not None:  # a tool that crashed, hung or read no energy: the run goes on
        return [rows.not_ok_row(common, harness=HARNESS, path=path, op=c.mechanism,
                                metric="overhead_pct", target=f"{workload_text}: {kind}",
                                cpu=c.placement.sampler_cpu, reason=c.failed, status="error",
                                stand_in=stand_in) for kind in (WALL, CPU)]
    params = {"placement": c.placement.name, "cpu_ops": ops, "pairs": len(c.wall),
              "workload_s": WORKLOAD_S, "budget_s": round(budget, 1),
              "elapsed_s": round(elapsed_s, 1),
              "bare_wall_s_median": round(stats.summarize([w for w, _ in c.bare])["median"], 6),
              "bare_cpu_s_median": round(stats.summarize([x for _, x in c.bare])["median"], 6)}
    if c.tool is not None:
        params |= {"tool_version": c.tool.version, "period_ms": c.tool.tool.period_ms,
                   "route": c.tool.tool.route, "command": " ".join(c.tool.argv),
                   "tool_cpu_ms_per_s": round(stats.summarize(c.tool_cpu)["median"], 3)}
    return [rows.measured_row(common, harness=HARNESS, path=path, op=c.mechanism,
                              target=f"{workload_text}: {kind}", cpu=c.placement.sampler_cpu,
                              target_cpu=None, metric="overhead_pct", unit="%",
                              samples=samples, stand_in=stand_in,
                              parameters=params, resolution=resolution(c, samples, quick))
            for kind, samples in ((WALL, c.wall), (CPU, c.cpu))]


def run(common: dict, raw_dir: Path, quick: bool, mechanisms: dict[str, str | None],
        allowed_cpus: set[int] | None = None, budget: float | None = None,
        tool_plan: tuple[list, dict] = ([], {})) -> list[dict]:
    """`mechanisms`: {mechanism: stand_in} of those that sample here. Every
    registered mechanism gets rows: measured, or one row saying why not.
    `tool_plan`: the tools to measure too and {name: why not} of the others
    (tools.plan), each with its rows. `budget`: seconds the experiment may
    take (default budget_s)."""
    def unavailable(op, why, status="unavailable", path="sampler"):
        return rows.not_ok_row(common, harness=HARNESS, path=path, op=op,
                               metric="overhead_pct", reason=why, status=status)

    entered = time.monotonic()
    runnable, tools_missing = tool_plan
    not_run = [unavailable(name, why, path="tool") for name, why in tools_missing.items()]
    missing = [tool for tool in ("hyperfine", "stress-ng", "taskset") if shutil.which(tool) is None]
    if missing:
        packages = sorted({"util-linux" if t == "taskset" else t for t in missing})
        why = f"{' and '.join(missing)} not installed (apt-get install {' '.join(packages)})"
        return ([unavailable(m, why) for m in sampler.MECHANISMS]
                + [unavailable(p.tool.name, why, path="tool") for p in runnable] + not_run)
    with ksample_module.around_experiment(sampler.MECHANISMS, mechanisms,
                                          raw_dir / "ksample.log") as (mechanisms, why_not):
        # the rounds' share: less what loading the module took, and the tail
        budget = (budget_s(quick) if budget is None else budget) - ROWS_TAIL_S
        out = experiment(common, raw_dir, quick, mechanisms, allowed_cpus,
                         budget - (time.monotonic() - entered), runnable)
    return (out + [unavailable(m, *why_not(m)) for m in sampler.MECHANISMS
                   if m not in mechanisms] + not_run)


@contextlib.contextmanager
def kept_off(cpu: int):
    """This process, and the hyperfine runs it starts, kept off the
    workload's CPU meanwhile (where another CPU is allowed): the driver
    waking beside the workload widened the pairs. Interleaved A/A pairs of
    bare runs (80 each, a 2-vCPU Intel guest) spread 4.6 and 4.2 points
    with it unpinned, 2.9 and 3.2 with it kept off. The workload and the
    samplers are pinned explicitly (taskset, Background's affinity)."""
    before = os.sched_getaffinity(0)
    others = before - {cpu}
    if others:
        os.sched_setaffinity(0, others)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def experiment(common: dict, raw_dir: Path, quick: bool, mechanisms: dict[str, str | None],
               allowed_cpus: set[int] | None, budget: float, runnable=()) -> list[dict]:
    """The paired rounds of every mechanism in `mechanisms` ({mechanism:
    stand_in}, each able to sample now) and placement, and of every tool in
    `runnable` (tools.Planned) on another CPU than the workload's (the
    workload's where there is none): their rows."""
    if not mechanisms and not runnable:
        return []
    places = placements(allowed_cpus or os.sched_getaffinity(0))
    conditions = [Condition(m, p) for m in mechanisms for p in places]
    conditions += [Condition(t.tool.name, places[-1], tool=t) for t in runnable]
    stand_ins = {**mechanisms, **{t.tool.name: t.stand_in for t in runnable}}
    with kept_off(places[0].workload_cpu):
        return _rounds(common, raw_dir, quick, stand_ins, conditions, places, budget)


def _rounds(common: dict, raw_dir: Path, quick: bool, stand_ins: dict[str, str | None],
            conditions: list[Condition], places: list[Placement], budget: float) -> list[dict]:
    start = time.monotonic()
    ops = calibrate(WORKLOAD_S, places[0].workload_cpu)
    base = workload(ops, places[0].workload_cpu)
    (raw_dir / "hyperfine").mkdir(exist_ok=True)
    print(f"  workload: {' '.join(base)} (~{WORKLOAD_S} s); sampler on "
          f"{', '.join(f'{p.name} (CPU {p.sampler_cpu})' for p in places)}; paired rounds until "
          f"each 95% CI is within ±{TARGET_HALF_WIDTH:g} points or {budget:.0f} s pass",
          flush=True)
    for c in conditions:  # warm-up: every mechanism loads once, nothing kept
        paired(c, Condition(c.mechanism, c.placement, tool=c.tool), base, raw_dir,
               sampled_first=False, label="warmup")
    shuffle = random.Random(common["run_id"])
    rounds, longest_pair = 0, 0.0

    def wants_pair(c: Condition) -> bool:
        # no pair that would end past the budget (the step's budget is what
        # the steps before it left of 10 minutes), but never fewer than
        # min_pairs (a row needs them for its CI)
        fits = time.monotonic() - start + longest_pair < budget
        return (c.failed is None and not is_done(c, quick)
                and (fits or len(c.wall) < min_pairs(quick)))

    while open_ := [c for c in conditions if wants_pair(c)]:
        shuffle.shuffle(open_)
        for c in open_:  # asked again before each pair: the budget may end within a round
            if wants_pair(c):
                began = time.monotonic()
                paired(c, c, base, raw_dir, sampled_first=len(c.wall) % 2 == 1)
                longest_pair = max(longest_pair, time.monotonic() - began)
        rounds += 1
        if rounds % 10 == 0 or not quick and rounds == 1:
            print(f"  round {rounds} ({time.monotonic() - start:.0f} s): " + ", ".join(
                f"{c.mechanism}/{c.placement.name} {stats.summarize(c.wall)['median']:+.2f}%"
                + (f" ±{hw:.2f}" if (hw := half_width(c.wall)) is not None else "")
                for c in conditions), flush=True)
    elapsed = time.monotonic() - start
    out = []
    for c in conditions:
        got = condition_rows(common, c, ops, stand_ins[c.mechanism], quick, elapsed, budget)
        wall = got[0]
        if c.failed is not None:
            print(f"  {c.mechanism:8s} {c.placement.name:9s}: error: {c.failed}", flush=True)
            out += got
            continue
        print(f"  {c.mechanism:8s} {c.placement.name:9s}: wall {wall['median']:+.2f}% "
              f"(95% CI {wall['ci95_low']:+.2f}..{wall['ci95_high']:+.2f}), "
              f"CPU {got[1]['median']:+.2f}%, {len(c.wall)} pairs: "
              f"{wall['resolution']['note'] or 'resolved'}", flush=True)
        out += got
    return out
