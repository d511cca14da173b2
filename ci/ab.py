"""Interleaved A/B rounds, then the gate on them (ci/README.md, "Interleaved
rounds: `ci/ab`"):

    ci/ab [--baseline-repo DIR] [--current-repo DIR] [--rounds N]
          [--only STEPS] [--full] [--runs-dir DIR] [gate options]

Both sides run alternately, in ABBA order (A B, B A, A B, ...), N rounds
each: `results.bench_all --quick --only STEPS` of each checkout with this
repository's Python (--full: without --quick; default steps gbench,criterion;
--baseline-repo defaults to this repository: an A/A run), each run with a
layout pad of random length; the rounds are then gated pairwise,
each row judged on its median per round (a paired t test,
gate_stats.compare_rounds). Why, and what it measured: ci/README.md,
"Interleaved rounds".

The runs stay in --runs-dir (baseline/, current/); the gate's summary and
verdict as for ci/gate. Exit status: the gate's (0 pass, 1 fail, 2 usage or
input error, or a run that could not be made).
"""

import argparse
import os
import random
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from ci import gate
from results import rows as rowlib
from results.latency_steps import leg_order

REPO = gate.REPO
DEFAULT_ROUNDS = 10
DEFAULT_STEPS = "gbench,criterion"
LAYOUT_PAD_VAR = "RAPLBENCH_LAYOUT_PAD"
# A random pad per run turns the environment's stack-alignment bias into
# noise (ci/README.md, "Interleaved rounds", Layout).
LAYOUT_PAD_MAX = 4096  # a page: every stack alignment within it


class RunFailed(RuntimeError):
    """A bench-all run that did not produce a run directory."""


def bench_run(repo: Path, runs_dir: Path, log: Path, only: str | None, quick: bool = True,
              pad: int | None = None) -> Path:
    """One bench-all run of the checkout `repo`; its run directory. The
    console output goes to `log` (after a first line giving the layout pad,
    `pad` bytes, random when None); RunFailed naming the log on failure."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    before = set(runs_dir.glob("2*"))
    cmd = [sys.executable, "-P", "-m", "results.bench_all", "--runs-dir", str(runs_dir)]
    cmd += ["--quick"] if quick else []
    cmd += ["--only", only] if only else []
    pad = random.randrange(LAYOUT_PAD_MAX) if pad is None else pad
    env = {**os.environ, "PYTHONPATH": str(repo), LAYOUT_PAD_VAR: "x" * pad}
    with open(log, "w") as out:
        out.write(f"ci/ab: {LAYOUT_PAD_VAR} of {pad} bytes\n")
        out.flush()
        done = subprocess.run(cmd, cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT)
    made = sorted(set(runs_dir.glob("2*")) - before)
    if done.returncode != 0 or len(made) != 1:
        raise RunFailed(f"bench-all of {repo} failed (exit {done.returncode}): see {log}")
    return made[0]


def abba(rounds: int) -> list[tuple[int, str]]:
    """The order of the runs: (round, side) with side "baseline" or
    "current"; round i runs baseline first when i is even (0-based)."""
    return [(leg - 1, side) for leg, side in leg_order(["baseline", "current"], rounds)]


def run_rounds(baseline_repo: Path, current_repo: Path, rounds: int, runs_dir: Path,
               only: str | None, quick: bool = True, current_context=None,
               progress=print) -> tuple[list[Path], list[Path]]:
    """Run both sides `rounds` times in ABBA order; (baseline run dirs,
    current run dirs), round by round. `current_context()`, when given, is
    entered around every current run (ci/aa: stress-ng beside it)."""
    made = {"baseline": [None] * rounds, "current": [None] * rounds}
    repos = {"baseline": baseline_repo, "current": current_repo}
    for i, side in abba(rounds):
        started = time.monotonic()
        context = current_context() if (side == "current" and current_context) else nullcontext()
        with context:
            made[side][i] = bench_run(repos[side], runs_dir / side,
                                      runs_dir / f"{side}-{i + 1}.log", only, quick)
        progress(f"  round {i + 1}/{rounds} {side}: {made[side][i].name} "
                 f"({time.monotonic() - started:.0f} s)")
    return made["baseline"], made["current"]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ci/ab", description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline-repo", type=Path, default=REPO, metavar="DIR",
                   help="built checkout of the baseline (default: this repository: an A/A run)")
    p.add_argument("--current-repo", type=Path, default=REPO, metavar="DIR",
                   help="built checkout to judge (default: this repository)")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                   help=f"runs of each side (default {DEFAULT_ROUNDS})")
    p.add_argument("--only", default=DEFAULT_STEPS,
                   help=f"bench-all steps to run (default {DEFAULT_STEPS}; 'all' for every step)")
    p.add_argument("--full", action="store_true", help="full runs instead of --quick ones")
    p.add_argument("--runs-dir", type=Path,
                   help="where the runs go (default: results/runs/ab-<UTC time>)")
    p.add_argument("--config", type=Path, metavar="TOML", help="gate settings (as for ci/gate)")
    p.add_argument("--summary", metavar="FILE", help="as for ci/gate")
    p.add_argument("--verdict", type=Path, metavar="FILE",
                   help="JSON verdict (default: gate-verdict.json in --runs-dir)")
    args = p.parse_args(argv)
    if args.rounds < 3:
        p.error("--rounds must be at least 3 (the gate compares no row on fewer rounds)")
    for name in ("baseline_repo", "current_repo"):
        repo = getattr(args, name).resolve()
        if not (repo / "results" / "bench_all.py").is_file():
            p.error(f"--{name.replace('_', '-')} {repo}: not a raplbench checkout "
                    "(no results/bench_all.py)")
        setattr(args, name, repo)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    runs_dir = (args.runs_dir or REPO / "results" / "runs" / f"ab-{rowlib.new_run_id()}").resolve()
    runs_dir.mkdir(parents=True, exist_ok=True)
    only = None if args.only == "all" else args.only
    print(f"ci/ab: {args.rounds} rounds of {args.baseline_repo} (baseline) and "
          f"{args.current_repo} (current), ABBA order; runs in {runs_dir}", flush=True)
    try:
        baselines, currents = run_rounds(args.baseline_repo, args.current_repo, args.rounds,
                                         runs_dir, only, quick=not args.full,
                                         progress=lambda s: print(s, flush=True))
    except (RunFailed, OSError) as e:
        print(f"ci/ab: {e}", file=sys.stderr)
        return gate.EXIT_USAGE
    gate_argv = ["--baseline", *map(str, baselines), "--current", *map(str, currents),
                 "--verdict", str(args.verdict or runs_dir / gate.VERDICT_NAME)]
    gate_argv += ["--config", str(args.config)] if args.config else []
    gate_argv += ["--summary", args.summary] if args.summary else []
    return gate.main(gate_argv)


if __name__ == "__main__":
    sys.exit(main())
