"""ci/export: a run's figures in the formats of the CI services people
already use, so raplbench's numbers can be tracked beside their own.

    ci/export [RUN] [--bmf FILE] [--github-action FILE]

RUN is a run directory of `make bench-all` or a results.jsonl (default: the
newest run). Every measured row (status ok, not a published reference row)
becomes one figure: its median with the 95% CI of the median.

--bmf FILE writes Bencher Metric Format JSON (https://bencher.dev),
--github-action FILE github-action-benchmark's customSmallerIsBetter JSON
(rate_hz rows, where larger is better, left out and counted on stderr). A
benchmark is named like the gate's rows (ci/gate_config.row_id) without the
metric, with a tag when the figure is not the real thing (" [stand-in]",
" [frozen counter]", ...): ci/README.md, "Exporting the figures to other CI
services". Exit status: 0 written, 2 bad input (a missing or invalid run).
"""

import argparse
import json
import sys
from pathlib import Path

from ci.gate import DEFAULT_CURRENT
from ci.gate_config import row_id
from ci.gate_stats import HIGHER, WORSE_WHEN
from results import files, liveness, runfile
from results.machine import is_emulated

def exported_rows(rows: list[dict]) -> list[dict]:
    """The rows that are measured figures: ok, with a median, not published."""
    return [r for r in rows
            if r["status"] == "ok" and r["harness"] != "reference" and r["median"] is not None]


def tags(row: dict) -> str:
    """What makes the figure not the real thing, as a name suffix."""
    marks = []
    if row.get("stand_in"):
        marks.append("stand-in")
    if liveness.is_dead(row):
        marks.append(liveness.DEAD_WORDS[liveness.verdict(row)])
    if is_emulated(row.get("machine") or {}):
        marks.append("emulated CPU")
    return "".join(f" [{m}]" for m in marks)


def name(row: dict) -> str:
    """The benchmark's name: the gate's row id without its metric, then the tags."""
    where = row_id(row).removesuffix(f"/{row['metric']}/{row['harness']}")
    return f"{where}/{row['harness']}{tags(row)}"


def bmf(rows: list[dict]) -> dict:
    """Bencher Metric Format: {benchmark: {measure: {value, lower_value, upper_value}}}."""
    out: dict[str, dict] = {}
    for r in exported_rows(rows):
        figure = {"value": r["median"]}
        if r["ci95_low"] is not None and r["ci95_high"] is not None:
            figure.update(lower_value=r["ci95_low"], upper_value=r["ci95_high"])
        out.setdefault(name(r), {})[r["metric"]] = figure
    return out


def github_action(rows: list[dict]) -> tuple[list[dict], int]:
    """github-action-benchmark customSmallerIsBetter entries, and how many
    rows were left out because larger is better for their metric."""
    entries, left_out = [], 0
    for r in exported_rows(rows):
        if WORSE_WHEN[r["metric"]] != HIGHER:
            left_out += 1
            continue
        entry = {"name": f"{name(r)} ({r['metric']})", "unit": r["unit"], "value": r["median"]}
        if r["ci95_low"] is not None and r["ci95_high"] is not None:
            entry["range"] = f"{r['ci95_low']:.6g}–{r['ci95_high']:.6g} (95% CI of the median)"
        entry["extra"] = f"n={r['n']} {r['harness']} run {r['run_id']}"
        entries.append(entry)
    return entries, left_out


def _write(path: Path, doc) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # a reader never sees half a file
    files.write_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ci/export", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", default=str(DEFAULT_CURRENT),
                        help="run directory or results.jsonl (default: the newest run)")
    parser.add_argument("--bmf", type=Path, help="write Bencher Metric Format JSON here")
    parser.add_argument("--github-action", type=Path,
                        help="write github-action-benchmark customSmallerIsBetter JSON here")
    args = parser.parse_args(argv)
    if not args.bmf and not args.github_action:
        parser.error("nothing to write: give --bmf FILE and/or --github-action FILE")
    try:
        rows = runfile.load(runfile.locate(args.run)).rows
    except runfile.RunFileError as e:
        print(f"ci/export: {e}", file=sys.stderr)
        return 2
    if not exported_rows(rows):
        print(f"ci/export: {args.run}: no measured row to export", file=sys.stderr)
        return 2
    if args.bmf:
        doc = bmf(rows)
        _write(args.bmf, doc)
        print(f"ci/export: {len(doc)} benchmarks -> {args.bmf} (Bencher Metric Format)")
    if args.github_action:
        entries, left_out = github_action(rows)
        _write(args.github_action, entries)
        print(f"ci/export: {len(entries)} figures -> {args.github_action} "
              f"(github-action-benchmark customSmallerIsBetter)")
        if left_out:
            print(f"ci/export: {left_out} rows where larger is better (rate_hz) left out of "
                  f"{args.github_action}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
