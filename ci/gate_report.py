"""The gate's outputs: the Markdown summary, the JSON verdict, the failure
lines for the log, and how rows and values are written in them.
"""

import dataclasses
import json
import math
import os
from pathlib import Path

from ci import gate_liveness
from ci.gate_config import KEY_FIELDS, display, row_id
from ci.gate_stats import (ALLOWED_MISSING, DECISIONS, IMPROVEMENT, MISSING, NEW, NOT_GATED,
                           MIN_ROUNDS, OTHER_MACHINE, REGRESSION, SKIPPED_NOT_OK, SKIPPED_REFERENCE,
                           STEP_NOT_RUN, TOO_FEW_SAMPLES, UNCHANGED, WITH_THE_RUN, WORSE_WHEN,
                           Result, Rule)
from ci.gate_verdict import Kinds, Run, Verdict
from results import markdown, registry, table
from results.rows import describe_run
from results.schema import clip
from results.significance import magnitude

VERDICT_VERSION = 1
# The exit status of ci/gate (the verdict records it too).
EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


# ---- naming rows and values ---------------------------------------------------------

def label(row) -> str:
    """A row for people, as in the latency table: "msr-dev pread 0x611 1→0
    latency (gbench)"; a lone CPU number when the counter belongs to no CPU."""
    parts = [row["path"], row["op"],
             table.shorten(table.shown_target(row)) if row["target"] else None,
             table.cpus(row, none=None), row["metric"]]
    return " ".join(p for p in parts if p) + f" ({row['harness']})"


# ---- the JSON verdict -----------------------------------------------------------------

def _num(x):
    """A float for JSON: None for NaN or infinity."""
    return None if x is None or not math.isfinite(x) else float(x)


def verdict_json(v: Verdict) -> dict:
    """The JSON verdict: the overall outcome, the settings and every row."""
    def row_entry(r: Result) -> dict:
        row = r.row
        entry = {"id": row_id(row), **{f: row.get(f) for f in KEY_FIELDS}, "unit": row["unit"],
                 "decision": r.decision, "fails": r.fails, "why": r.why or None,
                 "baseline_status": None if r.decision == NEW else row["status"],
                 "current_status": (r.current or {}).get("status")}
        if r.rule is not None:
            entry.update(alpha=r.rule.alpha, threshold_pct=r.rule.threshold_pct,
                         threshold_abs=r.rule.threshold_abs, min_effect=r.rule.min_effect,
                         min_samples=r.rule.min_samples, worse_when=WORSE_WHEN[row["metric"]])
        c = r.comparison
        if c is not None:
            entry.update(n_baseline=c.n_baseline, n_current=c.n_current,
                         median_baseline=c.median_baseline, median_current=c.median_current,
                         change_pct=_num(c.change_pct), p_value=c.p_value,
                         cliffs_delta=c.cliffs_delta,
                         cliffs_magnitude=magnitude(c.cliffs_delta))
            if c.rounds:
                entry.update(rounds=c.rounds, test="paired t over rounds",
                             ci=[_num(x) for x in c.ci] if c.ci else None,
                             ci_unit="%" if c.by_ratio else row["unit"])
        return entry

    order = {d: i for i, d in enumerate(DECISIONS)}
    ordered = sorted(v.results, key=lambda r: (order[r.decision], _sort_key(r)))
    cfg = v.config
    return {
        "gate_version": VERDICT_VERSION,
        "verdict": "pass" if v.passed else "fail",
        "exit_code": EXIT_PASS if v.passed else EXIT_FAIL,
        "baseline": v.baseline.describe(),
        "current": v.current.describe(),
        "rounds": v.rounds,
        "rounds_runs": [{"baseline": b.describe(), "current": c.describe()}
                        for b, c in zip(v.baselines, v.currents)] if v.rounds else [],
        "settings": {"config": cfg.source, "defaults": dataclasses.asdict(cfg.defaults),
                     "metrics": cfg.metrics, "paths": cfg.paths, "cross_cpu": cfg.cross_cpu,
                     "rows": dict(cfg.rows),
                     "allow_missing": list(cfg.allow_missing),
                     "identity": list(cfg.identity), "cross_machine": cfg.cross_machine,
                     "counter_died": cfg.counter_died},
        "environment_changes": v.environment,
        "counts": {d: v.count(d) for d in DECISIONS},
        "run_shifts": {h: {**dataclasses.asdict(sh),
                           "whole_run": sh.is_whole_run(cfg.defaults.threshold_pct)}
                       for h, sh in v.shifts.items()},
        "liveness_changes": gate_liveness.json_entries(v.liveness, row_id),
        "liveness_not_compared": v.liveness.predates,
        "rows": [row_entry(r) for r in ordered],
    }


