"""Cross-harness agreement: where the C++ (gbench) and the Rust (criterion)
harnesses timed the same thing, do their medians agree, given how much
each harness's own blocks scatter?

One run (report; agreement.md in the run directory, and each pair's ratio
and verdict in bench-all's latency table, results/summary.py): rows pair
on (path, op, target, cpu, target_cpu, target_state) among ok latency rows, and each
pair is judged by a 95% bootstrap CI of the ratio of medians (criterion /
gbench) against a tolerance of 10%. Several runs
(report_over_runs; `python -m results.agreement RUN...`, ci/aa --rounds):
one ratio per pair and run, judged by a t interval of the mean log ratio.
The verdicts, KNOWN_CAUSES, the run-wide factor, the harnesses' turns and
the measurements behind them: results/README.md, "Agreement between the
harnesses".
"""

import argparse
import math
import sys
from pathlib import Path

import dataclasses

import numpy as np
from scipy import stats

from results import liveness, markdown, runfile
from results.checks import fmt_ns
from results import significance as sig
from results.table import cpus

TOLERANCE = 1.10          # agree within 10%: the ratio's CI inside [1/1.1, 1.1]
CONFIDENCE = 0.95
RESAMPLES = 4000
SEED = 0                  # the same rows always get the same report
HARNESSES = ("gbench", "criterion")
PERCENT = round((TOLERANCE - 1) * 100)

AGREE, DIFFER, UNCLEAR = "agree", "differ", "unclear"

# Below this many ns per operation the loop around the operation is a
# visible share of it (KNOWN_CAUSES["loop"]), which explains a difference
# of at most LOOP_DIFF_NS (measured: 0.2 ns).
LOOP_NS = 10.0
LOOP_DIFF_NS = 0.5

# The run-wide factor needs this many pairs above LOOP_NS.
RUN_WIDE_MIN_PAIRS = 4

# Differences between the harnesses that remain although both time the
# same operation the same way, each measured on the development VM and
# pinned by the test named in it: if the cause goes away, that test fails
# and this entry must go too.
KNOWN_CAUSES = {
    "stand-in": (
        "the two harnesses measured different stand-ins (their stand_in texts differ): "
        "not the same operation. Both take them from rbench's one plan "
        "(results/test_ubench_plan.py checks that ubench times its rows as they are)"),
    "loop": (
        f"below {LOOP_NS:g} ns per operation, medians less than {LOOP_DIFF_NS:g} ns apart: "
        "both loops time the same seqlock copy of a slot found once (rbench's SlotRef::load, "
        "ubench's BpfSampler::load_slot), but two separately compiled loops of the same "
        "operations do not run at the same speed on the development VM in its slow state "
        "(code and stack placement). Measured in one rbench process, 20 alternated blocks: "
        "the same copy in two loops took 3.6 and 4.2 ns (0.86), and rbench's earlier loop (a "
        "CPU check and a stored address per load) 1.08–1.13 times a bare copy loop; over 100 "
        "A/A runs the pair's ratio went from 1.14 to 1.08–1.11 with that loop gone. Pinned by "
        "rbench's ebpf test `load_of_a_cpu_without_a_slot_is_an_error` (the slot found once)"),
}


@dataclasses.dataclass(frozen=True)
class Verdict:
    """How a pair compares: the ratio of medians (criterion / gbench), its
    CI (None when a row has fewer than 2 blocks) and the verdict."""
    ratio: float
    ci: tuple[float, float] | None
    kind: str       # AGREE, DIFFER or UNCLEAR

    def text(self) -> str:
        if self.kind == AGREE:
            return f"agree (within {PERCENT}%)"
        if self.ci is None:
            return "noise too wide to tell (fewer than 2 blocks)"
        lo, hi = self.ci
        if self.kind == DIFFER:
            return f"differ beyond noise (ratio {self.ratio:.2f}, CI {lo:.2f}–{hi:.2f})"
        return f"noise too wide to tell (CI {lo:.2f}–{hi:.2f} spans {PERCENT}%)"


def _key(r):
    return (r["path"], r["op"], r["target"], r["cpu"], r["target_cpu"], r.get("target_state"))


def _key_order(key) -> tuple:
    """A pair key as sortable text (None first)."""
    return tuple("" if v is None else str(v) for v in key)


def _median_ratio(c, g, axis=-1):
    return np.median(c, axis=axis) / np.median(g, axis=axis)


def ratio_ci(g_samples, c_samples, confidence: float = CONFIDENCE,
             resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float] | None:
    """95% CI of median(c) / median(g), bootstrapping each harness's blocks
    independently (percentile method); None with fewer than 2 blocks on a
    side."""
    if np.any(np.asarray(g_samples, float) <= 0):
        return None
    return sig.bootstrap_ci(_median_ratio, c_samples, g_samples, confidence, resamples, seed)


