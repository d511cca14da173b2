"""The two latency harnesses, ubench (Google Benchmark) and rbench
(Criterion), as bench-all steps: each runs in legs, taking turns with the
other when both run (run_latency), and its raw output becomes rows
(results/gbench.py, results/criterion.py).

Both time the rows of rbench's one discovery (rbench/src/plan.rs), which
raplbench-plan writes once per run, before the legs, to raw/plan.json
(make_plan): both read it, so every leg of either times the same rows
(ubench through --raplbench_plan, rbench's Criterion benchmark through
$RAPLBENCH_PLAN), and rbench writes the plan it timed, with the rows that
did not time, to raw/criterion-plan.json. Both
harnesses' rows are the rows of raw/plan.json, with its verdicts, joined
by id to each harness's output (results/plan.py)."""

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

from results import child, criterion, gbench, interrupt, plan
from results.schedule import criterion_env, gbench_args, schedule
from results.steps import Run, failed_rows, failure_reason, run_step

REPO = Path(__file__).resolve().parent.parent
PLANNER = REPO / "target" / "release" / "raplbench-plan"  # make build (cargo) builds it


def is_error(line: str) -> bool:
    """A benchmark that failed, in Google Benchmark's console report: the
    one line of it shown (the figures are the summary's, results/summary.py;
    its whole console report is in raw/gbench.log)."""
    return "ERROR OCCURRED" in line


def make_plan(run: Run) -> str | None:
    """rbench's plan of this machine into raw/plan.json, the rows of both
    harnesses; None when written, else why not."""
    out = run.raw_dir / "plan.json"
    out.unlink(missing_ok=True)
    if not PLANNER.exists():
        return f"{PLANNER} not built: run `make build` (cargo) first"
    # the mode says the target states of the cross-CPU rows (rbench/src/target_load.rs)
    env = {k: v for k, v in os.environ.items() if k != "RAPLBENCH_QUICK"}
    env.update({"RAPLBENCH_QUICK": "1"} if run.quick else {})
    with open(run.raw_dir / "plan.log", "a", encoding="utf-8") as log:
        code = child.stream([str(PLANNER), str(out)], log, env=env)
    if code != 0 or not out.exists():
        return f"raplbench-plan exited with status {code}; see {run.raw_dir}/plan.log"
    return None


def bpf_filter(run: Run) -> str | None:
    """The Google Benchmark filter of the plan's rows that read the BPF
    program's map (their paths), or None when it has none."""
    doc = json.loads((run.raw_dir / "plan.json").read_text(encoding="utf-8"))
    paths = sorted({r["path"] for r in doc["rows"] if "bpf" in (r.get("open") or {})})
    return f"^({'|'.join(paths)})/" if paths else None  # registry names: [a-z-]


def gbench_parts(run: Run, leg: int) -> list[tuple[Path, list[str]]]:
    """The ubench processes of leg `leg`: (their output, their filter). The
    rows of the BPF program's map run in a process of their own, after the
    others: the program ticks on every CPU from the first of them on, and
    no target CPU meant to be idle may see it (rbench's Criterion harness
    times them last for the same reason)."""
    bpf = bpf_filter(run)
    out = run.raw_dir / f"gbench-leg{leg}.json"
    if bpf is None:
        return [(out, [])]
    return [(out, [f"--benchmark_filter=-{bpf}"]),
            (run.raw_dir / f"gbench-leg{leg}-bpf.json", [f"--benchmark_filter={bpf}"])]


def gbench_leg(run: Run, leg: int, blocks: int) -> str | None:
    """Leg `leg` of ubench: `blocks` repetitions of every benchmark into
    raw/gbench-leg<leg>.json (and -bpf.json: gbench_parts); None when it
    ran, else why not."""
    binary = run.build_dir / "raplbench-ubench"
    if not binary.exists():
        return f"{binary} not built: run `make build` (cmake) first"
    for out, only in gbench_parts(run, leg):
        cmd = [str(binary), f"--raplbench_plan={run.raw_dir / 'plan.json'}",
               f"--benchmark_out={out}", "--benchmark_out_format=json",
               *gbench_args(run.quick, blocks), *only]
        with open(run.raw_dir / "gbench.log", "a", encoding="utf-8") as log:
            log.write(" ".join(cmd) + "\n")
            # its console report to the log; on the terminal only a benchmark that failed
            code = child.stream(cmd, log, show=is_error)
        if code != 0:
            return f"raplbench-ubench exited with status {code}; see {out.parent}/gbench.log"
    return None


