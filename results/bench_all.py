"""make bench-all: run every harness, write one validated run directory,
print its summary (results/summary.py: the latency table, the experiment
tables, the findings).

    python -m results.bench_all [--quick] [--only STEP,...] [--runs-dir results/runs]
                                [--build-dir build]

Steps, in order: gbench (ubench) and criterion (rbench), taking turns in
legs (run_latency), the one that leads drawn at random (SWAPPED_STEPS);
kbench (the module, where it loads), sampler (raplbench-sample's
self-report per mechanism), victim (raplbench-interfere: what each route's
reads and each mechanism cost another CPU), idle (what each mechanism costs
an idle machine: wakeups, CPU time, C-state residency by frequency), overhead (hyperfine: a stress-ng workload with
and without the sampler).
`make bench-all` then writes the report (python -m plots.report).

A run directory results/runs/<run_id>/ holds each harness's raw output
(raw/), machine.json, results.jsonl (every row, validated), results.parquet
agreement.md and checks.txt (results/README.md, "Run directory"), and
results/runs/latest points at the newest complete run.

A harness that cannot run, or crashes, never aborts the run: its paths get
rows with status "error" (or "unavailable") and the reason, and the other
harnesses go on. QUICK mode shortens every harness for smoke tests and CI
gates (under a minute once built).
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq

from results import (agreement, checks, child, contention, files, guardian, idle_cost,
                     interrupt, kbench, machine, overhead, rows, run_lock, run_state, sampler,
                     schema, summary, tools, victim)
from results.latency_steps import STANDS_FOR, run_criterion, run_gbench, run_latency
from results.schedule import STEPS, schedule, step_budget_s
from results.steps import Run, failed_rows, run_step

REPO = Path(__file__).resolve().parent.parent


# ---- the kernel module (kbench) -------------------------------------------

def run_kbench(run: Run) -> list[dict]:
    """kbench/run loads the module natively; where it cannot (no module
    support, no headers, no root) it says why and the rows are unavailable."""
    report = run.raw_dir / "kbench.txt"
    env = dict(os.environ)
    if run.quick:
        env.update(KBENCH_ITERATIONS="200", KBENCH_BATCHES="10", KBENCH_READS="200",
                   KBENCH_REPS="10")
    with open(run.raw_dir / "kbench.log", "w", encoding="utf-8") as log:
        done = child.run([str(REPO / "kbench" / "run"), str(report)], env=env,
                         stdout=log, stderr=subprocess.PIPE, text=True)
        log.write(done.stderr)
    last = (done.stderr.strip().splitlines() or [""])[-1]
    if done.returncode == 3 and last.startswith("unavailable: "):
        print(f"  kbench {last}")
        return kbench.unavailable_rows(run.common, last[len("unavailable: "):])
    if done.returncode != 0:
        return failed_rows(run, kbench.HARNESS, kbench.PATHS,
                           f"kbench/run exited with status {done.returncode}: {last}")
    try:
        return kbench.report_rows(report.read_text(encoding="utf-8"), run.common)
    except (OSError, ValueError) as e:
        return failed_rows(run, kbench.HARNESS, kbench.PATHS, f"{report}: {e}")


# ---- the 1 kHz sampler: self-report, then the overhead experiment -----------

def run_sampler(run: Run) -> list[dict]:
    got = sampler.run_all(run.common, run.raw_dir, run.quick)
    run.sampler_mechanisms = sampler.stand_ins(got)
    run.sampler_rows = got
    return got


def run_victim(run: Run) -> list[dict]:
    if run.sampler_mechanisms is None:  # the sampler step did not run: find out now
        run_sampler(run)
    return victim.run(run.common, run.raw_dir, run.quick, run.sampler_rows,
                      run.sampler_mechanisms)


def run_idle(run: Run) -> list[dict]:
    if run.sampler_mechanisms is None:  # the sampler step did not run: find out now
        run_sampler(run)
    return idle_cost.run(run.common, run.raw_dir, run.quick, run.sampler_mechanisms)


def run_overhead(run: Run) -> list[dict]:
    if run.sampler_mechanisms is None:  # the sampler step did not run: find out now
        run_sampler(run)
    perf = victim.sampler_targets(run.sampler_rows).get("perf")
    try:
        tool_plan = tools.plan(run.quick, run.user_tools, perf and perf.target,
                               perf and perf.stand_in)
        return overhead.run(run.common, run.raw_dir, run.quick, run.sampler_mechanisms,
                            budget=run.step_budget_s, tool_plan=tool_plan)
    except (OSError, subprocess.CalledProcessError, ValueError, RuntimeError) as e:
        detail = getattr(e, "stderr", None) or ""
        return failed_rows(run, overhead.HARNESS, ("sampler",),
                           f"the overhead experiment failed: {e} {detail}".strip())


# Every harness of the suite, in the order they run: (name, what, step).
HARNESSES = [
    ("gbench", "ubench, Google Benchmark", run_gbench),
    ("criterion", "rbench, Criterion", run_criterion),
    ("kbench", "the kernel module", run_kbench),
    ("sampler", "raplbench-sample self-report, idle machine", run_sampler),
    ("victim", "raplbench-interfere: what a neighbour's reads cost another CPU", run_victim),
    ("idle", "what each sampler costs an idle machine, by frequency", run_idle),
    ("overhead", "hyperfine: the sampler under a stress-ng workload", run_overhead),
]
# The step whose budget grows by what the steps before it saved of theirs: it
# stops when its conditions are resolved or its budget is spent.
TAKES_WHAT_IS_LEFT = {"overhead"}
# The rows a step stands for when it crashes: (harness, paths).
STEP_ROWS = {
    **STANDS_FOR,
    "kbench": (kbench.HARNESS, kbench.PATHS),
    "sampler": (sampler.HARNESS, ("sampler",)),
    "victim": (victim.HARNESS, victim.ROUTE_PATHS + ("sampler",)),
    "idle": (idle_cost.HARNESS, ("sampler",)),
    "overhead": (overhead.HARNESS, ("sampler",)),
}
assert STEP_ROWS.keys() == {name for name, _, _ in HARNESSES}
assert tuple(name for name, _, _ in HARNESSES) == STEPS
assert all(step_budget_s(name, quick) > 0 for name, _, _ in HARNESSES for quick in (True, False))


# The two latency harnesses that time the same paths (results/agreement.py).
# They take turns in legs (run_latency), and which of them leads is a coin
# flip per run (an A/B order per run, as ci/ab alternates its checkouts):
# their rows record where they ran (parameters.step), so a report over runs
# can look for an effect of the order.
SWAPPED_STEPS = ("gbench", "criterion")


def step_order(steps: list, rng: random.Random) -> list:
    """`steps` ([(name, what, step)]), with the two SWAPPED_STEPS trading
    places on a coin flip of `rng` (when both are there)."""
    names = [name for name, _, _ in steps]
    if not set(SWAPPED_STEPS) <= set(names) or rng.random() < 0.5:
        return list(steps)
    i, j = (names.index(name) for name in SWAPPED_STEPS)
    order = list(steps)
    order[i], order[j] = order[j], order[i]
    return order


def step_groups(steps: list, legs: int) -> list[tuple[list[int], list[str], str]]:
    """(places, names, what) of each group of `steps` ([(name, what,
    step)]) that runs as one: the two SWAPPED_STEPS, when both are there,
    side by side, taking turns in legs (run_latency); every other step
    alone. Places count from 1 in `steps`."""
    groups = []
    for place, (name, what, _) in enumerate(steps, 1):
        last = groups[-1] if groups else None
        if (name in SWAPPED_STEPS and last and len(last[1]) == 1
                and last[1][0] in SWAPPED_STEPS and last[1][0] != name):
            groups[-1] = (last[0] + [place], last[1] + [name], f"taking turns in {legs} legs")
        else:
            groups.append(([place], [name], what))
    return groups


def mark_step(step_rows: list[dict], position: int) -> list[dict]:
    """Records in each row where its step ran in the run (1 = first)."""
    for row in step_rows:
        row["parameters"] = {**(row.get("parameters") or {}), "step": position}
    return step_rows


# ---- the run ----------------------------------------------------------------

def write_run(run: Run, all_rows: list[dict]) -> list[str]:
    """Writes machine.json, results.jsonl (then validates it) and
    results.parquet; returns the validation errors (empty when valid)."""
    files.write_atomic(run.run_dir / "machine.json",
                       json.dumps(run.common["machine"], indent=2) + "\n")
    jsonl = run.run_dir / "results.jsonl"
    rows.write_jsonl(all_rows, jsonl)
    errors = [f"{jsonl}:{line}: {field}: {msg}"
              for line, field, msg in schema.iter_file_errors(jsonl)]
    if not errors:
        with files.replacing(run.run_dir / "results.parquet") as tmp:
            pq.write_table(parquet_table(jsonl), tmp)
    return errors


def parquet_table(jsonl: Path) -> pa.Table:
    """The rows of `jsonl` as a table: a column per field of any row, in the
    order first seen, null where a row has no such field; an object is a
    struct of every key its rows have. Read by pyarrow's JSON reader (C++),
    in one block, so that every row's types are inferred together (an int
    column with gaps stays int64). Built from Python objects instead,
    pyarrow imports pandas: 0.3 s of the end of every bench-all."""
    size = jsonl.stat().st_size
    if size == 0:
        return pa.table({})
    # kept as written: the reader would make the timestamp a timestamp type
    # and put the column first
    as_text = pa.schema([("timestamp", pa.string())])
    table = pj.read_json(
        jsonl, read_options=pj.ReadOptions(block_size=max(size + 1, 1 << 20)),
        parse_options=pj.ParseOptions(explicit_schema=as_text, unexpected_field_behavior="infer"))
    with open(jsonl, encoding="utf-8") as f:
        first = json.loads(f.readline())
    order = [*first, *(name for name in table.column_names if name not in first)]
    return table.select(order)


# Test hooks that move what the harnesses and the sampler read to a fixture
# tree; a run of this machine must not inherit one. Their one list, which
# rbench reads too: results/fixture_hooks.json.
FIXTURE_HOOKS = tuple(hook["var"] for hook in json.loads(
    Path(__file__).with_name("fixture_hooks.json").read_text(encoding="utf-8"))["hooks"])


def fixture_hooks(env) -> list[str]:
    """The fixture hooks set (non-empty) in `env`."""
    return [name for name in FIXTURE_HOOKS if env.get(name)]


def absolute_path(text: str) -> Path:
    return Path(text).resolve()


def point_latest(runs_dir: Path, run_dir: Path) -> None:
    latest = runs_dir / "latest"
    tmp = runs_dir / f".latest.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_dir.name)
    tmp.replace(latest)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs (smoke tests, CI)")
    # Absolute: the Criterion benchmark runs in rbench/ (as cargo bench runs it), so a
    # relative CRITERION_HOME or manifest path would land under rbench/.
    parser.add_argument("--runs-dir", type=absolute_path, default=REPO / "results" / "runs")
    parser.add_argument("--build-dir", type=absolute_path, default=REPO / "build")
    parser.add_argument("--only", help="comma-separated steps to run, of: "
                        + ", ".join(name for name, _, _ in HARNESSES))
    parser.add_argument("--report", action="store_true",
                        help="draw this run's report (python -m plots.report RUN_DIR) at its end")
    parser.add_argument("--tool", action="append", default=[], metavar="NAME=COMMAND",
                        help="also measure this command as a tool in the overhead experiment, "
                             "e.g. --tool mine='my-meter --every {period_ms}ms' ({period_ms} or "
                             "{period_s}: where its period goes; results/README.md, \"The tools "
                             "people run\"); repeatable")
    parser.add_argument("--wait", action="store_true",
                        help="when another run holds this checkout's run lock, wait for it "
                             "(default: exit, naming it)")
    args = parser.parse_args(argv)
    try:
        args.user_tools = tools.user_tools(args.tool)
    except ValueError as e:
        parser.error(str(e))
    args.steps = HARNESSES
    if args.only:
        wanted = args.only.split(",")
        unknown = set(wanted) - {name for name, _, _ in HARNESSES}
        if unknown:
            parser.error(f"unknown step(s) {', '.join(sorted(unknown))}")
        args.steps = [h for h in HARNESSES if h[0] in wanted]
    hooks = fixture_hooks(os.environ)
    if hooks:
        parser.error(f"{', '.join(hooks)} set: the harnesses would measure a fixture tree, not "
                     "this machine (these variables are test hooks); unset them")
    return args


def seconds(budget: float) -> str:
    """A budget as printed: 60, or 22.1 (the overhead step's, what is left)."""
    return f"{round(budget, 1):g}"


def against_budget(spent: float, budget: float, whose: str) -> str:
    """"41.2 s of its 60 s budget", or "71.0 s: OVER its 60 s budget" (over
    as printed: 14.03 s is 14.0 s, within a budget of 14 s)."""
    over = round(spent, 1) > round(budget, 1)
    return f"{spent:.1f} s" + (f": OVER {whose}" if over else f" of {whose}") + \
        f" {seconds(budget)} s budget"


def run_steps(run: Run, steps: list, watch: contention.Watch, where_now: dict) -> list[dict]:
    """Every step of `steps`, in a random order of the latency pair
    (step_order); `where_now["step"]` names the step running."""
    all_rows = []
    step_of = {name: step for name, _, step in steps}
    began, budget_all = time.monotonic(), sum(step_budget_s(n, run.quick) for n in step_of)
    order = step_order(steps, random.Random())
    for places, names, what in step_groups(order, schedule(run.quick).legs):
        where = "-".join(map(str, places)) + f"/{len(steps)}"
        where_now["step"] = " and ".join(names)
        budget = sum(step_budget_s(name, run.quick) for name in names)
        if TAKES_WHAT_IS_LEFT & set(names):  # what the steps before it saved of their budgets
            budget = max(budget, began + budget_all - time.monotonic())
        run.step_budget_s = budget
        print(f"[{where}] {' and '.join(names)} ({what}; budget {seconds(budget)} s)", flush=True)
        started = time.monotonic()
        if len(names) > 1:
            got = run_latency(run, names)
        else:
            got = {names[0]: run_step(run, names[0], step_of[names[0]],
                                         STEP_ROWS.get(names[0], (names[0], (names[0],))))}
        interrupt.check()  # a step's rows are never taken from a step a signal cut short
        for place, name in zip(places, names):
            all_rows += mark_step(got[name], place)
        load = watch.step("+".join(names))
        busy = (f"; busy machine: other processes used {load['others_cpus']:.2f} CPUs"
                if contention.is_busy(load) else "")
        spent = time.monotonic() - started
        print(f"[{where}] {' and '.join(names)}: done in {against_budget(spent, budget, 'its')}"
              f"{busy}", flush=True)
    where_now["step"] = None
    print(f"steps: done in {against_budget(time.monotonic() - began, budget_all, 'their')}",
          flush=True)
    return all_rows


def finish_run(args, run: Run, the_machine: dict, all_rows: list[dict],
               watch: contention.Watch, state: dict, where_now: dict) -> int:
    """Writes the run's files, marks it complete (where_now["complete"]),
    points `latest` at it, prints its tables."""
    # the kernel's TSC frequency is unknown on some machines: use the measured one
    if the_machine["tsc_khz"] is None and run.tsc_khz_hints:
        the_machine["tsc_khz"] = run.tsc_khz_hints[0]
    the_machine["contention"] = watch.result()
    for row in all_rows:  # one run, one machine: the same object in every row
        row["machine"] = the_machine
    errors = write_run(run, all_rows)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        print(f"bench-all: {len(errors)} invalid rows (a bug in a normalizer)", file=sys.stderr)
        run_state.failed(run.run_dir, state, f"{len(errors)} invalid rows (a bug in a normalizer)")
        return 2
    run_state.finish(run.run_dir)
    point_latest(args.runs_dir, run.run_dir)
    where_now["complete"] = True
    busy = the_machine["contention"]["reason"]
    print()
    if busy:
        print(f"NOTE: {busy}: these figures are not this machine's alone", flush=True)
    agreement_md = agreement.report(all_rows, run.common["run_id"])
    if busy:  # its verdicts too were reached beside other work
        agreement_md = agreement_md.replace("\n", f"\n\n> NOTE: {busy}.\n", 1)
    files.write_atomic(run.run_dir / "agreement.md", agreement_md)
    files.write_atomic(run.run_dir / "checks.txt",
                       checks.format_checks(checks.run_checks(all_rows)) + "\n")
    print(summary.format_summary(all_rows, run.run_dir))
    print(f"\n{len(all_rows)} rows in {run.run_dir}/results.jsonl (validated) and results.parquet")
    if busy:
        print(f"NOTE: {busy}", flush=True)
    return 0


def draw_report(run_dir: Path) -> int:
    """python -m plots.report on this run (never `latest`, which another
    run may move); its exit status."""
    with open(run_dir / "raw" / "report.log", "w", encoding="utf-8") as log:
        return child.stream([sys.executable, "-m", "plots.report", str(run_dir)], log,
                            show=lambda line: True, cwd=REPO)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        lock = run_lock.take(args.runs_dir, args.wait, "python -m results.bench_all "
                             + " ".join(argv if argv is not None else sys.argv[1:]))
    except (run_lock.Busy, KeyboardInterrupt, OSError) as e:
        return run_lock.not_taken(args.runs_dir, e)

    run_id = rows.new_run_id()
    run_dir = args.runs_dir / run_id
    where_now: dict = {"step": None}
    state: dict | None = None

    def last_words(signum):  # a second signal: mark the run before exiting at once
        if state is not None:
            run_state.interrupted(run_dir, state, signal.Signals(signum).name, where_now["step"])

    previous_handlers = interrupt.install(last_words)
    keeper = guardian.Guardian()
    child.guard(keeper)
    try:
        try:
            (run_dir / "raw").mkdir(parents=True)
        except OSError as e:
            if files.is_storage_error(e):
                raise files.storage_error(e, run_dir) from None
            print(f"bench-all: cannot create {run_dir}: {e.strerror or e}", file=sys.stderr)
            return 2
        started = rows.utc_timestamp()
        state = run_state.begin(run_dir, started)
        # the pid a second run names is the one to signal: this process
        run_lock.update(lock, run_id=run_id, run_dir=str(run_dir), pid=os.getpid())
        the_machine = machine.collect()
        run = Run(run_dir=run_dir, raw_dir=run_dir / "raw", quick=args.quick,
                  common=rows.common(run_id, started, the_machine, quick=args.quick,
                                     steps=[name for name, _, _ in args.steps]),
                  build_dir=args.build_dir, user_tools=tuple(args.user_tools))
        print(f"raplbench run {run_id}{' (QUICK)' if args.quick else ''} -> {run_dir}")
        # harnesses that write their own rows (the sampler) read the machine from here
        files.write_atomic(run_dir / "machine.json", json.dumps(the_machine, indent=2) + "\n")
        watch = contention.Watch()
        all_rows = run_steps(run, args.steps, watch, where_now)
        code = finish_run(args, run, the_machine, all_rows, watch, state, where_now)
        if code == 0 and args.report:
            where_now["step"] = "report"
            if draw_report(run_dir) != 0:
                print(f"bench-all: the report of {run_dir} failed (raw/report.log); the run "
                      f"itself is complete: make report RUNS={run_dir} draws it again",
                      file=sys.stderr)
                code = 1
        return code
    except interrupt.Interrupted as e:
        step = where_now["step"]
        if where_now.get("complete"):  # written, validated and `latest`: only its report is not
            print(f"\nbench-all: interrupted by {e.name}; the run {run_dir} is complete, its "
                  f"report may not be (make report RUNS={run_dir} draws it)", file=sys.stderr)
            return e.status
        if state is not None:
            run_state.interrupted(run_dir, state, e.name, step)
        where = f"during the {step} step" if step else "between steps"
        print(f"\nbench-all: interrupted by {e.name} {where}: run {run_id} is incomplete "
              f"({run_dir}; `latest` not moved)", file=sys.stderr)
        return e.status
    except OSError as e:
        if not files.is_storage_error(e):
            raise
        error = files.storage_error(e, run_dir)
        if state is not None:
            run_state.failed(run_dir, state, str(error))
        print(f"bench-all: {error} (run {run_id} is incomplete; `latest` not moved)",
              file=sys.stderr)
        return 1
    finally:
        child.kill_all()
        child.guard(None)
        keeper.close()
        interrupt.restore(previous_handlers)
        if run_lock.inherited(args.runs_dir) is None:
            os.close(lock)


if __name__ == "__main__":
    sys.exit(main())
