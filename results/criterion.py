"""Criterion (rbench, Rust) output -> result rows: one row per criterion
row of the run's plan (raw/plan.json), as results/README.md says ("The
latency harnesses' rows"), from what rbench's bench target `paths`
(rbench/benches/paths.rs) writes: the plan it timed
($RAPLBENCH_CRITERION_PLAN, with "not_timed") and, per benchmark and
round, Criterion's <dirs>/new/benchmark.json (with "full_id") and
new/sample.json ({"iters": [...], "times": [...]}, times in ns, one entry
per Criterion sample) under <CRITERION_HOME>/round-NN/. bench-all runs it
in legs, each with its own home, <raw>/criterion/leg-NN/: a row's rounds
are those of every leg. A Criterion home without round-NN/ directories
(rbench before rounds) gives one block per Criterion sample (times[i] /
iters[i]), iterations the first sample's.
"""

import json
import re
from pathlib import Path

from results import plan, registry, rows

HARNESS = "criterion"
PATHS = registry.paths_of(HARNESS)


ROUND_DIR = re.compile(r"round-(\d+)")
LEG_DIR = re.compile(r"leg-(\d+)")


def leg_dir(leg: int) -> str:
    """Where bench-all has rbench's leg `leg` write (under the Criterion
    home): leg-NN."""
    return f"leg-{leg:02d}"


def _numbered(home: Path, pattern: re.Pattern) -> list[Path]:
    """The subdirectories of `home` named by `pattern`, in number order."""
    found = [(int(m.group(1)), d) for d in home.glob("*")
             if d.is_dir() and (m := pattern.fullmatch(d.name))]
    return [d for _, d in sorted(found)]


def _load_one(criterion_home) -> dict[str, dict]:
    """{full_id: sample.json} of every benchmark under criterion_home that
    has a finished measurement (new/sample.json)."""
    found = {}
    for bench_json in sorted(Path(criterion_home).rglob("new/benchmark.json")):
        sample_json = bench_json.with_name("sample.json")
        try:
            full_id = json.loads(bench_json.read_text(encoding="utf-8"))["full_id"]
            sample = json.loads(sample_json.read_text(encoding="utf-8"))
        except (OSError, KeyError, json.JSONDecodeError):
            continue  # an interrupted benchmark: its row becomes an error
        found[full_id] = sample
    return found


def load_samples(criterion_home) -> dict[str, dict]:
    """{full_id: {"iters": [...], "times": [...]}}, one entry per block, for
    every benchmark under criterion_home with a finished measurement. Legs
    (leg-NN/, written by bench-all's turns) in leg order, each holding
    rounds; rounds (round-NN/, in round order) each give a block, their
    summed iters and times; without rounds, each Criterion sample is one."""
    home = Path(criterion_home)
    rounds = [r for leg in (_numbered(home, LEG_DIR) or [home]) for r in _numbered(leg, ROUND_DIR)]
    if not rounds:
        return _load_one(home)
    blocks: dict[str, dict] = {}
    for round_home in rounds:
        for full_id, sample in _load_one(round_home).items():
            iters, times = sample.get("iters") or [], sample.get("times") or []
            block = blocks.setdefault(full_id, {"iters": [], "times": []})
            if len(iters) != len(times) or not iters or min(iters) <= 0:
                block["malformed"] = True
                continue
            block["iters"].append(sum(iters))
            block["times"].append(sum(times))
    return {full_id: ({"iters": [], "times": []} if b.pop("malformed", False) else b)
            for full_id, b in blocks.items()}


def load_timed(path) -> tuple[dict[str, dict], dict[str, dict]]:
    """The plan rbench's benchmark timed ($RAPLBENCH_CRITERION_PLAN):
    ({id: its criterion row}, {id: {"status", "reason"}} of the rows it did
    not time); OSError, or ValueError naming the file."""
    timed_rows, doc = plan.parse(Path(path).read_text(encoding="utf-8"), str(path), HARNESS)
    not_timed = doc.get("not_timed")
    if not isinstance(not_timed, dict) or not all(
            isinstance(v, dict) and v.get("status") in ("unavailable", "error")
            and isinstance(v.get("reason"), str) for v in not_timed.values()):
        raise ValueError(f"{path}: no \"not_timed\" of {{id: {{status, reason}}}}")
    return {r["id"]: r for r in timed_rows}, not_timed


def _row(common: dict, p: dict, timed_rows: dict, not_timed: dict, samples_by_id: dict) -> dict:
    meta = dict(harness=HARNESS, **plan.row_fields(p))

    def not_ok(status, reason):
        return rows.not_ok_row(common, status=status, reason=reason, **meta)

    bench, timed = p["id"], timed_rows.get(p["id"])
    if p["status"] != "ok":
        return not_ok(p["status"], p["reason"])
    if timed is None:
        return not_ok("error", f"benchmark {bench}: the run's plan has this row, "
                               "Criterion's in-process plan does not")
    if timed["status"] != "ok":
        return not_ok(timed["status"], timed["reason"])
    if bench in not_timed:
        return not_ok(not_timed[bench]["status"], not_timed[bench]["reason"])
    sample = samples_by_id.get(bench)
    if sample is None:
        return not_ok("error", f"benchmark {bench} left no Criterion samples "
                               "(filtered out or interrupted?)")
    iters, times = sample.get("iters") or [], sample.get("times") or []
    if len(iters) != len(times) or not iters or min(iters) <= 0:
        return not_ok("error", f"benchmark {bench}: malformed sample.json")
    per_iter = [t / i for t, i in zip(times, iters)]
    return rows.measured_row(common, samples=per_iter, iterations=int(iters[0]), **meta)


def normalize(plan_rows: list[dict], timed: tuple[dict, dict], samples_by_id: dict,
              common: dict) -> list[dict]:
    """One row per criterion row of the run's plan (results.plan.load), in
    its order, then an error row for each row only Criterion's plan lists;
    `timed` from load_timed(), `samples_by_id` from load_samples()."""
    timed_rows, not_timed = timed
    planned = {p["id"] for p in plan_rows}
    only_timed = [rows.not_ok_row(common, harness=HARNESS, status="error", **plan.row_fields(t),
                                  reason=f"benchmark {i}: Criterion's in-process plan has this "
                                         "row, the run's plan does not")
                  for i, t in timed_rows.items() if i not in planned]
    return [_row(common, p, timed_rows, not_timed, samples_by_id) for p in plan_rows] + only_timed
