"""Criterion (rbench, Rust) output -> result rows.

Contract with rbench's bench target `paths` (rbench/benches/paths.rs):

- it writes the manifest of results/manifest.py (the format ubench writes
  too) to $RAPLBENCH_MANIFEST: one ROW per result row, "bench" being the
  Criterion full id ("value" is then "real_time": Criterion measures time
  per iteration only); a path that cannot run here has a ROW with bench and
  value null and the reason;
- Criterion writes, per benchmark, <CRITERION_HOME>/<dirs>/new/benchmark.json
  (with "full_id") and new/sample.json ({"iters": [...], "times": [...]},
  times in ns, one entry per sample).

One row per manifest ROW (harness "criterion"): samples are Criterion's
per-sample ns per iteration (times[i] / iters[i]); iterations is the first
sample's iteration count (Criterion's linear sampling gives sample i about
i times as many).
"""

import json
from pathlib import Path

from results import manifest, registry, rows

HARNESS = "criterion"
PATHS = registry.paths_of(HARNESS)


def load_samples(criterion_home) -> dict[str, dict]:
    """{full_id: {"iters": [...], "times": [...]}} for every benchmark under
    criterion_home that has a finished measurement (new/sample.json)."""
    found = {}
    for bench_json in Path(criterion_home).rglob("new/benchmark.json"):
        sample_json = bench_json.with_name("sample.json")
        try:
            full_id = json.loads(bench_json.read_text(encoding="utf-8"))["full_id"]
            sample = json.loads(sample_json.read_text(encoding="utf-8"))
        except (OSError, KeyError, json.JSONDecodeError):
            continue  # an interrupted benchmark: its manifest row becomes an error
        found[full_id] = sample
    return found


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