def _verdict(ratio: float, ci, tolerance: float) -> Verdict:
    if ci is None:
        return Verdict(ratio, None, UNCLEAR)
    lo, hi = ci
    if 1 / tolerance <= lo and hi <= tolerance:
        kind = AGREE
    elif hi < 1 / tolerance or lo > tolerance:
        kind = DIFFER
    else:
        kind = UNCLEAR
    return Verdict(ratio, ci, kind)


def judge(g: dict, c: dict, tolerance: float = TOLERANCE) -> Verdict:
    """The verdict on one pair, from both rows' samples (their medians when
    a row has no samples, as a schema row always has)."""
    g_samples, c_samples = g.get("samples") or [g["median"]], c.get("samples") or [c["median"]]
    ratio = c["median"] / g["median"] if g["median"] else float("inf")
    return _verdict(ratio, ratio_ci(g_samples, c_samples), tolerance)


def judge_runs(ratios, tolerance: float = TOLERANCE,
               confidence: float = CONFIDENCE) -> Verdict:
    """The verdict on one pair from its ratio (criterion / gbench) in each
    of several runs: the geometric mean ratio and a t interval of the mean
    log ratio; no interval with fewer than 2 runs."""
    logs = np.log(np.asarray(ratios, dtype=float))
    ratio = float(np.exp(logs.mean()))
    if logs.size < 2:
        return _verdict(ratio, None, tolerance)
    half = sig.t_half_width(logs, confidence)
    return _verdict(ratio, (math.exp(logs.mean() - half), math.exp(logs.mean() + half)),
                    tolerance)


def run_wide_factor(found) -> float | None:
    """The median ratio (criterion / gbench) of the pairs above LOOP_NS, or
    None with fewer than RUN_WIDE_MIN_PAIRS of them."""
    ratios = [c["median"] / g["median"] for g, c in found
              if min(g["median"], c["median"]) >= LOOP_NS]
    return float(np.median(ratios)) if len(ratios) >= RUN_WIDE_MIN_PAIRS else None


def known_cause(g: dict, c: dict) -> str | None:
    """The key of KNOWN_CAUSES that explains why this pair's medians may
    differ, or None: no measured cause applies."""
    if g["stand_in"] != c["stand_in"]:
        return "stand-in"
    if (min(g["median"], c["median"]) < LOOP_NS
            and abs(c["median"] - g["median"]) <= LOOP_DIFF_NS):
        return "loop"
    return None


def pairs(all_rows):
    """[(gbench row, criterion row)] for every key measured ok by both."""
    by = {h: {} for h in HARNESSES}
    for r in all_rows:
        if r["harness"] in by and r["metric"] == "latency" and r["status"] == "ok":
            by[r["harness"]].setdefault(_key(r), r)
    common_keys = sorted(set(by["gbench"]) & set(by["criterion"]),
                         key=_key_order)
    return [(by["gbench"][k], by["criterion"][k]) for k in common_keys]


HOW = [
    "How both harnesses time a row (results/schedule.py, `Schedule`): blocks of the "
    "operation, each right after the thread was pinned to the row's CPU and the operation "
    "ran untimed for the warm-up, the blocks of all rows interleaved over the run (Google "
    "Benchmark's random interleaving of repetitions; rbench's rounds, rbench/src/schedule.rs), "
    "the two harnesses taking turns in legs of a few blocks each (ABBA order). "
    "A row's samples are its blocks' ns per operation, its value their median; the same "
    "system calls with the same arguments (strace) in both.",
    "",
    f"Verdict: a {round(CONFIDENCE * 100)}% CI of criterion / gbench from a bootstrap of "
    f"each harness's blocks ({RESAMPLES} resamples, percentile); **agree** when the CI lies "
    f"within ±{PERCENT}% (1/{TOLERANCE:g}–{TOLERANCE:g}), **differ beyond noise** when it "
    f"lies outside, otherwise **noise too wide to tell**: the blocks of one harness scatter "
    f"more than {PERCENT}% allows to decide (on a VM whose speed drifts, more blocks or a "
    "quieter machine).",
]


def _causes_lines(causes: dict) -> list[str]:
    """The footnotes of the known causes a report named ({key: number})."""
    if not causes:
        return []
    return ["", "Known causes (measured, each pinned by a test):", "",
            *(f"{number}. {KNOWN_CAUSES[key]}" for key, number in causes.items())]


