"""The gate's false-alarm rate and power, measured on this machine
(ci/README.md, "Is the gate quiet?"):

    ci/aa [--pairs N] [--rounds K [--only STEPS]] [--slowed-copy] [--stress]
          [--runs-dir DIR]

A/A pairs (one QUICK run a side, or with --rounds K interleaved rounds of
ci/ab.py), a slowed copy of one latency row at a time and a run beside
stress-ng: what each checks is in ci/README.md, "Is the gate quiet?". With
--rounds, the harnesses' agreement over all the A/A runs
(results/agreement.py, report_over_runs) goes to agreement.md in --runs-dir.

The runs, their logs and aa.json (the outcome) stay in --runs-dir.
Exit status: 0 when every check passed, 1 when one did not (a pair flagged
unchanged code, a slowed row was missed or another row flagged, the stress
run passed), 2 on a usage error or a run that could not be made.
"""

import argparse
import contextlib
import dataclasses
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ci import ab, gate
from ci.gate_config import DEFAULT_CONFIG, display, is_cross_cpu, load_config, row_id
from ci.gate_report import EXIT_FAIL, EXIT_PASS, EXIT_USAGE, label
from ci.gate_stats import (IMPROVEMENT, MISSING, NOT_GATED, REGRESSION, UNCHANGED, WITH_THE_RUN,
                           worse_pct)
from ci.gate_verdict import Run, Verdict, load_run
from results import agreement
from results import rows as rowlib
from results import schema, stats

SLOWDOWN = 1.25


def quick_run(runs_dir: Path, log: Path) -> Path:
    """One QUICK bench-all run of this checkout, every step (ci/ab.py's
    bench_run, without a layout pad, as the single-run A/A always ran); its
    run directory. Its console output goes to `log` (it is long);
    ab.RunFailed, a RuntimeError, naming the log when it fails."""
    return ab.bench_run(gate.REPO, runs_dir, log, None, pad=0)


def load(run_dir):
    """A run directory's Run, or a list of them (interleaved rounds)."""
    if isinstance(run_dir, list):
        return [load(d) for d in run_dir]
    return load_run(run_dir / "results.jsonl")


@dataclasses.dataclass
class PairReport:
    name: str
    verdict: Verdict

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    def margins(self) -> dict:
        """metric -> (largest |worse %| of a compared row, its threshold, row label)."""
        worst = {}
        for r, change in _moves(self.verdict):
            metric = r.row["metric"]
            if metric not in worst or change > worst[metric][0]:
                worst[metric] = (change, r.rule.threshold_pct, label(r.row))
        return worst


def _moves(verdict: Verdict):
    """(result, |worse %|) of each row the verdict compared and gated."""
    for r in verdict.results:
        if r.comparison is not None and r.decision != NOT_GATED:
            yield r, abs(worse_pct(r.row["metric"], r.comparison.change_pct))


CONFIG = DEFAULT_CONFIG  # --config


def gate_pair(name: str, baseline: Run, current: Run) -> PairReport:
    return PairReport(name, gate.run_gate(baseline, current, load_config(CONFIG)))


def category(row) -> str:
    """The [rows] pattern of a row's kind: its path and whether it reads
    another CPU's counter, in which target state, e.g.
    "perf/*/*/?>?/latency/*", "perf/*/*/?>?:busy/latency/*"."""
    state = f":{row['target_state']}" if row.get("target_state") else ""
    where = f"?>?{state}" if is_cross_cpu(row) else "*"
    return f"{row['path']}/*/*/{where}/{row['metric']}/*"


def suggested_thresholds(reports) -> dict:
    """pattern -> the largest move of a compared row of that kind over every
    A/A pair (percent): what a threshold must exceed to stay quiet here."""
    worst = {}
    for report in reports:
        for r, change in _moves(report.verdict):
            key = category(r.row)
            worst[key] = max(worst.get(key, 0.0), change)
    return worst