def gbench_rows(run: Run, legs: int) -> list[dict]:
    """The rows of `legs` legs of ubench. Their repetitions are written
    as one Google Benchmark file, raw/gbench.json (gbench.merge), the legs'
    own files kept beside it."""
    out = run.raw_dir / "gbench.json"
    try:
        gb = gbench.merge([gbench.load(out) for leg in range(1, legs + 1)
                           for out, _ in gbench_parts(run, leg)])
        out.write_text(json.dumps(gb, indent=2) + "\n", encoding="utf-8")
        plan_rows = plan.load(run.raw_dir / "plan.json", gbench.HARNESS)
    except (OSError, ValueError) as e:
        return failed_rows(run, gbench.HARNESS, gbench.PATHS, str(e))
    hint = gbench.tsc_khz_hint(gb)
    if hint:
        run.tsc_khz_hints.append(hint)
    return gbench.normalize(gb, run.common, plan_rows)


def run_gbench(run: Run) -> list[dict]:
    return run_latency(run, ["gbench"])["gbench"]


# ---- the Criterion harness (rbench) -----------------------------------------

def cargo() -> str:
    return shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")


def is_criterion_progress(line: str) -> bool:
    """rbench's round lines ("raplbench: round 3/10: 12 rows") and problems,
    not Criterion's result line of every row in every round, its per-state
    chatter or its outlier and change statistics."""
    text = line.strip()
    return (text.startswith(("raplbench: round", "error", "warning", "thread", "Error"))
            or "panicked" in text)


CRITERION_BENCH = ["bench", "--quiet", "-p", "rbench", "--bench", "paths"]


def criterion_binary(run: Run) -> tuple[str | None, str | None]:
    """(rbench's Criterion benchmark, None), or (None, why not): asked of
    cargo once per run, before the first leg, which also builds it where
    make build has not (a source changed since): a build never runs inside
    a timed leg, and no leg pays cargo's own start (0.15 s a leg)."""
    cmd = [cargo(), *CRITERION_BENCH, "--no-run", "--message-format=json"]
    with open(run.raw_dir / "criterion.log", "a", encoding="utf-8") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        try:
            done = child.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True)
        except OSError as e:
            return None, f"cannot run cargo: {e}"
    found = [m["executable"] for m in map(_json_or_none, done.stdout.splitlines())
             if m and m.get("reason") == "compiler-artifact" and m.get("executable")
             and m.get("target", {}).get("name") == "paths"]
    if done.returncode != 0 or len(found) != 1:
        return None, (f"cargo bench --no-run exited with status {done.returncode} and named "
                      f"{len(found)} benchmark executables; see {run.raw_dir}/criterion.log")
    return found[0], None


def _json_or_none(line: str):
    try:
        return json.loads(line)
    except ValueError:
        return None


def criterion_leg(run: Run, leg: int, blocks: int, binary: str) -> str | None:
    """Leg `leg` of rbench: `blocks` rounds of every row, under
    raw/criterion/leg-NN/; None when it ran, else why not. `binary` runs as
    cargo bench runs it: with --bench (else Criterion only tests each row
    once), in the package's directory."""
    home = run.raw_dir / "criterion" / criterion.leg_dir(leg)
    timed = run.raw_dir / "criterion-plan.json"
    env = dict(os.environ, CRITERION_HOME=str(home), RAPLBENCH_PLAN=str(run.raw_dir / "plan.json"),
               RAPLBENCH_CRITERION_PLAN=str(timed), **criterion_env(run.quick, blocks))
    cmd = [binary, "--bench"]
    timed.unlink(missing_ok=True)  # a leg that writes none has failed
    with open(run.raw_dir / "criterion.log", "a", encoding="utf-8") as log:
        log.write(" ".join(cmd) + "\n")
        try:
            code = child.stream(cmd, log, show=is_criterion_progress, cwd=REPO / "rbench", env=env)
        except OSError as e:
            return f"cannot run {binary}: {e}"
    if code != 0 or not timed.exists():
        return f"the Criterion benchmark exited with status {code}; see {run.raw_dir}/criterion.log"
    return None