def report(all_rows, run_id: str = "") -> str:
    """The agreement report in Markdown."""
    lines = [f"# Cross-harness agreement{f' (run {run_id})' if run_id else ''}", "",
             "Medians of the same path timed by ubench (Google Benchmark, C++) and "
             "rbench (Criterion, Rust), judged against the scatter of each harness's "
             f"blocks: do they agree within {PERCENT}%?", ""]
    found = pairs(all_rows)
    if not found:
        lines.append("No path was measured by both harnesses in this run.")
        return "\n".join(lines) + "\n"
    table = []
    counts = {AGREE: 0, DIFFER: 0, UNCLEAR: 0}
    factor = run_wide_factor(found)
    causes, unexplained, dead = {}, 0, {}  # causes: {key: number}; dead: {footnote: letter}
    for g, c in found:
        v = judge(g, c)
        counts[v.kind] += 1
        marks = []
        if v.kind != AGREE and (cause := known_cause(g, c)):
            number = causes.setdefault(cause, len(causes) + 1)
            marks.append(f"known cause [{number}]")
        elif v.kind == DIFFER:
            unexplained += 1
            marks.append("**no known cause**")
        dead_rows = [r for r in (g, c) if liveness.is_dead(r)]
        if dead_rows:
            letters = dict.fromkeys(dead.setdefault(liveness.footnote(r), chr(ord("a") + len(dead)))
                                    for r in dead_rows)
            tags = " / ".join(dict.fromkeys(liveness.tag(r) for r in dead_rows))
            marks.append(f"**{tags} counter** [{','.join(letters)}]")
        verdict = f"**{v.text()}**" if v.kind == DIFFER else v.text()
        ci = f"{v.ci[0]:.2f}–{v.ci[1]:.2f}" if v.ci else "—"
        table.append([g["path"], g["op"], g["target"] or "—", cpus(g), fmt_ns(g["median"]),
                      fmt_ns(c["median"]), f"{v.ratio:.2f}", ci, verdict, "; ".join(marks)])
    lines += markdown.table(["path", "op", "target", "cpu→target", "gbench", "criterion",
                             "criterion / gbench", f"{round(CONFIDENCE * 100)}% CI", "verdict",
                             ""], table)
    lines += ["", f"{counts[AGREE]} of {len(found)} pairs agree within {PERCENT}%; "
                  f"{counts[DIFFER]} differ beyond noise ({counts[DIFFER] - unexplained} with a "
                  f"known cause); {counts[UNCLEAR]} too noisy to tell."]
    if factor is not None:
        above = [c["median"] / g["median"] for g, c in found
                 if min(g["median"], c["median"]) >= LOOP_NS]
        near = sum(1 / TOLERANCE <= ratio / factor <= TOLERANCE for ratio in above)
        lines += ["", f"Run-wide factor (the median ratio of the {len(above)} pairs above "
                      f"{LOOP_NS:g} ns): {factor:.2f}; {near} of them within {PERCENT}% of it. "
                      "A factor far from 1 is a bias of one harness on every path, or a drift "
                      "of the machine that the harnesses' turns did not even out: compare it "
                      "across runs."]
    lines += [""]
    lines += HOW
    lines += _causes_lines(causes)
    if dead:
        lines += ["", "Counters that yield no energy (each harness timed the real route, so "
                      "the latency stands; the counter never advanced or has no energy unit):",
                  ""]
        lines += [f"- [{letter}] {text}" for text, letter in dead.items()]
    if any(liveness.predates_probe(r) for pair in found for r in pair):
        lines += ["", f"Schema 1 rows: {liveness.PREDATES_NOTE}."]
    return "\n".join(lines) + "\n"


def gbench_ran_first(g: dict, c: dict) -> bool | None:
    """Whether gbench led the harnesses' turns (or, in runs before the
    turns, ran before criterion) in the pair's run (results/bench_all.py
    records parameters.step); None if unknown."""
    g_step, c_step = ((r.get("parameters") or {}).get("step") for r in (g, c))
    if not isinstance(g_step, int) or not isinstance(c_step, int):
        return None
    return g_step < c_step


def order_effect(found) -> tuple[float, float, int, int, float] | None:
    """The step order's effect on a pair over runs: the geometric mean ratio
    (criterion / gbench) of the runs where gbench ran first and of those
    where criterion did, their numbers of runs, and Welch's t test p value
    of the difference in log ratio; None with fewer than 2 runs of either
    order (or runs that did not record it)."""
    by_order = {True: [], False: []}
    for g, c in found:
        first = gbench_ran_first(g, c)
        if first is not None:
            by_order[first].append(math.log(c["median"] / g["median"]))
    g_first, c_first = by_order[True], by_order[False]
    if len(g_first) < 2 or len(c_first) < 2:
        return None
    p = float(stats.ttest_ind(g_first, c_first, equal_var=False).pvalue)
    return (math.exp(np.mean(g_first)), math.exp(np.mean(c_first)), len(g_first),
            len(c_first), p)