def describe(report: PairReport) -> list[str]:
    v = report.verdict
    lines = [f"{report.name}: {'pass' if report.passed else 'FAIL'}: "
             f"{v.count(REGRESSION)} regressions, {v.count(MISSING)} missing, "
             f"{v.count(IMPROVEMENT)} improvements, {v.count(UNCHANGED)} unchanged, "
             f"{v.count(NOT_GATED)} not gated"]
    for r in v.results:
        # improvements too: in an A/A pair each is a false alarm the other way
        if r.fails or r.decision == IMPROVEMENT:
            change = f"{r.comparison.change_pct:+.1f}%" if r.comparison else r.why
            lines.append(f"    {r.decision}: {label(r.row)}: {change}")
    lines += [f"    largest move of {metric}: {change:.1f}% (threshold {threshold:g}%): {where}"
              for metric, (change, threshold, where) in sorted(report.margins().items())]
    return lines + [f"    whole-run shift of {harness} latency: x{shift.factor:.2f} (median of "
                    f"{shift.rows} rows; {shift.following} within {WITH_THE_RUN:.0%} of it)"
                    for harness, shift in report.verdict.shifts.items()]


def separable(samples) -> bool:
    """Would the row's samples and the same samples SLOWDOWN times higher not
    overlap at all? Then the U test must find them apart (10 against 10:
    p = 2 / C(20, 10) = 1.1e-5), whatever the machine's drift between runs; a row whose own
    repetitions spread wider cannot show a 25 % change at this n."""
    return min(samples) > 0 and max(samples) < SLOWDOWN * min(samples)


def latency_rows(run: Run) -> list[dict]:
    """The run's measured latency rows (ok, not published)."""
    return [row for _, row in run.rows if row["status"] == "ok" and row["metric"] == "latency"
            and row["harness"] != "reference"]


def slowable(run: Run, cfg) -> list[dict]:
    """Its latency rows whose threshold is below the SLOWDOWN the checks apply."""
    return [row for row in latency_rows(run)
            if cfg.rule_for(row).threshold_pct < (SLOWDOWN - 1) * 100]


def slowed_copy_check(run: Run, workdir: Path) -> tuple[bool, list[str]]:
    """Slow each latency row the gate decides with a threshold below 25 %,
    one at a time, by SLOWDOWN. The check fails when another row is flagged,
    or when a row whose repetitions do not overlap their slowed copy is not
    flagged; rows that spread wider are listed as too noisy at this n."""
    cfg = load_config(CONFIG)
    candidates = slowable(run, cfg)
    lines, ok, caught, noisy = [], True, 0, 0
    for row in candidates:
        verdict = gate.run_gate(run, _slowed(run, row_id(row), workdir / "slowed.jsonl"), cfg)
        flagged = [row_id(r.row) for r in verdict.results if r.fails]
        if flagged == [row_id(row)]:
            caught += 1
            continue
        mine = next(r for r in verdict.results if row_id(r.row) == row_id(row))
        spread = max(row["samples"]) / min(row["samples"]) if min(row["samples"]) > 0 else None
        if not flagged and not separable(row["samples"]):
            noisy += 1
            lines.append(f"    too noisy at n = {row['n']}: {label(row)}: its repetitions "
                         f"spread {spread:.2f}x, more than {SLOWDOWN:g}x")
            continue
        ok = False
        lines.append(f"    missed or mixed up: {label(row)}: {mine.decision} "
                     f"({mine.why or 'p = %.3g' % mine.comparison.p_value}); flagged: "
                     f"{', '.join(flagged) or 'nothing'}")
    skipped = len(latency_rows(run)) - len(candidates)
    lines.insert(0, f"slowed copy: {caught} of {len(candidates)} latency rows flagged alone "
                    f"when {SLOWDOWN:g}x slower" + (f"; {noisy} too noisy at this n" if noisy else "")
                    + (f"; {skipped} rows have a threshold of {(SLOWDOWN - 1) * 100:g} % or more "
                       f"({display(CONFIG)}): a {SLOWDOWN:g}x change is within what they allow"
                       if skipped else ""))
    return ok, lines


def _slowed(run: Run, rid: str, path: Path) -> Run:
    """A copy of `run` (written to `path`) with the row `rid` SLOWDOWN times
    slower. Only that row is validated again: the others were as `run` was
    loaded (validating 32 rows in each of 200 copies took 19 s of a CI run)."""
    copy_rows = []
    for line, row in run.rows:
        if row_id(row) == rid and row["status"] == "ok":
            samples = [x * SLOWDOWN for x in row["samples"]]
            row = {**row, "samples": samples, **stats.summarize(samples)}
            if errors := schema.validate_row(row):
                raise ValueError(f"the slowed copy of {rid} is not a valid row: {errors}")
        copy_rows.append((line, row))
    rowlib.write_jsonl([row for _, row in copy_rows], path)
    return Run(file=path, rows=copy_rows)


