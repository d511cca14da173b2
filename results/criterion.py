"""Criterion (rbench, Rust) output -> result rows.

Contract with rbench's bench target `paths` (rbench/benches/paths.rs):

- it writes the manifest of results/manifest.py (the format ubench writes
  too) to $RAPLBENCH_MANIFEST: one ROW per result row, "bench" being the
  Criterion full id ("value" is then "real_time": Criterion measures time
  per iteration only); a path that cannot run here has a ROW with bench and
  value null and the reason;
- it times every row in rounds (rbench/src/schedule.rs), each round one
  Criterion measurement per row, written under <CRITERION_HOME>/round-NN/
  (bench-all runs it in legs, each with its own home,
  <raw>/criterion/leg-NN/: a row's rounds are those of every leg);
  Criterion writes, per benchmark, <dirs>/new/benchmark.json (with
  "full_id") and new/sample.json ({"iters": [...], "times": [...]}, times
  in ns, one entry per Criterion sample).

One row per manifest ROW (harness "criterion"). Its samples are blocks'
ns per iteration, a block being what ubench's Google Benchmark repetition
is: one round of the row (the sum of its times over the sum of its iters),
so that both harnesses' rows are medians of the same kind of sample;
iterations is the first round's. A Criterion home without round-NN/
directories (rbench before rounds) gives one block per Criterion sample
(times[i] / iters[i]), iterations the first sample's.
"""

import json
import re
from pathlib import Path

from results import manifest, registry, rows

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
            continue  # an interrupted benchmark: its manifest row becomes an error
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


def _row(common: dict, m: dict, samples_by_id: dict) -> dict:
    meta = dict(harness=HARNESS, **manifest.row_fields(m))
    if m["status"] != "ok":
        return rows.not_ok_row(common, reason=m["reason"], status=m["status"], **meta)
    sample = samples_by_id.get(m["bench"])
    if sample is None:
        return rows.not_ok_row(common, status="error", **meta,
                               reason=f"benchmark {m['bench']} left no Criterion samples "
                                      "(filtered out or interrupted?)")
    iters, times = sample.get("iters") or [], sample.get("times") or []
    if len(iters) != len(times) or not iters or min(iters) <= 0:
        return rows.not_ok_row(common, status="error", **meta,
                               reason=f"benchmark {m['bench']}: malformed sample.json")
    per_iter = [t / i for t, i in zip(times, iters)]
    return rows.measured_row(common, samples=per_iter, iterations=int(iters[0]), **meta)


def normalize(manifest_rows: list[dict], samples_by_id: dict, common: dict) -> list[dict]:
    return [_row(common, m, samples_by_id) for m in manifest_rows]
