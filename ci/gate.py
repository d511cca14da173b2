"""The performance gate: did an access path get slower than in a baseline run?

    ci/gate [--baseline B] [--current C] [--config ci/gate.toml]
            [--summary FILE] [--verdict FILE] [--alpha A] [--threshold-pct T]
            [--min-samples N] [--cross-machine] [--allow-mode-mismatch]
    ci/gate --baseline B1 B2 ... --current C1 C2 ...   (interleaved rounds, ci/ab)
    ci/gate --store-baseline [--current C] [--baseline B]

B and C are a run directory of `make bench-all` (its results.jsonl is used)
or a results.jsonl. Defaults: B = results/baseline/results.jsonl (what
`make baseline` stores), C = results/runs/latest.

How it decides (pairing, the tests, the rule per metric, missing rows,
dead counters, interleaved rounds), its outputs and its exit status (0
pass, 1 fail, 2 usage or input error): ci/README.md, "How it decides" and
"Outputs and exit status". This module pairs the runs' rows and is the
command line; the rest of the gate is listed in ci/README.md's table.
"""

import argparse
import dataclasses
import sys
from pathlib import Path

from ci import gate_liveness
from ci.gate_config import (DEFAULT_CONFIG, KEY_FIELDS, MACHINE_FIELDS, RULE_KEYS, Config,
                            InputError, check_rule_value, display, is_allowed, load_config, row_id)
from ci.gate_report import (EXIT_FAIL, EXIT_PASS, EXIT_USAGE, failure_lines, markdown,
                            write_outputs)
from ci.gate_stats import (ALLOWED_MISSING, IMPROVEMENT, MISSING, NEW, NOT_GATED, OTHER_MACHINE,
                           REGRESSION, SKIPPED_NOT_OK, SKIPPED_REFERENCE, STEP_NOT_RUN, UNCHANGED,
                           Result, compare, compare_rounds, decide, not_gated_why, run_shifts)
from ci.gate_verdict import Kinds, Run, Verdict, load_run, run_kind
from results import files, run_state, runfile
from results.bench_all import STEP_ROWS
from results.rows import describe_run
from results.schema import clip, excerpt

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BASELINE = REPO / "results" / "baseline" / "results.jsonl"
DEFAULT_CURRENT = REPO / "results" / "runs" / "latest"
VERDICT_NAME = "gate-verdict.json"

# tsc_khz is recalibrated at every boot of a VM; smaller moves are not news.
TSC_KHZ_TOLERANCE = 0.001
# the bench-all step whose harness wrote a row (each step has its own harness)
STEP_OF_HARNESS = {harness: step for step, (harness, _) in STEP_ROWS.items()}


# ---- runs --------------------------------------------------------------------------

def _index(run: Run, fields) -> dict:
    """{(machine identity, key): (line, row)} of the run's measured rows
    (every harness but `reference`); InputError on two rows with one key."""
    index = {}
    for line, row in run.rows:
        if row["harness"] == "reference":
            continue
        k = (tuple((f, row["machine"][f]) for f in fields), tuple(row.get(f) for f in KEY_FIELDS))
        if k in index:
            raise InputError(
                f"{display(run.file)}:{line}: (row): same machine and key as line {index[k][0]} "
                f"({clip(row_id(row))}): the gate cannot tell which to compare"
                + ("" if fields else "; with cross-machine comparison, rows of different "
                                     "machines collide: gate one machine at a time"))
        index[k] = (line, row)
    return index


def _machine_mismatch(baseline: Run, current: Run, b_ids, c_ids, config: Config) -> str:
    def diff(a: tuple, b: tuple):
        return [f"{f}: {excerpt(va)} (baseline) vs {excerpt(vb)} (current)"
                for (f, va), (_, vb) in zip(a, b) if va != vb]
    b, c = sorted(b_ids, key=repr)[0], sorted(c_ids, key=repr)[0]
    where = config.source or "the built-in [machine] identity"
    return "\n".join([
        f"{display(baseline.file)}: the baseline was measured on another machine than "
        f"{display(current.file)}:",
        *("  " + d for d in diff(b, c)),
        "The gate compares a run only with a baseline from the same machine "
        f"(identity fields: {', '.join(config.identity)}; {where}).",
        "Store a baseline on this machine (make baseline), or compare anyway with "
        "--cross-machine (or [machine] cross_machine = true in ci/gate.toml)."])