def resolvable(comparison, threshold_pct: float) -> bool:
    """Can interleaved rounds whose A/A comparison spread this wide show a
    SLOWDOWN change of one row? The half-width of its confidence interval
    (of the log ratio) must be below the step from the threshold to
    SLOWDOWN: then the slowed row's interval lies beyond the threshold
    whenever the A/A change was near 0."""
    if comparison is None or not comparison.by_ratio or comparison.ci is None:
        return False
    lo, hi = comparison.ci
    half = (math.log1p(hi / 100) - math.log1p(lo / 100)) / 2
    return half < math.log(SLOWDOWN) - math.log1p(threshold_pct / 100)


def slowed_rounds_check(baselines, currents, workdir: Path) -> tuple[bool, list[str]]:
    """Interleaved rounds: slow one latency row in every current round, one
    row at a time, and gate the rounds again. The check fails when another
    row is flagged, or when a row that the rounds resolve (`resolvable`, from
    the A/A verdict of the same rounds, and its threshold) is not flagged;
    the rest are listed as too noisy at this many rounds."""
    cfg = load_config(CONFIG)
    aa = {row_id(r.row): r for r in gate.run_gate(baselines, currents, cfg).results}
    candidates = slowable(currents[0], cfg)
    lines, ok, caught, noisy = [], True, 0, 0
    for row in candidates:
        rid = row_id(row)
        slowed = [_slowed(run, rid, workdir / f"slowed-{i}.jsonl")
                  for i, run in enumerate(currents)]
        verdict = gate.run_gate(baselines, slowed, cfg)
        flagged = [row_id(r.row) for r in verdict.results if r.fails]
        if flagged == [rid]:
            caught += 1
            continue
        c = aa[rid].comparison if rid in aa else None
        if not flagged and not resolvable(c, cfg.rule_for(row).threshold_pct):
            noisy += 1
            spread = f"A/A change {c.change_pct:+.1f}% ({c.ci[0]:+.1f}..{c.ci[1]:+.1f}%)" \
                if c is not None and c.ci else "not compared"
            lines.append(f"    too noisy at {len(currents)} rounds: {label(row)}: {spread}")
            continue
        ok = False
        lines.append(f"    missed or mixed up: {label(row)}: flagged: "
                     f"{', '.join(flagged) or 'nothing'}")
    lines.insert(0, f"slowed copy: {caught} of {len(candidates)} latency rows flagged alone "
                    f"when {SLOWDOWN:g}x slower in every current round"
                    + (f"; {noisy} too noisy at {len(currents)} rounds" if noisy else ""))
    return ok, lines


@contextlib.contextmanager
def stress_ng():
    """stress-ng keeping CPU 0 busy while the block runs."""
    if shutil.which("stress-ng") is None:
        raise RuntimeError("stress-ng not installed (apt-get install stress-ng)")
    hog = subprocess.Popen(["stress-ng", "--cpu", "1", "--taskset", "0",
                            "--cpu-method", "matrixprod", "--timeout", "3600", "--quiet"])
    time.sleep(1.0)
    try:
        yield
    finally:
        hog.terminate()
        hog.wait(timeout=30)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ci/aa", description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=5, help="A/A pairs of QUICK runs (default 5)")
    p.add_argument("--rounds", type=int, default=0, metavar="K",
                   help="each pair as K interleaved rounds (ci/ab) instead of one run a side")
    p.add_argument("--only", default=ab.DEFAULT_STEPS,
                   help=f"with --rounds: the bench-all steps (default {ab.DEFAULT_STEPS})")
    p.add_argument("--slowed-copy", action="store_true",
                   help="also check that one latency row slowed 1.25x is flagged alone")
    p.add_argument("--stress", action="store_true",
                   help="also check that a run beside stress-ng on CPU 0 is flagged")
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, metavar="TOML",
                   help=f"gate settings (default: {display(DEFAULT_CONFIG)})")
    p.add_argument("--runs-dir", type=Path,
                   help="where the runs and their logs go (default: results/runs/aa-<UTC time>)")
    args = p.parse_args(argv)
    if args.pairs < 0 or (args.pairs == 0 and not args.stress and not args.slowed_copy):
        p.error("--pairs must be at least 1 (or 0 with --stress or --slowed-copy)")
    if args.rounds and args.rounds < 3:
        p.error("--rounds must be at least 3 (the gate compares no row on fewer rounds)")
    return args


