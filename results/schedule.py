"""The schedule both latency harnesses time every row by (Schedule), and
how each harness is told it: Google Benchmark's flags (gbench_args) and
rbench's environment (criterion_env, read by rbench/src/schedule.rs).
The QUICK and full schedules themselves are results/schedule.json, which
rbench reads too (a bare `cargo bench` times on the same schedule), with
each bench-all step's time budget (step_budget_s)."""

import dataclasses
import json
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Schedule:
    """How both harnesses time every row, so that their rows are the same
    statistic: `blocks` blocks per row (Google Benchmark repetitions; rbench
    rounds), each timing the operation for about `block_s` seconds right
    after `warmup_s` seconds of it untimed on the pinned thread, the blocks
    of all rows interleaved in a random order. A row's samples are its
    blocks' means (results/criterion.py, rbench/src/schedule.rs).

    When both harnesses run, they take turns in `legs` legs (run_latency;
    why: results/README.md, "Agreement between the harnesses").

    A rate row (ubench's ebpf-mmap "tick") counts ticks over one window of
    `rate_window_s` per block instead: 100 at 1 kHz in a full run, 50 in a
    QUICK one (its 2 rows took 2 s of each QUICK run's 10 s of timing at
    100 ms; a missed tick is then 2%, the gate's threshold 10%)."""
    blocks: int
    block_s: float
    warmup_s: float
    legs: int
    rate_window_s: float

    def leg_blocks(self) -> list[int]:
        """The blocks of each of the `legs` legs: the blocks shared out as
        evenly as they go, the larger shares first."""
        share, extra = divmod(self.blocks, self.legs)
        return [share + (i < extra) for i in range(self.legs)]


# QUICK has 3 legs, not more: each leg is a start of each harness (about
# 3.7 s on the development VMs: planning, the liveness probes, the BPF slot
# check), and the QUICK run stays within about a minute after the build.
_SCHEDULES = json.loads((Path(__file__).with_name("schedule.json")).read_text(encoding="utf-8"))
# "target_states" is the planner's (rbench/src/target_load.rs): the states
# a cross-CPU read is timed in, where it needs an IPI and where it does not
QUICK, FULL = (Schedule(**{k: v for k, v in _SCHEDULES[mode].items() if k != "target_states"})
               for mode in ("quick", "full"))
# What a target CPU does in each state (issue 34), in the order tables show them.
TARGET_STATES: dict[str, str] = _SCHEDULES["target_load"]["states"]
# Which use of a sampler meets each state (the findings say it)
TARGET_MET_BY: dict[str, str] = _SCHEDULES["target_load"]["met_by"]
# bench-all's steps, in the order they run (results/bench_all.HARNESSES checks it)
STEPS = tuple(_SCHEDULES["step_budget_s"]["full"])


def schedule(quick: bool) -> Schedule:
    return QUICK if quick else FULL


def step_budget_s(step: str, quick: bool) -> float:
    """Seconds bench-all's step `step` should take on a 2-vCPU machine: a
    full run's steps fit in 10 minutes, a QUICK run's in well under one.
    The overhead step stops its rounds at its budget; the others do a
    fixed amount of work, and bench-all says when one ran over."""
    return float(_SCHEDULES["step_budget_s"]["quick" if quick else "full"].get(step, 0))


# Google Benchmark 1.7.1 sizes a repetition to this many times its
# --benchmark_min_time: its last sizing run aims at min_time * 1.4
# (benchmark_runner.cc, PredictNumItersNeeded) and later repetitions reuse
# its iterations. So min_time is block_s / 1.4 for blocks as long as rbench's.
GBENCH_OVERSHOOT = 1.4


def gbench_args(quick: bool, blocks: int | None = None) -> list[str]:
    """Google Benchmark 1.7.1 flags for a leg of `blocks` blocks (default:
    all of them): times are plain numbers of seconds; a repetition is a
    block and warms its operation up first (--raplbench_warmup), as an
    rbench round does. Google Benchmark's own warm-up is off: it ran before
    a row's first repetition only, on top of that block's own warm-up, and
    took a QUICK leg 0.9 s of its 3.7 s (6 alternated legs, the row medians
    unchanged within their run-to-run spread)."""
    s = schedule(quick)
    return [f"--benchmark_repetitions={s.blocks if blocks is None else blocks}",
            f"--benchmark_min_time={s.block_s / GBENCH_OVERSHOOT:.6g}",
            "--benchmark_min_warmup_time=0",
            f"--raplbench_warmup={s.warmup_s}",
            f"--raplbench_rate_window={s.rate_window_s}",
            "--benchmark_enable_random_interleaving=true",
            "--benchmark_display_aggregates_only=true"]


def criterion_env(quick: bool, blocks: int | None = None) -> dict[str, str]:
    """rbench's knobs for the same schedule (rbench/src/schedule.rs), for a
    leg of `blocks` blocks (default: all of them): one round per block."""
    s = schedule(quick)
    env = {"RAPLBENCH_ROUNDS": str(s.blocks if blocks is None else blocks),
           "RAPLBENCH_BLOCK_S": str(s.block_s), "RAPLBENCH_WARMUP_S": str(s.warmup_s)}
    if quick:
        env["RAPLBENCH_QUICK"] = "1"
    return env