def environment_changes(b_machine: dict, c_machine: dict, fields) -> list[dict]:
    """[{field, baseline, current}] for the machine fields that differ
    (mitigations: one entry per changed vulnerability)."""
    changes = []
    for f in fields:
        vb, vc = b_machine.get(f), c_machine.get(f)
        if f == "mitigations" and isinstance(vb, dict) and isinstance(vc, dict):
            for k in sorted(vb.keys() | vc.keys()):
                if vb.get(k) != vc.get(k):
                    changes.append({"field": f"mitigations.{k}", "baseline": vb.get(k),
                                    "current": vc.get(k)})
        elif f == "tsc_khz" and vb and vc and abs(vc - vb) <= TSC_KHZ_TOLERANCE * vb:
            continue
        elif vb != vc:
            changes.append({"field": f, "baseline": vb, "current": vc})
    return changes


def _kind_mismatch(baseline: Run, current: Run, kinds: Kinds, b_index, c_index) -> str:
    """Why the gate refuses two runs of different modes or steps."""
    lost = (sum(kinds.ran_only_in("baseline", STEP_OF_HARNESS.get(row["harness"]))
                for _, row in b_index.values())
            + sum(kinds.ran_only_in("current", STEP_OF_HARNESS.get(row["harness"]))
                  for _, row in c_index.values()))
    lines = [f"{display(baseline.file)} and {display(current.file)} are runs of different modes "
             "or steps:",
             f"  baseline: {describe_run(kinds.baseline)}",
             f"  current: {describe_run(kinds.current)}"]
    if kinds.baseline["mode"] != kinds.current["mode"]:
        lines.append("A QUICK run's rows have fewer repetitions, windows and pairs than a full "
                     "run's, and shorter ones: their differences would be the mode's, not the "
                     "code's.")
    if lost:
        lines.append(f"{lost} rows of steps only one of them ran cannot be compared.")
    return "\n".join(lines + [
        "Compare runs of one mode and the same steps (make bench-all [QUICK=1] for both, and "
        "make baseline), or pass --allow-mode-mismatch (make gate GATE_FLAGS=...) to compare "
        "them anyway."])


# ---- the gate ---------------------------------------------------------------------

_STATE = KEY_FIELDS.index("target_state")


def _stateless(k) -> tuple:
    """A row's index key without its target state."""
    ident, key = k
    return ident, key[:_STATE] + key[_STATE + 1:]


def _in_no_state(k) -> tuple:
    """A row's index key with no target state (as a read that could not run
    is planned: one row, whatever the states)."""
    ident, key = k
    return ident, key[:_STATE] + (None,) + key[_STATE + 1:]


def _missing_why(b: dict, c: dict | None, states: dict | None = None, k=None) -> str | None:
    """Why the baseline row b has no comparable current row c, or None.
    `states`: {stateless key: the current run's target states of it}, to
    say when the baseline predates target states (issue 34)."""
    if c is None:
        timed_in = (states or {}).get(_stateless(k)) if k and not b.get("target_state") else None
        if timed_in:
            return (f"the current run times this cross-CPU read with its target CPU "
                    f"{', '.join(timed_in)}; the baseline predates target states: make a new "
                    f"baseline (make baseline)")
        return "absent from the current run"
    if c["status"] != "ok":
        return f"{c['status']} in the current run: {clip(c['reason'])}"
    if (b["stand_in"] is None) != (c["stand_in"] is None):
        return ("the current run measures the real thing, the baseline a stand-in"
                if c["stand_in"] is None else
                f"the current run measures a stand-in ({clip(c['stand_in'])}), "
                "the baseline the real thing")
    return None