def main(argv=None) -> int:
    global CONFIG
    args = parse_args(argv)
    CONFIG = args.config
    runs_dir = args.runs_dir or gate.REPO / "results" / "runs" / f"aa-{rowlib.new_run_id()}"
    runs_dir.mkdir(parents=True, exist_ok=True)
    print(f"ci/aa: runs and logs in {runs_dir}", flush=True)
    outcome = {"pairs": [], "slowed_copy": None, "stress": None}
    try:
        last = None
        reports = []
        all_runs = []
        only = None if args.only == "all" else args.only

        def rounds(name, context=None):
            print(f"{name}: {args.rounds} interleaved rounds", flush=True)
            return ab.run_rounds(gate.REPO, gate.REPO, args.rounds, runs_dir / name, only,
                                 current_context=context,
                                 progress=lambda line: print(line, flush=True))

        for i in range(1, args.pairs + 1):
            if args.rounds:
                a, b = rounds(f"aa-{i}")
            else:
                a = quick_run(runs_dir, runs_dir / f"aa-{i}a.log")
                b = quick_run(runs_dir, runs_dir / f"aa-{i}b.log")
            report = gate_pair(f"A/A pair {i} of {args.pairs}", load(a), load(b))
            print("\n".join(describe(report)), flush=True)
            reports.append(report)
            names = (lambda x: [d.name for d in x] if isinstance(x, list) else x.name)
            outcome["pairs"].append({"a": names(a), "b": names(b), "passed": report.passed,
                                     "failing": [row_id(r.row) for r in report.verdict.results
                                                 if r.fails],
                                     "improved": [row_id(r.row) for r in report.verdict.results
                                                  if r.decision == IMPROVEMENT]})
            last = (a, b) if args.rounds else b
            all_runs += a + b if args.rounds else []
        if args.rounds and all_runs:
            # every run of the A/A experiments timed both harnesses: their
            # agreement over the runs (results/agreement.py), the run as unit
            md = agreement.report_over_runs([[row for _, row in load(d).rows]
                                             for d in all_runs], "ci/aa A/A runs")
            (runs_dir / "agreement.md").write_text(md, encoding="utf-8")
            summary = next((line for line in md.splitlines() if " pairs agree within " in line),
                           "no path was timed by both harnesses")
            print(f"harness agreement over {len(all_runs)} runs: {summary} "
                  f"({runs_dir / 'agreement.md'})", flush=True)
        if reports:
            worst = suggested_thresholds(reports)
            outcome["largest_moves_pct"] = worst
            print(f"largest move of a compared row per kind, over {len(reports)} A/A pairs "
                  f"(a threshold must exceed it to stay quiet; [rows.\"pattern\"] of "
                  f"ci/gate.toml):", flush=True)
            for pattern, pct in sorted(worst.items()):
                print(f"    {pattern}: {pct:.1f}%", flush=True)
        if args.slowed_copy:
            if args.rounds:
                last = last or rounds("slowed")
                ok, lines = slowed_rounds_check(load(last[0]), load(last[1]), runs_dir)
            else:
                last = last or quick_run(runs_dir, runs_dir / "slowed.log")
                ok, lines = slowed_copy_check(load(last), runs_dir)
            print("\n".join(lines), flush=True)
            outcome["slowed_copy"] = ok
        if args.stress:
            if args.rounds:
                quiet, hot = rounds("stress", context=stress_ng)
            else:
                quiet = last or quick_run(runs_dir, runs_dir / "quiet.log")
                with stress_ng():
                    hot = quick_run(runs_dir, runs_dir / "stress.log")
            report = gate_pair("stress-ng on CPU 0", load(quiet), load(hot))
            print("\n".join(describe(report)), flush=True)
            outcome["stress"] = not report.passed
            if report.passed:
                print("stress-ng on CPU 0: NOT flagged", flush=True)
    except (RuntimeError, OSError) as e:  # ab.RunFailed is a RuntimeError
        print(f"ci/aa: {e}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        (runs_dir / "aa.json").write_text(json.dumps(outcome, indent=2) + "\n")
    passed = sum(p["passed"] for p in outcome["pairs"])
    print(f"ci/aa: {passed} of {len(outcome['pairs'])} A/A pairs passed"
          + ("" if outcome["slowed_copy"] is None else
             f"; slowed copy {'flagged' if outcome['slowed_copy'] else 'NOT flagged'}")
          + ("" if outcome["stress"] is None else
             f"; stress-ng run {'flagged' if outcome['stress'] else 'NOT flagged'}"))
    failed = passed < len(outcome["pairs"]) or False in (outcome["slowed_copy"], outcome["stress"])
    return EXIT_FAIL if failed else EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