def _sort_key(r: Result):
    row = r.row
    paths = registry.PATHS
    path = paths.index(row["path"]) if row["path"] in paths else len(paths)
    return (path, row["op"], table.shown_target(row) or "", str(row["cpu"]),
            str(row["target_cpu"]), row["metric"], row["harness"])


# ---- the Markdown summary and the log ---------------------------------------------------

def fmt_value(x: float, unit: str) -> str:
    """3 significant digits, ns scaled to µs/ms/s (as the latency table)."""
    if x is None or not math.isfinite(x):
        return "—"
    factor, name = table.scale_for_unit(unit, x)
    return f"{table.sig3(x / factor)} {name}"


def fmt_change_of(c, unit: str) -> str:
    """The change, and over interleaved rounds its CI: "+3.1% (−2.0..+8.4%)"."""
    x = c.change_pct
    text = ("+∞" if x > 0 else "−∞") if math.isinf(x) else f"{x:+.1f}%"
    if not c.rounds or c.ci is None:
        return text
    if c.by_ratio:
        return f"{text} ({c.ci[0]:+.1f}..{c.ci[1]:+.1f}%)"
    return f"{text} (Δ {c.ci[0]:+.3g}..{c.ci[1]:+.3g} {unit})"


def fmt_p(p: float) -> str:
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def fmt_p_is(p: float) -> str:
    """"p = 0.0017", "p < 0.0001"."""
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.4f}"


_table = markdown.table


# How a row's note shows each setting of its Rule, in this order.
RULE_NOTES = (("threshold_pct", "±{:g}%"), ("threshold_abs", "±{:g} (unit)"),
              ("min_effect", "|δ| ≥ {:g}"), ("alpha", "α = {:g}"),
              ("min_samples", "min {} samples"))


def _rule_note(rule: Rule, defaults: Rule) -> str:
    """The settings of a row that differ from [defaults], e.g. "±25%"."""
    return ", ".join(shown.format(getattr(rule, key)) for key, shown in RULE_NOTES
                     if getattr(rule, key) != getattr(defaults, key))


COMPARED_HEADER = ("row", "baseline median", "current median", "change", "p", "Cliff's δ", "note")


def _compared_table(results, defaults: Rule) -> list[str]:
    lines = []
    for r in results:
        c, unit = r.comparison, r.row["unit"]
        note = "; ".join(x for x in (_rule_note(r.rule, defaults), r.why) if x)
        lines.append((label(r.row), fmt_value(c.median_baseline, unit),
                      fmt_value(c.median_current, unit), fmt_change_of(c, unit),
                      fmt_p(c.p_value), f"{c.cliffs_delta:+.2f} ({magnitude(c.cliffs_delta)})",
                      note))
    return _table(COMPARED_HEADER, lines)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _ids(runs: list[Run]) -> str:
    """The runs' ids for Markdown: "`a`, `b`"."""
    return ", ".join(f"`{i}`" for run in runs for i in run.run_ids)


def busy_lines(v: Verdict) -> list[str]:
    """A warning per run that was measured on a busy machine (machine.json's
    "contention", results/contention.py): a change of its rows may be the
    other work, not the code."""
    out = []
    for side, runs in (("baseline", v.baselines or [v.baseline]),
                       ("current run", v.currents or [v.current])):
        for run in runs:
            reasons = {((r.get("machine") or {}).get("contention") or {}).get("reason")
                       for _, r in run.rows} - {None}
            for reason in sorted(reasons):
                out += ["", f"> ⚠️ **The {side} {_ids([run])} was measured on a busy machine**: "
                            f"{reason}. Its rows moved with that work too; run it again on a "
                            "quiet machine before taking a change below as the code's."]
    return out


