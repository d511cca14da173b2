"""Google Benchmark (1.7.1) JSON from ubench -> result rows.

ubench (the C++ harness) times the gbench rows of rbench's plan
(--raplbench_plan=FILE, raw/plan.json in bench-all) and writes two files:
Google Benchmark's JSON (--benchmark_out) and its manifest
(--raplbench_manifest=FILE, the format of results/manifest.py, shared with
the Rust harness), one ROW per result row. It lists every row of the plan,
including those that cannot run here (status not ok, bench null), so
nothing disappears silently. The JSON's
"context" holds "raplbench_tsc_khz" (optional): the TSC frequency ubench
measured, in kHz, as a string; see tsc_khz_hint(). Older ubench builds
embedded the manifest in the context as a JSON string ("raplbench_manifest");
such files still normalize without a manifest file.

A benchmark that fails at run time calls SkipWithError(); a message starting
with "unavailable: " means the machine lacks something (the rest is the
reason), anything else is an error. Run ubench with
--benchmark_repetitions=N: each repetition is one sample; GB's aggregates
(mean, median, stddev, cv) are ignored, we compute our own (results/stats.py).
"""

import argparse
import collections
import json
import sys
from pathlib import Path

from results import manifest as manifest_mod
from results import registry, rows

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


def embedded_manifest(gb: dict, origin="Google Benchmark JSON") -> list[dict]:
    """The manifest rows an older ubench embedded in the GB context."""
    text = gb.get("context", {}).get("raplbench_manifest")
    if text is None:
        raise ValueError(f"{origin}: no manifest: ubench writes it with "
                         "--raplbench_manifest=FILE (pass that file with --manifest)")
    if not isinstance(text, str):
        raise ValueError(f"{origin}: raplbench_manifest is not a JSON string")
    return manifest_mod.parse(text, f"{origin} (raplbench_manifest)", HARNESS)


def tsc_khz_hint(gb: dict) -> int | None:
    """The TSC kHz ubench measured, for machine.collect(tsc_khz_hint=...)."""
    try:
        return int(gb["context"]["raplbench_tsc_khz"])
    except (KeyError, TypeError, ValueError):
        return None


def merge(legs: list[dict]) -> dict:
    """Google Benchmark JSON of several runs of ubench (bench-all's legs,
    results/bench_all.py) as one file of the same shape: the first leg's
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
    where = manifest_mod.row_fields(m)

    def not_ok(status, reason):
        return rows.not_ok_row(common, harness=HARNESS, status=status, reason=reason, **where)

    if m["status"] != "ok":
        return not_ok(m["status"], m["reason"])
    bench = m["bench"]
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
        samples = [_sample(r, m["value"]) for r in runs]
    except (KeyError, ValueError, TypeError) as e:
        return not_ok("error", f"benchmark {bench}: cannot read {m['value']!r}: {e!r}")
    return rows.measured_row(common, harness=HARNESS, samples=samples,
                             iterations=runs[0].get("iterations"), **where)


def normalize(gb: dict, common: dict, manifest_rows: list[dict] | None = None,
              origin="Google Benchmark JSON") -> list[dict]:
    """One schema row per manifest row, in manifest order. `common` comes
    from rows.common(); `manifest_rows` from results.manifest.load() (None:
    the manifest an older ubench embedded in `gb`); `origin` names the input
    in error messages."""
    if manifest_rows is None:
        manifest_rows = embedded_manifest(gb, origin)
    return [_row(gb, common, m) for m in manifest_rows]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m results.gbench",
        description="Normalize ubench's Google Benchmark JSON to result rows (JSON Lines on stdout).")
    parser.add_argument("file", help="Google Benchmark JSON written by ubench")
    parser.add_argument("--manifest", help="the manifest ubench wrote (--raplbench_manifest); "
                        "default: <file>-manifest.json beside it, else the one an older "
                        "ubench embedded in the JSON")
    parser.add_argument("--machine", help="machine.json (default: describe this machine)")
    parser.add_argument("--run-id", help="default: a new run id")
    args = parser.parse_args(argv)
    default_manifest = Path(args.file).with_name(Path(args.file).stem + "-manifest.json")
    manifest_path = args.manifest or (default_manifest if default_manifest.exists() else None)
    try:
        gb = load(args.file)
        manifest_rows = manifest_mod.load(manifest_path, HARNESS) if manifest_path else None
        if manifest_rows is None:
            embedded_manifest(gb, args.file)  # fail before describing the machine
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
    for row in normalize(gb, common, manifest_rows, origin=args.file):
        print(rows.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