def run_gate(baseline, current, config: Config, allow_mode_mismatch: bool = False) -> Verdict:
    """Pair, compare and decide every row. `baseline` and `current` are one
    Run each, or lists of as many Runs, the interleaved rounds of ci/ab
    (baseline[i] and current[i] measured back to back): then each row is
    decided on its value per round (gate_stats.compare_rounds); which rows
    are missing or new is read from the first round. InputError when the
    runs cannot be compared at all (another machine, duplicate keys,
    nothing measured, uneven rounds) and, unless `allow_mode_mismatch`,
    when they differ in mode (QUICK or full) or steps: then the rows of a
    step only the baseline ran are not compared (STEP_NOT_RUN)."""
    baselines = list(baseline) if isinstance(baseline, (list, tuple)) else [baseline]
    currents = list(current) if isinstance(current, (list, tuple)) else [current]
    if len(baselines) != len(currents) or not baselines:
        raise InputError(f"{len(baselines)} baseline runs and {len(currents)} current runs: "
                         "interleaved rounds pair one baseline run with one current run")
    baseline, current = baselines[0], currents[0]
    fields = () if config.cross_machine else config.identity
    b_indexes = [_index(run, fields) for run in baselines]
    c_indexes = [_index(run, fields) for run in currents]
    b_index, c_index = b_indexes[0], c_indexes[0]
    for run, index in zip(baselines + currents, b_indexes + c_indexes):
        if not index:
            raise InputError(f"{display(run.file)}: no measured rows (only reference rows): "
                             "nothing to gate")
    b_ids = {ident for ident, _ in b_index}
    c_ids = {ident for ident, _ in c_index}
    if b_ids.isdisjoint(c_ids):
        raise InputError(_machine_mismatch(baseline, current, b_ids, c_ids, config))
    kinds = Kinds(run_kind(baselines), run_kind(currents))
    if kinds.differ and not allow_mode_mismatch:
        raise InputError(_kind_mismatch(baseline, current, kinds, b_index, c_index))

    def comparable(k) -> tuple[list, list]:
        """The row's value in every round where both sides have it ok and
        measure the same thing (real or stand-in)."""
        bs, cs = [], []
        for bi, ci in zip(b_indexes, c_indexes):
            b_row, c_row = bi.get(k, (None, None))[1], ci.get(k, (None, None))[1]
            if b_row and b_row["status"] == "ok" and _missing_why(b_row, c_row) is None:
                bs.append(b_row["median"])
                cs.append(c_row["median"])
        return bs, cs

    states: dict[tuple, list[str]] = {}  # the current run's target states of a read
    for k, (_, c) in c_index.items():
        if c.get("target_state"):
            states.setdefault(_stateless(k), []).append(c["target_state"])
    results = [Result(row, SKIPPED_REFERENCE, "a published figure, not measured")
               for _, row in baseline.rows if row["harness"] == "reference"]
    pairs = []  # (baseline, current) of every key in both: for the liveness comparison
    stood_in = set()  # current rows that stood for baseline rows of a target state
    for k, (_, b) in b_index.items():
        if k in c_index:
            pairs.append((b, c_index[k][1]))
        ident, _ = k
        rule = config.rule_for(b)
        if b["status"] != "ok":
            results.append(Result(b, SKIPPED_NOT_OK,
                                  f"{b['status']} in the baseline: {clip(b['reason'])}"))
            continue
        if ident not in c_ids:
            results.append(Result(b, OTHER_MACHINE,
                                  "measured on a machine the current run does not include: "
                                  + (", ".join(f"{f}={excerpt(v)}" for f, v in ident)
                                     or "(any machine)")))
            continue
        c = c_index.get(k, (None, None))[1]
        if c is None and b.get("target_state"):
            # a read the current run could not time at all has one row, with no state
            c = c_index.get(_in_no_state(k), (None, None))[1]
            c = c if c is not None and c["status"] != "ok" else None
            if c is not None:
                stood_in.add(_in_no_state(k))
        why = _missing_why(b, c, states, k)
        step = STEP_OF_HARNESS.get(b["harness"])
        if c is None and kinds.ran_only_in("baseline", step):
            results.append(Result(b, STEP_NOT_RUN, f"the current run did not run its step, "
                                                   f"{step}", rule))
            continue
        if why is not None:
            decision = ALLOWED_MISSING if is_allowed(row_id(b), config.allow_missing) else MISSING
            results.append(Result(b, decision, why, rule, current=c))
            continue
        if len(baselines) > 1:
            bs, cs = comparable(k)
            comparison = compare_rounds(bs, cs, b["metric"], rule) if len(bs) >= 2 \
                else dataclasses.replace(compare(b["samples"], c["samples"]), rounds=len(bs))
        else:
            comparison = compare(b["samples"], c["samples"])
        floor = not_gated_why(b)
        decision, why = (NOT_GATED, floor) if floor else decide(comparison, b["metric"], rule)
        results.append(Result(b, decision, why, rule, comparison, c))
    for k, (_, c) in c_index.items():
        if k not in b_index and k not in stood_in:
            step = STEP_OF_HARNESS.get(c["harness"])
            why = ("not in the baseline" + (f", which did not run its step, {step}"
                                            if kinds.ran_only_in("current", step) else ""))
            results.append(Result(c, NEW, why if c["status"] == "ok"
                                  else f"{why}; {c['status']}: {clip(c['reason'])}",
                                  current=c))

    # what changed on the machine between the two runs
    first_b = {ident: row["machine"] for (ident, _), (_, row) in reversed(b_index.items())}
    first_c = {ident: row["machine"] for (ident, _), (_, row) in reversed(c_index.items())}
    env_fields = MACHINE_FIELDS if config.cross_machine else \
        tuple(f for f in MACHINE_FIELDS if f not in config.identity)
    environment = [change for ident in sorted(b_ids & c_ids, key=repr)
                   for change in environment_changes(first_b[ident], first_c[ident], env_fields)]
    return Verdict(baseline, current, config, results, environment,
                   gate_liveness.compare_pairs(pairs, config.counter_died), run_shifts(results),
                   baselines, currents, kinds)


