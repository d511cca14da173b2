"""Cross-harness agreement: where the C++ (gbench) and the Rust (criterion)
harnesses timed the same thing, do their medians agree?

Rows pair on (path, op, target, cpu, target_cpu) among ok latency rows.
A pair is flagged when the medians differ by more than 25% (ratio outside
[1/1.25, 1.25]), with a one-line likely cause. A pair whose counter is
frozen or has no energy unit (liveness, schema 2) is marked "frozen counter"
with the harnesses' notes below the table: both timed the route, neither
read energy. The report is Markdown (agreement.md in the run directory),
also printed by bench-all.
"""

from results import liveness
from results.table import cpus

TOLERANCE = 1.25
HARNESSES = ("gbench", "criterion")


def _key(r):
    return (r["path"], r["op"], r["target"], r["cpu"], r["target_cpu"])


def _overlap(a, b) -> bool:
    return a["ci95_low"] <= b["ci95_high"] and b["ci95_low"] <= a["ci95_high"]


def likely_cause(g: dict, c: dict) -> str:
    """A one-line guess at why two medians of the same path differ."""
    if g["stand_in"] != c["stand_in"]:
        return "the two harnesses measured different stand-ins"
    if g["cpu"] is not None and g["target_cpu"] is not None and g["cpu"] != g["target_cpu"]:
        return ("cross-CPU read: the IPI's cost depends on whether the target CPU is idle "
                "(on a VM, halted vCPUs wake slowly); samples are bimodal")
    if _overlap(g, c):
        return "the 95% intervals overlap: run-to-run noise rather than a real difference"
    if max(g["median"], c["median"]) < 50:
        return ("below ~50 ns the harness's own per-iteration overhead (timing loop, "
                "black_box, inlining) is a large share")
    return ("same path, different cost: compare how each harness reads (buffer size, "
            "open flags, allocation on the read path) and the machine's state during each")


def pairs(all_rows):
    """[(gbench row, criterion row)] for every key measured ok by both."""
    by = {h: {} for h in HARNESSES}
    for r in all_rows:
        if r["harness"] in by and r["metric"] == "latency" and r["status"] == "ok":
            by[r["harness"]].setdefault(_key(r), r)
    common_keys = sorted(set(by["gbench"]) & set(by["criterion"]),
                         key=lambda k: tuple("" if v is None else str(v) for v in k))
    return [(by["gbench"][k], by["criterion"][k]) for k in common_keys]


def _fmt(ns: float) -> str:
    return f"{ns / 1000:.3g} µs" if ns >= 1000 else f"{ns:.3g} ns"


def report(all_rows, run_id: str = "") -> str:
    """The agreement report in Markdown."""
    lines = [f"# Cross-harness agreement{f' (run {run_id})' if run_id else ''}", "",
             "Medians of the same path timed by ubench (Google Benchmark, C++) and "
             f"rbench (Criterion, Rust); flagged when they differ by more than "
             f"{round((TOLERANCE - 1) * 100)}%.", ""]
    found = pairs(all_rows)
    if not found:
        lines.append("No path was measured by both harnesses in this run.")
        return "\n".join(lines) + "\n"
    lines += ["| path | op | target | cpu→target | gbench | criterion | criterion / gbench | |",
              "|---|---|---|---|---|---|---|---|"]
    causes, dead = [], {}  # dead: {footnote text: letter}
    for g, c in found:
        ratio = c["median"] / g["median"] if g["median"] else float("inf")
        flagged = not (1 / TOLERANCE <= ratio <= TOLERANCE)
        marks = []
        if flagged:
            causes.append(likely_cause(g, c))
            marks.append(f"**differ** [{len(causes)}]")
        dead_rows = [r for r in (g, c) if liveness.is_dead(r)]
        if dead_rows:
            letters = dict.fromkeys(dead.setdefault(liveness.footnote(r), chr(ord("a") + len(dead)))
                                    for r in dead_rows)
            tags = " / ".join(dict.fromkeys(liveness.tag(r) for r in dead_rows))
            marks.append(f"**{tags} counter** [{','.join(letters)}]")
        mark = "; ".join(marks)
        lines.append(f"| {g['path']} | {g['op']} | {g['target'] or '—'} | {cpus(g)} | "
                     f"{_fmt(g['median'])} | {_fmt(c['median'])} | {ratio:.2f} | {mark} |")
    agree = len(found) - len(causes)
    lines += ["", f"{agree} of {len(found)} pairs agree within "
                  f"{round((TOLERANCE - 1) * 100)}%."]
    if causes:
        lines += ["", "Likely causes:", ""]
        lines += [f"{i}. {cause}" for i, cause in enumerate(causes, 1)]
    if dead:
        lines += ["", "Counters that yield no energy (each harness timed the real route, so "
                      "the latency stands; the counter never advanced or has no energy unit):",
                  ""]
        lines += [f"- [{letter}] {text}" for text, letter in dead.items()]
    if any(liveness.predates_probe(r) for pair in found for r in pair):
        lines += ["", f"Schema 1 rows: {liveness.PREDATES_NOTE}."]
    return "\n".join(lines) + "\n"
