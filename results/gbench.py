"""Google Benchmark (1.7.1) JSON from ubench -> result rows.

Contract with ubench (the C++ harness), both keys in the JSON "context":

- "raplbench_manifest": a JSON *string* {"rows": [ROW, ...]}, one ROW per
  result row: {"bench": GB run_name or null, "value": "real_time" or
  "counter:<name>", "path", "op", "target", "cpu", "target_cpu", "stand_in",
  "liveness", "liveness_note", "metric", "unit", "status": "ok" |
  "unavailable" | "error", "reason"}. "liveness" and "liveness_note" are
  the verdict on the energy counter the row reads (results/liveness.py); a
  manifest written before they existed normalizes to null.
  ubench lists every path it knows, including those it could not even set up
  (status not ok, bench null), so nothing disappears silently.
- "raplbench_tsc_khz" (optional): the TSC frequency ubench measured, in kHz,
  as a string; see tsc_khz_hint().

A benchmark that fails at run time calls SkipWithError(); a message starting
with "unavailable: " means the machine lacks something (the rest is the
reason), anything else is an error. Run ubench with
--benchmark_repetitions=N: each repetition is one sample; GB's aggregates
(mean, median, stddev, cv) are ignored, we compute our own (results/stats.py).
"""

import argparse
import json
import sys

from results import rows

HARNESS = "gbench"
NS_PER = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}  # GB time_unit -> ns
UNAVAILABLE = "unavailable: "
# The manifest keys copied as they are into every row (absent: null).
MANIFEST_KEYS = ("path", "op", "target", "cpu", "target_cpu", "stand_in", "liveness",
                 "liveness_note", "metric", "unit")


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
    manifest(gb, origin=path)  # fail early, with the file name
    return gb


def manifest(gb: dict, origin="Google Benchmark JSON") -> list[dict]:
    """The manifest rows of a GB JSON document (see the module docstring)."""
    text = gb.get("context", {}).get("raplbench_manifest")
    if text is None:
        raise ValueError(f"{origin}: no raplbench_manifest in the context: "
                         "not ubench output, or ubench did not register its rows")
    try:
        rows_ = json.loads(text)["rows"]
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"{origin}: raplbench_manifest is not a JSON string "
                         f'{{"rows": [...]}}: {e}') from None
    return rows_


def tsc_khz_hint(gb: dict) -> int | None:
    """The TSC kHz ubench measured, for machine.collect(tsc_khz_hint=...)."""
    try:
        return int(gb["context"]["raplbench_tsc_khz"])
    except (KeyError, TypeError, ValueError):
        return None


def _repetitions(gb: dict, bench: str) -> list[dict]:
    runs = [b for b in gb["benchmarks"]
            if b.get("run_type") == "iteration" and b.get("run_name") == bench]
    return sorted(runs, key=lambda b: b.get("repetition_index", 0))


def _sample(run: dict, value: str) -> float:
    if value == "real_time":
        return run["real_time"] * NS_PER[run["time_unit"]]
    if value.startswith("counter:"):
        return float(run[value.removeprefix("counter:")])  # user counters are top-level keys
    raise ValueError(f"unknown manifest value {value!r}")


def _row(gb: dict, common: dict, m: dict) -> dict:
    where = {key: m.get(key) for key in MANIFEST_KEYS}

    def not_ok(status, reason):
        return rows.not_ok_row(common, harness=HARNESS, status=status, reason=reason, **where)

    if m.get("status") != "ok":
        return not_ok(m.get("status"), m.get("reason"))
    bench = m.get("bench")
    runs = _repetitions(gb, bench)
    if not runs:
        return not_ok("error", f"benchmark {bench} produced no repetitions (filtered out or crashed?)")
    failed = [r for r in runs if r.get("error_occurred")]
    if failed:
        message = failed[0].get("error_message") or "error without a message"
        if message.startswith(UNAVAILABLE):
            return not_ok("unavailable", message.removeprefix(UNAVAILABLE))
        return not_ok("error", message)
    try:
        samples = [_sample(r, m.get("value", "")) for r in runs]
    except (KeyError, ValueError, TypeError) as e:
        return not_ok("error", f"benchmark {bench}: cannot read {m.get('value')!r}: {e!r}")
    return rows.measured_row(common, harness=HARNESS, samples=samples,
                             iterations=runs[0].get("iterations"), **where)


def normalize(gb: dict, common: dict, origin="Google Benchmark JSON") -> list[dict]:
    """One schema row per manifest row, in manifest order. `common` comes
    from rows.common(); `origin` names the input in error messages."""
    return [_row(gb, common, m) for m in manifest(gb, origin)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m results.gbench",
        description="Normalize ubench's Google Benchmark JSON to result rows (JSON Lines on stdout).")
    parser.add_argument("file", help="Google Benchmark JSON written by ubench")
    parser.add_argument("--machine", help="machine.json (default: describe this machine)")
    parser.add_argument("--run-id", help="default: a new run id")
    args = parser.parse_args(argv)
    try:
        gb = load(args.file)
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
    for row in normalize(gb, common, origin=args.file):
        print(rows.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