def _order_lines(per_key) -> list[str]:
    """The step order section of report_over_runs (empty when no pair has
    runs of both orders)."""
    effects = {key: e for key, found in per_key.items() if (e := order_effect(found))}
    if not effects:
        return []
    lines = ["", "**Order of the harness steps.** bench-all's two harnesses take turns, and "
             "which of them leads is drawn at random per run. Per pair, the ratio in the runs "
             "where gbench led and in those where criterion did, and Welch's t test of the "
             "difference (a drift of the machine during a run shows here as an order effect; "
             "over both orders it averages out of the ratio above):", ""]
    table = []
    for key in sorted(effects, key=_key_order):
        g_first, c_first, n_g, n_c, p = effects[key]
        g0 = per_key[key][0][0]
        table.append([g0["path"], g0["op"], cpus(g0), f"{g_first:.3f} ({n_g})",
                      f"{c_first:.3f} ({n_c})", f"{p:.3g}"])
    return lines + markdown.table(["path", "op", "cpu→target", "gbench first (runs)",
                                   "criterion first (runs)", "p"], table)


def report_over_runs(runs, title: str = "") -> str:
    """The agreement over several runs (lists of rows) in Markdown: one
    ratio per pair and run, judged by judge_runs. The known causes that
    apply to a pair as a whole (stand-in, loop) are checked on the pair's
    median values over the runs."""
    per_key = {}
    for run_rows in runs:
        for g, c in pairs(run_rows):
            if g["median"] > 0 and c["median"] > 0:
                per_key.setdefault(_key(g), []).append((g, c))
    lines = [f"# Cross-harness agreement over {len(runs)} runs{f' ({title})' if title else ''}",
             "", "Per run, the ratio of the two harnesses' medians of the same path; over "
             f"the runs, their geometric mean and a {round(CONFIDENCE * 100)}% t interval of "
             f"the mean log ratio: do they agree within {PERCENT}%?", ""]
    if not per_key:
        lines.append("No path was measured by both harnesses in these runs.")
        return "\n".join(lines) + "\n"
    table = []
    counts = {AGREE: 0, DIFFER: 0, UNCLEAR: 0}
    causes, unexplained = {}, 0
    for key in sorted(per_key, key=_key_order):
        found = per_key[key]
        ratios = [c["median"] / g["median"] for g, c in found]
        v = judge_runs(ratios)
        counts[v.kind] += 1
        g0, c0 = found[0]
        g_med = float(np.median([g["median"] for g, _ in found]))
        c_med = float(np.median([c["median"] for _, c in found]))
        marks = []
        if v.kind != AGREE and (cause := known_cause({**g0, "median": g_med},
                                                     {**c0, "median": c_med})):
            marks.append(f"known cause [{causes.setdefault(cause, len(causes) + 1)}]")
        elif v.kind == DIFFER:
            unexplained += 1
            marks.append("**no known cause**")
        p10, p90 = np.percentile(ratios, [10, 90])
        verdict = f"**{v.text()}**" if v.kind == DIFFER else v.text()
        ci = f"{v.ci[0]:.3f}–{v.ci[1]:.3f}" if v.ci else "—"
        table.append([g0["path"], g0["op"], g0["target"] or "—", cpus(g0), len(found),
                      fmt_ns(g_med), fmt_ns(c_med), f"{v.ratio:.3f}", ci,
                      f"{p10:.2f}–{p90:.2f}", verdict, "; ".join(marks)])
    lines += markdown.table(["path", "op", "target", "cpu→target", "runs", "gbench",
                             "criterion", "criterion / gbench", f"{round(CONFIDENCE * 100)}% CI",
                             "runs' p10–p90", "verdict", ""], table)
    lines += ["", f"{counts[AGREE]} of {len(per_key)} pairs agree within {PERCENT}%; "
                  f"{counts[DIFFER]} differ beyond noise ({counts[DIFFER] - unexplained} with a "
                  f"known cause); {counts[UNCLEAR]} too noisy to tell.", ""]
    lines += HOW[:1]
    lines += _order_lines(per_key)
    lines += _causes_lines(causes)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    """python -m results.agreement [--out FILE] RUN...: the agreement over
    the runs (run directories or results.jsonl files) in Markdown."""
    p = argparse.ArgumentParser(prog="python -m results.agreement",
                                description="Cross-harness agreement over several runs.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directory or results.jsonl")
    p.add_argument("--out", type=Path, help="also write the Markdown here")
    args = p.parse_args(argv)
    try:
        runs = [[row for _, row in runfile.load(runfile.locate(r, role="run")).lines]
                for r in args.runs]
    except runfile.RunFileError as e:
        print(e, file=sys.stderr)
        return 2
    md = report_over_runs(runs)
    sys.stdout.write(md)
    if args.out:
        args.out.write_text(md, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
