"""Google Benchmark (1.7.1) JSON from ubench -> result rows: one row per
gbench row of rbench's plan (--raplbench_plan=FILE, raw/plan.json in
bench-all; results/plan.py), as results/README.md says ("The latency
harnesses' rows"). Run ubench with --benchmark_repetitions=N: each
repetition is one sample; Google Benchmark's aggregates are ignored, the
rows compute their own (results/stats.py).
"""

import argparse
import collections
import json
import re
import sys

from results import plan, registry, rows

HARNESS = "gbench"
PATHS = registry.paths_of(HARNESS)
NS_PER = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}  # GB time_unit -> ns
UNAVAILABLE = "unavailable: "


def load(path) -> dict:
    """Read a Google Benchmark JSON file; ValueError (naming the file) if it
    is not JSON or not GB's shape, OSError if it cannot be read."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        gb = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON (did the benchmark crash?): {e}") from None
    if not isinstance(gb, dict) or not isinstance(gb.get("benchmarks"), list) \
            or not isinstance(gb.get("context"), dict):
        raise ValueError(f"{path}: not Google Benchmark JSON (no context / benchmarks)")
    return gb


def tsc_khz_hint(gb: dict) -> int | None:
    """The TSC kHz ubench measured, for machine.collect(tsc_khz_hint=...)."""
    try:
        return int(gb["context"]["raplbench_tsc_khz"])
    except (KeyError, TypeError, ValueError):
        return None


def merge(legs: list[dict]) -> dict:
    """Google Benchmark JSON of several runs of ubench (bench-all's legs,
    results/latency_steps.py) as one file of the same shape: the first leg's
    context, every leg's repetitions in leg order, each benchmark's
    repetition_index counted on across the legs and its "repetitions" the
    total. The legs' aggregates (mean, median, ...) are left out: each
    described one leg only, and the rows compute their own."""
    if not legs:
        raise ValueError("no Google Benchmark legs to merge")
    runs = [b for gb in legs for b in sorted(
        (b for b in gb["benchmarks"] if b.get("run_type") == "iteration"),
        key=lambda b: b.get("repetition_index", 0))]
    totals = collections.Counter(b.get("run_name") for b in runs)
    seen: dict[str, int] = {}
    merged = []
    for b in runs:
        name = b.get("run_name")
        merged.append({**b, "repetition_index": seen.get(name, 0), "repetitions": totals[name]})
        seen[name] = seen.get(name, 0) + 1
    return {"context": dict(legs[0]["context"]), "benchmarks": merged}


def row_id(name: str) -> str:
    """The plan row id of a Google Benchmark name: the name without the
    "/iterations:N" Google Benchmark appends to a benchmark of fixed
    iterations."""
    return re.sub(r"/iterations:\d+$", "", name)


def repetitions(gb: dict, bench: str) -> list[dict]:
    """The repetitions of the benchmark of row id `bench`, in order."""
    runs = [b for b in gb["benchmarks"] if b.get("run_type") == "iteration"
            and row_id(b.get("run_name", "")) == bench]
    return sorted(runs, key=lambda b: b.get("repetition_index", 0))


def sample(run: dict, metric: str) -> float:
    """The figure of a repetition: its user counter `metric`, else real_time in ns."""
    if metric in run:  # a user counter (a top-level key)
        return float(run[metric])
    return run["real_time"] * NS_PER[run["time_unit"]]


def _row(gb: dict, common: dict, p: dict) -> dict:
    where = plan.row_fields(p)

    def not_ok(status, reason):
        return rows.not_ok_row(common, harness=HARNESS, status=status, reason=reason, **where)

    if p["status"] != "ok":
        return not_ok(p["status"], p["reason"])
    runs = repetitions(gb, p["id"])
    if not runs:
        return not_ok("error", f"benchmark {p['id']} produced no repetitions "
                               "(filtered out or crashed?)")
    failed = [r for r in runs if r.get("error_occurred")]
    if failed:
        message = failed[0].get("error_message") or "error without a message"
        if message.startswith(UNAVAILABLE):
            return not_ok("unavailable", message.removeprefix(UNAVAILABLE))
        return not_ok("error", message)
    try:
        samples = [sample(r, p["metric"]) for r in runs]
    except (KeyError, ValueError, TypeError) as e:
        return not_ok("error", f"benchmark {p['id']}: no {p['metric']}: {e!r}")
    return rows.measured_row(common, harness=HARNESS, samples=samples,
                             iterations=runs[0].get("iterations"), **where)


def normalize(gb: dict, common: dict, plan_rows: list[dict]) -> list[dict]:
    """One schema row per plan row of gbench (results.plan.load), in plan
    order; `common` comes from rows.common()."""
    return [_row(gb, common, p) for p in plan_rows]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m results.gbench",
        description="Normalize ubench's Google Benchmark JSON to result rows (JSON Lines on stdout).")
    parser.add_argument("file", help="Google Benchmark JSON written by ubench")
    parser.add_argument("--plan", required=True,
                        help="the plan ubench timed (--raplbench_plan; raw/plan.json)")
    parser.add_argument("--machine", help="machine.json (default: describe this machine)")
    parser.add_argument("--run-id", help="default: a new run id")
    args = parser.parse_args(argv)
    try:
        gb = load(args.file)
        plan_rows = plan.load(args.plan, HARNESS)
    except (OSError, ValueError) as e:
        print(e, file=sys.stderr)
        return 2
    if args.machine:
        with open(args.machine, encoding="utf-8") as f:
            machine_ = json.load(f)
    else:
        from results import machine
        machine_ = machine.collect(tsc_khz_hint=tsc_khz_hint(gb))
    common = rows.common(args.run_id or rows.new_run_id(), rows.utc_timestamp(), machine_)
    for row in normalize(gb, common, plan_rows):
        print(rows.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