def markdown(v: Verdict) -> str:
    """The Markdown summary: for a terminal, a PR comment or a step summary."""
    groups = {d: sorted((r for r in v.results if r.decision == d), key=_sort_key)
              for d in DECISIONS}
    n = {d: len(rs) for d, rs in groups.items()}
    tally = [_plural(n[REGRESSION], "regression")]
    if n[MISSING]:
        tally.append(f"{n[MISSING]} missing")
    died = len(v.liveness.of_kind(gate_liveness.DIED))
    if died:
        # rows, not counters: one dead counter reaches every row that reads it
        tally.append(f"{_plural(died, 'row')} whose counter died")
    tally.append(_plural(n[IMPROVEMENT], "improvement"))
    tally.append(f"{n[UNCHANGED]} unchanged")
    if n[NOT_GATED]:
        tally.append(f"{n[NOT_GATED]} not gated")
    head = "✅ pass" if v.passed else "❌ fail"
    d = v.config.defaults
    overrides = (f"; overrides per metric, path or row in `{v.config.source}`, "
                 "the thresholds applied are in each row's note"
                 if v.config.metrics or v.config.paths or v.config.cross_cpu or v.config.rows
                 else "")
    out = [f"## raplbench gate: {head} — {', '.join(tally)}", ""]
    if v.rounds:
        out += [f"{v.rounds} interleaved rounds: baseline {_ids(v.baselines)} → current "
                f"{_ids(v.currents)}.", "",
                f"A row regresses when a paired t test over the rounds (its median in each "
                f"round, current against the baseline measured beside it; on the log of the "
                f"ratio) gives p < {d.alpha:g} **and** it is worse by more than "
                f"{d.threshold_pct:g}% (at least {MIN_ROUNDS} rounds{overrides}). The change "
                f"column gives the {1 - d.alpha:.0%} confidence interval."]
    else:
        out += [f"Baseline {_ids([v.baseline])} ({display(v.baseline.file)}) → current "
                f"{_ids([v.current])} ({display(v.current.file)}).", "",
                f"A row regresses when a two-sided Mann–Whitney U test on its samples gives "
                f"p < {d.alpha:g} **and** its median is worse by more than {d.threshold_pct:g}% "
                f"(at least {d.min_samples} samples a side{overrides})."]
    if v.config.cross_machine:
        out += ["", "> ⚠️ **Cross-machine comparison**: the rows were paired without regard "
                    "to the machine; differences below may come from the hardware."]
    out += _kind_lines(v.kinds)
    out += busy_lines(v)
    for harness, shift in v.shifts.items():
        if shift.is_whole_run(d.threshold_pct) and not v.rounds:
            out += ["", f"> ⚠️ **The whole {harness} run moved**: its latency rows moved "
                        f"×{shift.factor:.2f} (median of {shift.rows} rows; {shift.following} "
                        f"within {WITH_THE_RUN:.0%} of it). A host that was slower or faster "
                        "for the whole step moves every row like this, and so does a change "
                        "that slows every path alike: one pair of runs cannot tell them apart. "
                        "Repeat both runs, interleaved, before trusting the rows it moved."]
    if v.environment:
        changes = "; ".join(f"{c['field']} `{c['baseline']}` → `{c['current']}`"
                            for c in v.environment)
        out += ["", f"> **Machine changes since the baseline**: {changes}"]

    def section(title, lines_):
        out.extend(["", f"### {title}", "", *lines_])

    def details(summary, lines_):
        out.extend(["", f"<details><summary>{summary}</summary>", "", *lines_, "", "</details>"])

    if n[REGRESSION]:
        section(f"❌ Regressions ({n[REGRESSION]})", _compared_table(groups[REGRESSION], d))
    for decision, title in ((MISSING, "❌ Missing or no longer ok"),
                            (ALLOWED_MISSING, "Missing, allowed by `[allow] missing`")):
        if n[decision]:
            section(f"{title} ({n[decision]})", _table(
                ("row", "id (for `[allow] missing`)", "baseline median", "why"),
                [(label(r.row), f"`{row_id(r.row)}`",
                  fmt_value(r.row["median"], r.row["unit"]), r.why) for r in groups[decision]]))
    out += gate_liveness.markdown_sections(v.liveness, label, _table)
    if n[IMPROVEMENT]:
        section(f"✅ Improvements ({n[IMPROVEMENT]})", _compared_table(groups[IMPROVEMENT], d))
    not_compared = groups[TOO_FEW_SAMPLES] + groups[OTHER_MACHINE] + groups[STEP_NOT_RUN]
    if not_compared:
        section(f"⚠️ Not compared ({len(not_compared)})",
                _table(("row", "why"), [(label(r.row), r.why) for r in not_compared]))
    if n[UNCHANGED]:
        details(f"{n[UNCHANGED]} unchanged", _compared_table(groups[UNCHANGED], d))
    if n[NOT_GATED]:
        details(f"{n[NOT_GATED]} compared, not gated (the machine's floor)",
                _compared_table(groups[NOT_GATED], d))
    if n[NEW]:
        details(f"{_plural(n[NEW], 'new row')} (not in the baseline)",
                [f"- {label(r.row)}" + ("" if r.row["status"] == "ok" else f": {r.row['status']}")
                 for r in groups[NEW]])
    skipped = [f"{_plural(n[SKIPPED_NOT_OK], 'row')} not ok in the baseline"
               if n[SKIPPED_NOT_OK] else "",
               f"{_plural(n[SKIPPED_REFERENCE], 'reference row')}" if n[SKIPPED_REFERENCE] else ""]
    if any(skipped):
        out += ["", "Skipped: " + ", ".join(s for s in skipped if s) + "."]
    return "\n".join(out) + "\n"