def criterion_rows(run: Run, legs: int) -> list[dict]:
    """The rows of rbench's legs: every leg's rounds are a row's blocks;
    what did not time, the last leg's word."""
    try:
        return criterion.normalize(
            plan.load(run.raw_dir / "plan.json", criterion.HARNESS),
            criterion.load_timed(run.raw_dir / "criterion-plan.json"),
            criterion.load_samples(run.raw_dir / "criterion"), run.common)
    except (OSError, ValueError) as e:
        return failed_rows(run, criterion.HARNESS, criterion.PATHS, str(e))


def run_criterion(run: Run) -> list[dict]:
    return run_latency(run, ["criterion"])["criterion"]


# ---- the two latency harnesses, taking turns -------------------------------

# name: the rows a failed harness stands for (harness, paths)
STANDS_FOR = {"gbench": (gbench.HARNESS, gbench.PATHS),
              "criterion": (criterion.HARNESS, criterion.PATHS)}
# name: (run one leg, the rows of all legs)
LATENCY_LEGS = {"gbench": (gbench_leg, gbench_rows), "criterion": (criterion_leg, criterion_rows)}


def leg_order(names: list[str], legs: int) -> list[tuple[int, str]]:
    """(leg, harness) in the order they run: the harnesses take turns,
    in ABBA order (a b, b a, a b, ...) so that a drift during the run
    weighs on both alike."""
    return [(leg, name) for leg in range(1, legs + 1)
            for name in (names if leg % 2 else names[::-1])]


def run_latency(run: Run, names: list[str]) -> dict[str, list[dict]]:
    """{harness: rows} of the latency harnesses `names`, the first leading:
    one alone runs every block in one go; two take turns in legs
    (Schedule.legs). A harness whose leg fails, hangs or crashes stops
    there and its rows are errors saying why; the other goes on."""
    s = schedule(run.quick)
    blocks = s.leg_blocks() if len(names) > 1 else [s.blocks]
    failed: dict[str, str] = {}
    try:
        reason = make_plan(run)
    except Exception as e:  # noqa: BLE001 - any failure of the planner, by design
        reason = failure_reason(run, "plan", e)
    interrupt.check()
    if reason is not None:
        failed = {name: f"no plan: {reason}" for name in names}
    run_legs = {name: LATENCY_LEGS[name][0] for name in names}
    if "criterion" in names and "criterion" not in failed:
        binary, reason = criterion_binary(run)
        interrupt.check()
        if reason is not None:
            failed["criterion"] = reason
        else:
            run_legs["criterion"] = functools.partial(run_legs["criterion"], binary=binary)
    for leg, name in leg_order(names, len(blocks)):
        if name in failed:
            continue
        if len(blocks) > 1:
            print(f"  {name}: leg {leg}/{len(blocks)} ({blocks[leg - 1]} blocks)", flush=True)
        try:
            reason = run_legs[name](run, leg, blocks[leg - 1])
        except Exception as e:  # noqa: BLE001 - any failure of one harness, by design
            reason = failure_reason(run, name, e)
        interrupt.check()  # a leg that a signal cut short is no failure of the harness
        if reason is not None:
            failed[name] = reason
    got = {}
    for name in names:
        harness, paths = STANDS_FOR[name]
        if name in failed:
            got[name] = failed_rows(run, harness, paths, failed[name])
        else:
            got[name] = run_step(run, name, lambda run, name=name: LATENCY_LEGS[name][1](
                run, len(blocks)), STANDS_FOR[name])
    return got