# ---- command line -------------------------------------------------------------------

CURRENT_HINT = ": run `make bench-all` first"


def load_arg(arg, role: str, default: Path, hint: str) -> Run:
    """The run that `arg` (a run directory or a results.jsonl) names,
    validated; `hint` ends the message when `arg` is the default and missing."""
    return load_run(runfile.locate(arg, role=role, hint=hint if arg == default else "",
                                   show=display))


def store_baseline(current_arg, baseline_arg) -> int:
    """make baseline: validate the current run and copy its results.jsonl to
    the baseline file (results/files.write_atomic: written whole, then
    renamed, never half a baseline). A run that did not complete is refused
    (runfile.locate) and nothing is written."""
    run = load_arg(current_arg, "run to store", DEFAULT_CURRENT, CURRENT_HINT)
    src = run.file
    dst = Path(baseline_arg)
    if dst.is_dir() or dst.suffix != ".jsonl":
        dst = dst / "results.jsonl"
    try:
        data = src.read_bytes()
        dst.parent.mkdir(parents=True, exist_ok=True)
        files.write_atomic(dst, data)
    except files.DiskError as e:
        raise InputError(str(e)) from None
    except OSError as e:
        raise InputError(f"{display(e.filename or dst)}: cannot store the baseline: "
                         f"{e.strerror or e}") from None
    print(f"baseline: {display(dst)} <- {display(src)} "
          f"(run {', '.join(run.run_ids)}, {len(run.rows)} rows)")
    return EXIT_PASS


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="ci/gate",
        description="Fail when an access path got slower than in a baseline run "
                    "(exit 0 pass, 1 regression or missing row, 2 usage or input error).")
    p.add_argument("--baseline", nargs="+", default=[DEFAULT_BASELINE], metavar="RUN",
                   help="baseline run directory or results.jsonl "
                        f"(default: {display(DEFAULT_BASELINE)}, stored by make baseline); "
                        "several: the baseline's interleaved rounds (ci/ab)")
    p.add_argument("--current", nargs="+", default=[DEFAULT_CURRENT], metavar="RUN",
                   help="current run directory or results.jsonl "
                        f"(default: {display(DEFAULT_CURRENT)}); several: the current "
                        "side's rounds, as many as the baseline's, in the same order")
    p.add_argument("--config", type=Path, metavar="TOML",
                   help=f"gate settings over the defaults of {display(DEFAULT_CONFIG)} "
                        f"(default: {display(DEFAULT_CONFIG)})")
    p.add_argument("--summary", metavar="FILE",
                   help="also write the Markdown summary here (it is always printed, and "
                        "appended to $GITHUB_STEP_SUMMARY when that is set)")
    p.add_argument("--verdict", type=Path, metavar="FILE",
                   help=f"JSON verdict (default: {VERDICT_NAME} next to the current results.jsonl)")
    p.add_argument("--alpha", type=float, help="override [defaults] alpha of the config")
    p.add_argument("--threshold-pct", type=float,
                   help="override [defaults] threshold_pct of the config")
    p.add_argument("--min-samples", type=int, help="override [defaults] min_samples of the config")
    p.add_argument("--cross-machine", action="store_true",
                   help="pair rows whatever machine they were measured on")
    p.add_argument("--allow-mode-mismatch", action="store_true",
                   help="compare a QUICK run with a full one, or runs of different steps "
                        "(refused by default); the rows of a step the current run did not "
                        "run are listed as not compared")
    p.add_argument("--store-baseline", action="store_true",
                   help="do not gate: validate CURRENT and copy its results.jsonl to BASELINE")
    return p.parse_args(argv)