def _kind_lines(k: Kinds) -> list[str]:
    """What the summary says of the two runs' modes and steps: a warning
    when they differ (compared anyway: --allow-mode-mismatch), a note when
    only one side records them."""
    if k.differ:
        return ["", f"> ⚠️ **Runs of different modes or steps**, compared anyway "
                    f"(--allow-mode-mismatch): the baseline is {describe_run(k.baseline)}, "
                    f"the current {describe_run(k.current)}. A QUICK run's rows have fewer "
                    "and shorter blocks, windows and pairs than a full run's, so a change "
                    "between the two modes may be the mode's; the rows of a step only one run "
                    "ran are not compared."]
    for side, kind, other in (("baseline", k.baseline, k.current),
                              ("current run", k.current, k.baseline)):
        if kind is None and other is not None:
            return ["", f"> The {side} {describe_run(None)}: the gate could not check that "
                        f"both runs are of one mode and the same steps (the other is "
                        f"{describe_run(other)})."]
    return []


def failure_lines(v: Verdict) -> list[str]:
    """One line per failing row, for the log."""
    lines = []
    for r in sorted((r for r in v.results if r.fails), key=_sort_key):
        if r.decision == REGRESSION:
            c = r.comparison
            lines.append(f"gate: regression: {clip(label(r.row))}: "
                         f"{fmt_change_of(c, r.row['unit'])} "
                         f"(median {fmt_value(c.median_baseline, r.row['unit'])} → "
                         f"{fmt_value(c.median_current, r.row['unit'])}, {fmt_p_is(c.p_value)})")
        else:
            lines.append(f"gate: missing: {clip(label(r.row))} [{clip(row_id(r.row))}]: "
                         f"{r.why}")
    return lines + gate_liveness.failure_lines(v.liveness, label)


# ---- writing them -----------------------------------------------------------------------

def write_outputs(v: Verdict, md: str, summary: str | None, verdict_path: Path) -> None:
    """The summary to `summary` (unless that is $GITHUB_STEP_SUMMARY) and
    appended to $GITHUB_STEP_SUMMARY when set; the JSON verdict to `verdict_path`."""
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and not (step and os.path.abspath(summary) == os.path.abspath(step)):
        Path(summary).write_text(md, encoding="utf-8")
    if step:
        with open(step, "a", encoding="utf-8") as f:
            f.write(md + "\n")
    verdict_path.write_text(json.dumps(verdict_json(v), indent=2, ensure_ascii=False,
                                       allow_nan=False) + "\n", encoding="utf-8")