# The settings the command line can change for every row; threshold_abs and
# min_effect are in each metric's own unit and sense: ci/gate.toml only.
CLI_RULE_KEYS = ("alpha", "threshold_pct", "min_samples")
assert set(CLI_RULE_KEYS) <= set(RULE_KEYS)


def apply_overrides(config: Config, args) -> Config:
    """Command-line settings replace [defaults] (per-metric and per-path
    settings still win) and can turn on cross-machine comparison."""
    overrides = {k: getattr(args, k) for k in CLI_RULE_KEYS if getattr(args, k) is not None}
    for k, v in overrides.items():
        problem = check_rule_value(k, v)
        if problem:
            raise InputError(f"--{k.replace('_', '-')}: {problem}")
    return dataclasses.replace(config, defaults=dataclasses.replace(config.defaults, **overrides),
                               cross_machine=config.cross_machine or args.cross_machine)


def main(argv=None) -> int:
    """The gate's exit status: EXIT_PASS, EXIT_FAIL (a verdict that fails) or
    EXIT_USAGE; never 1 for anything but a verdict, so that CI can tell a
    regression from a broken input or a bug of the gate itself."""
    try:
        return _main(argv)
    except Exception as e:  # a bug of the gate: not a verdict
        print(f"gate: internal error: {type(e).__name__}: {clip(str(e))}", file=sys.stderr)
        print("gate: not run (internal error, exit 2)", file=sys.stderr)
        return EXIT_USAGE


def _main(argv) -> int:
    args = parse_args(argv)
    if DEFAULT_CURRENT in args.current:  # a run interrupted since: say what is judged instead
        for run_dir, why in run_state.newer_incomplete(DEFAULT_CURRENT):
            print(f"gate: note: {display(run_dir)}, newer than latest, is not used: {why}",
                  file=sys.stderr)
    try:
        if args.store_baseline:
            if len(args.current) > 1 or len(args.baseline) > 1:
                raise InputError("--store-baseline stores one run: give one --current and "
                                 "at most one --baseline")
            return store_baseline(args.current[0], args.baseline[0])
        config = apply_overrides(load_config(args.config), args)
        if len(args.baseline) != len(args.current):
            raise InputError(f"{len(args.baseline)} --baseline runs and {len(args.current)} "
                             "--current runs: interleaved rounds pair one baseline run with "
                             "one current run, in the order given")
        baseline = [load_arg(arg, "baseline", DEFAULT_BASELINE, ": store one with `make baseline`, "
                             "or name one with BASELINE=<run dir or results.jsonl>")
                    for arg in args.baseline]
        current = [load_arg(arg, "current run", DEFAULT_CURRENT, CURRENT_HINT)
                   for arg in args.current]
        verdict = run_gate(baseline, current, config, args.allow_mode_mismatch)
        md = markdown(verdict)
        verdict_path = args.verdict or current[-1].file.resolve().parent / VERDICT_NAME
        try:
            write_outputs(verdict, md, args.summary, verdict_path)
        except OSError as e:
            raise InputError(f"{e.filename}: cannot write: {e.strerror or e}") from None
    except (InputError, runfile.RunFileError) as e:
        print(e, file=sys.stderr)
        print("gate: not run (usage or input error, exit 2)", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(md)
    sys.stdout.flush()
    for line in failure_lines(verdict):
        print(line, file=sys.stderr)
    outcome = "pass" if verdict.passed else "FAIL"
    print(f"gate: {outcome}: {verdict.count(REGRESSION)} regressions, "
          f"{verdict.count(MISSING)} missing, "
          f"{len(verdict.liveness.of_kind(gate_liveness.DIED))} rows whose counter died, "
          f"{verdict.count(IMPROVEMENT)} improvements, "
          f"{verdict.count(UNCHANGED)} unchanged; verdict in {display(verdict_path)}",
          file=sys.stderr)
    return EXIT_PASS if verdict.passed else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
