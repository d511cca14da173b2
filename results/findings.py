"""The findings of a run: a few sentences computed from its rows, each with
its number and 95% CI, printed last by make bench-all and at the top of
the report's index.html (issue 32).

- the cheapest and the dearest route to a counter (latency rows read on
  the counter's own CPU; the instruction paths uinsn and kinsn aside);
- what reading from another CPU costs on each route that was timed from
  both (the IPI): the difference of medians, with a bootstrap 95% CI, the
  target CPU in its resting state where its state was set (idle; ticking
  for the eBPF rows, whose BPF program ticks there);
- what the target CPU's state (ticking, busy, against idle) changes in a
  cross-CPU read, and which state a sampler meets in each use (issue 34);
- which sampler mechanism slows a workload on its CPU least at 1 kHz, and
  whose ticks take least time from a thread on their CPU (the victim step);
- what cannot be taken as a finding: stand-ins, dead counters, rows not
  resolved, costs below 0 (baseline drift, results/meaning.py, counted),
  rows not measured, plausibility checks that failed.

A comparison is a finding only when its 95% CIs separate it and nothing
casts doubt on a row in it: a stand-in (another operation's cost), a dead
counter (the counter never advances), too few samples or a CI wider than
its target, the two harnesses differing beyond noise on it, a failed
plausibility check on it, or an emulated CPU (QEMU's timings). Otherwise
it says "not resolved" or "not a finding" and why; it is never stated as
one.
"""

import dataclasses

import numpy as np

from results import agreement, checks, liveness, meaning
from results import significance as sig
from results.machine import is_emulated
from results.rows import MEASURED
from results.schedule import TARGET_MET_BY
from results.table import scale_for_unit, sig3

# which harness's row speaks for a route, in order of preference
LATENCY_HARNESSES = ("gbench", "criterion", "kbench")
INSTRUCTION_PATHS = ("uinsn", "kinsn")  # what an instruction costs, not a route
NOT_RESOLVED = "not resolved"


@dataclasses.dataclass(frozen=True)
class Finding:
    """One sentence; `resolved` False when it says what could not be told."""
    text: str
    resolved: bool = True


def value(x: float, unit: str, scale_of: float | None = None) -> str:
    """x in `unit`, 3 significant digits, ns scaled by `scale_of` (or x)."""
    factor, label = scale_for_unit(unit, abs(x) if scale_of is None else abs(scale_of))
    return f"{sig3(x / factor)} {label}"


def with_ci(x: float, lo: float | None, hi: float | None, unit: str) -> str:
    """"2.41 µs (95% CI 2.30–2.52 µs)", or the value alone without a CI."""
    if lo is None or hi is None:
        return f"{value(x, unit)} (no CI)"
    factor, label = scale_for_unit(unit, abs(x))
    return f"{sig3(x / factor)} {label} (95% CI {sig3(lo / factor)}–{sig3(hi / factor)} {label})"


def interval(lo: float, hi: float, unit: str, scale_of: float) -> str:
    """"7.73–9.42 µs": both ends in the scale of `scale_of`."""
    factor, label = scale_for_unit(unit, abs(scale_of))
    return f"{sig3(lo / factor)}–{sig3(hi / factor)} {label}"


def row_value(r: dict) -> str:
    return with_ci(r["median"], r.get("ci95_low"), r.get("ci95_high"), r["unit"])


def route(r: dict) -> str:
    """"perf read of power/energy-pkg/"."""
    return f"{r['path']} {r['op']}" + (f" of {r['target']}" if r.get("target") else "")


def caveat(r: dict) -> str:
    """What the number is not, if anything: " [stand-in]", " [frozen counter]"."""
    said = meaning.of(r)
    words = (["stand-in"] if r.get("stand_in") else []) + (
        [liveness.DEAD_WORDS[said.verdict]] if said.dead else [])
    return f" [{', '.join(words)}]" if words else ""


def measured_ok(rows, metric: str) -> list[dict]:
    return [r for r in rows if r["metric"] == metric and r["status"] == "ok"
            and r.get("role", MEASURED) == MEASURED and r.get("median") is not None]


def comparable(r: dict) -> bool:
    """Enough samples for a CI, within its experiment's target and not a
    cost below 0 (baseline drift); a CI holding 0 still ranks."""
    said = meaning.of(r)
    return not said.too_few and said.unresolved_note is None and not said.drift


def separated(a: dict, b: dict) -> bool:
    """a's 95% CI lies wholly below b's, and both can be compared."""
    return (comparable(a) and comparable(b) and None not in (a.get("ci95_high"), b.get("ci95_low"))
            and a["ci95_high"] < b["ci95_low"])


def other_harness_differs(r: dict, rows) -> bool:
    """gbench and criterion timed r's route and placement and differ beyond noise."""
    key = agreement._key(r)
    return any(key == agreement._key(g) and r in (g, c) and agreement.judge(g, c).kind
               == agreement.DIFFER for g, c in agreement.pairs(rows))


def doubts(found: list[dict], rows, failed_checks=()) -> list[str]:
    """Why a comparison of the rows `found` is not a finding, whatever its CIs."""
    out = []
    for r in found:
        said, name = meaning.of(r), route(r) if r["metric"] == "latency" else r["op"]
        if r.get("stand_in"):
            out.append(f"{name} is a stand-in")
        if said.dead:
            out.append(f"{name} reads a {liveness.DEAD_WORDS[said.verdict]}")
        if r["metric"] == "latency" and other_harness_differs(r, rows):
            out.append(f"gbench and criterion differ on {name}")
        if (r["path"], r["op"]) in failed_checks:
            out.append(f"a plausibility check failed on {r['path']} {r['op']} (checks.txt)")
    if any(is_emulated(r.get("machine") or {}) for r in found):
        out.append("the CPU is emulated (QEMU's timings)")
    return list(dict.fromkeys(out))


def counter_routes(rows) -> list[dict]:
    """One row per route to a counter read on its own CPU (the first
    harness of LATENCY_HARNESSES that timed it), cheapest first."""
    by_route: dict[tuple, dict] = {}
    for r in measured_ok(rows, "latency"):
        local = r.get("target_cpu") is None or r.get("cpu") in (None, r["target_cpu"])
        if (r["path"] not in INSTRUCTION_PATHS and r.get("target") and local
                and r["harness"] in LATENCY_HARNESSES):
            key = (r["path"], r["op"], r["target"])
            best = by_route.get(key)
            rank = LATENCY_HARNESSES.index
            if best is None or rank(r["harness"]) < rank(best["harness"]):
                by_route[key] = r
    return sorted(by_route.values(), key=lambda r: r["median"])


def compared(claim: str, low: dict, high: dict, shown: str, rows) -> Finding:
    """`claim` ("The cheapest route to a counter here is X") with `shown`,
    a finding when low's CI lies below high's and nothing casts doubt."""
    if not separated(low, high):
        return Finding(f"{claim}: {NOT_RESOLVED}, {shown} (the 95% CIs overlap, or one has "
                       f"too few samples, misses its target or is {meaning.DRIFT}).",
                       resolved=False)
    doubt = doubts([low, high], rows)
    if doubt:
        return Finding(f"{claim}: {shown}; not a finding: {'; '.join(doubt)}.", resolved=False)
    return Finding(f"{claim}: {shown}.")


def extremes(rows) -> list[Finding]:
    ordered = counter_routes(rows)
    if len(ordered) < 2:
        return []
    ends = [("cheapest", ordered[0], ordered[1])]
    if len(ordered) > 2:  # with two routes the dearest is the same comparison
        ends.append(("dearest", ordered[-1], ordered[-2]))
    out = []
    for word, first, second in ends:
        low, high = (first, second) if word == "cheapest" else (second, first)
        shown = (f"{route(first)}{caveat(first)} at {row_value(first)} per read "
                 f"({first['harness']}), against {route(second)}{caveat(second)} at "
                 f"{row_value(second)} ({second['harness']})")
        out.append(compared(f"The {word} route to a counter timed here", low, high, shown,
                            rows))
    return out


def _median_difference(b, a, axis=-1):
    return np.median(b, axis=axis) - np.median(a, axis=axis)


def difference_ci(a, b) -> tuple[float, float] | None:
    """95% bootstrap CI of median(b) − median(a); None with fewer than 2
    samples on a side."""
    return sig.bootstrap_ci(_median_difference, b, a)


def _difference(claim: str, a: dict, b: dict, harness: str, rows, failed,
                than: str = "") -> Finding:
    """What `b` costs more than `a` (the difference of medians, its bootstrap
    95% CI): a finding only where the CI excludes 0 and no row is in doubt."""
    diff, unit = b["median"] - a["median"], a["unit"]
    ci = difference_ci(a.get("samples") or [], b.get("samples") or [])
    shown = (f"{value(diff, unit)} ({harness}: {value(b['median'], unit)} against "
             f"{value(a['median'], unit)}"
             + (f"; 95% CI of the difference {interval(*ci, unit, diff)})" if ci else ")"))
    if ci is None or not (comparable(a) and comparable(b)):
        return Finding(f"{claim}: {NOT_RESOLVED} (too few samples for a CI), {shown}.",
                       resolved=False)
    if ci[0] <= 0 <= ci[1]:
        return Finding(f"{claim}: {NOT_RESOLVED} (the CI of the difference holds 0), {shown}.",
                       resolved=False)
    more = "more" if diff > 0 else "less"
    costs = f"{claim} costs {value(abs(diff), unit)} {more}{than} {shown[shown.index('('):]}"
    if doubt := doubts([a, b], rows, failed):
        return Finding(f"{costs}; not a finding: {'; '.join(doubt)}.", resolved=False)
    return Finding(f"{costs}.")


def _placed(rows) -> dict[tuple, dict[tuple, dict]]:
    """The latency rows of a counter's CPU, by route: {(harness, path, op,
    target, target_cpu): {(read from another CPU, target state): row}}."""
    placed: dict[tuple, dict[tuple, dict]] = {}
    for r in measured_ok(rows, "latency"):
        if r["harness"] in LATENCY_HARNESSES and None not in (r.get("cpu"), r.get("target_cpu")):
            key = (r["harness"], r["path"], r["op"], r.get("target"), r["target_cpu"])
            where = (r["cpu"] != r["target_cpu"], r.get("target_state"))
            placed.setdefault(key, {}).setdefault(where, r)
    return dict(sorted(placed.items(), key=lambda kv: LATENCY_HARNESSES.index(kv[0][0])))


def other_cpu_costs(rows) -> list[Finding]:
    """Per route timed on the counter's CPU and from another: the
    difference, the target CPU in its resting state where its state was
    set (issue 34: idle, or ticking where it never idles)."""
    failed = {(c.path, c.op) for c in checks.run_checks(rows) if c.ok is False and c.path}
    out, said = [], set()
    for (harness, *what), by in _placed(rows).items():
        same = by.get((False, None))
        other = by.get((True, None)) or by.get((True, "idle")) or by.get((True, "ticking"))
        if same is None or other is None or tuple(what) in said:
            continue
        said.add(tuple(what))
        state = f" (its CPU {other['target_state']})" if other.get("target_state") else ""
        claim = f"Reading {route(same)}{caveat(same)} from another CPU than the counter's{state}"
        out.append(_difference(claim, same, other, harness, rows, failed,
                               than=" than from its own"))
    return out


def target_state_costs(rows) -> list[Finding]:
    """Per cross-CPU route timed in several target states: busy and ticking
    against idle (against ticking where the target is never idle: the eBPF
    rows, whose BPF program ticks there), and which state a sampler meets in
    each use. A route that needs no IPI says whether the state changed it
    anyway."""
    failed = {(c.path, c.op) for c in checks.run_checks(rows) if c.ok is False and c.path}
    out, said = [], set()
    for (harness, *what), by in _placed(rows).items():
        base = by.get((True, "idle")) or by.get((True, "ticking"))
        if base is None or tuple(what) in said:
            continue
        said.add(tuple(what))
        ipi = "the read runs there, through an IPI" if base.get("ipi") else \
            "the read needs no IPI there, so the state should change nothing"
        for state in ("ticking", "busy"):
            if state != base["target_state"] and (other := by.get((True, state))) is not None:
                claim = (f"Reading {route(base)}{caveat(base)} from another CPU while the "
                         f"counter's CPU is {state} rather than {base['target_state']} ({ipi}; "
                         f"{state} is what {TARGET_MET_BY[state]} meets)")
                out.append(_difference(claim, base, other, harness, rows, failed))
    return out


def _least_costly_sampler(rows, claim: str, metric: str, placement: str, per: str,
                          chosen=lambda r: True) -> list[Finding]:
    """The mechanism whose `metric` rows in `placement` (chosen) are least,
    against the next; those not measured are named."""
    ranked = sorted((r for r in measured_ok(rows, metric)
                     if r["path"] == "sampler" and chosen(r)
                     and (r.get("parameters") or {}).get("placement") == placement),
                    key=lambda r: r["median"])
    if len(ranked) < 2:
        return []
    best, next_ = ranked[:2]
    missing = sorted({r["op"] for r in rows if r["metric"] == metric
                      and r["path"] == "sampler" and r["status"] != "ok"})
    shown = (f"{best['op']}{caveat(best)} {row_value(best)} against {next_['op']}"
             f"{caveat(next_)} {row_value(next_)} {per}"
             + (f" (not measured: {', '.join(missing)})" if missing else ""))
    return [compared(claim, best, next_, shown, rows)]


def cheapest_sampler(rows) -> list[Finding]:
    """The mechanism whose 1 kHz sampler slows a workload on its CPU least
    (wall time), against the next."""
    return _least_costly_sampler(
        rows, "The sampler mechanism that slows a workload on its CPU least at 1 kHz",
        "overhead_pct", "same CPU", "of wall time",
        lambda r: str(r.get("target", "")).endswith("wall time"))


def least_stolen_sampler(rows) -> list[Finding]:
    """The mechanism whose 1 kHz ticks take least time from a thread on the
    CPU they run on (the victim step): the one measure of CPU per tick that
    also sees the work a kernel does in a timer interrupt, which no
    thread's schedstat counts (perf-ring's)."""
    return _least_costly_sampler(
        rows, "The sampler mechanism whose 1 kHz ticks take least time from a thread on "
        "their CPU", "stolen_ns_per_read", "victim-is-target", "per tick")


def what(r: dict) -> str:
    """A row's route or sampler mechanism: "msr-dev pread", "sampler msr"."""
    return f"{r['path']} {r['op']}" if r.get("op") not in (None, "*") else r["path"]


def listed(names) -> str:
    names = sorted(set(names))
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")


def caveats(rows) -> list[Finding]:
    """What is not a finding, counted."""
    ok = [r for r in rows if r["status"] == "ok"]
    stand_ins = [what(r) for r in ok if r.get("stand_in")]
    dead = [r["target"].split(" @ ")[0] for r in ok if meaning.of(r).dead and r.get("target")]
    unresolved = [r for r in ok if meaning.of(r).not_resolved or meaning.of(r).unresolved_note]
    drift = [r for r in ok if meaning.of(r).drift]
    not_ok = [r for r in rows if r["status"] != "ok"]
    out = []
    if stand_ins:
        out.append(Finding(f"Stand-ins, not the real counter (their figures are the "
                           f"substitute's route): {listed(stand_ins)}.", resolved=False))
    if dead:
        out.append(Finding(f"Dead counters (a route's cost, no energy): {listed(dead)}.",
                           resolved=False))
    if unresolved:
        out.append(Finding(f"{len(unresolved)} of {len(ok)} measured rows are {NOT_RESOLVED} "
                           "(within noise, baseline drift, too few samples, or a CI wider than "
                           "its target): their tables say which.", resolved=False))
    if drift:
        names = listed(f"{r['harness']} {what(r)} {r['metric']}" for r in drift)
        out.append(Finding(f"{len(drift)} rows are {meaning.DRIFT}: a cost that cannot be "
                           f"negative, whose 95% CI lies below 0 (the baseline moved while it "
                           f"was measured): {names}.", resolved=False))
    if not_ok:
        names = listed(f"{r['harness']} {what(r)} {r['metric']}" for r in not_ok)
        out.append(Finding(f"{len(not_ok)} rows not measured (unavailable or error, each with "
                           f"its reason): {names}.", resolved=False))
    unexpected = [c for c in checks.run_checks(rows) if c.ok is False]
    if unexpected:
        out.append(Finding("Plausibility checks that failed: " + "; ".join(
            f"{c.name}: {c.figure} (expected {c.expected})" for c in unexpected) + ".",
            resolved=False))
    return out


def of(rows) -> list[Finding]:
    """The findings of a run's rows, in the order they are printed."""
    return [*extremes(rows), *other_cpu_costs(rows), *target_state_costs(rows),
            *cheapest_sampler(rows), *least_stolen_sampler(rows), *caveats(rows)]


def format_findings(found: list[Finding]) -> str:
    lines = ["Findings (each with its 95% CI; \"not resolved\" is not a finding):"]
    lines += [f"  - {f.text}" for f in found] or ["  (none: no row of this run compares)"]
    return "\n".join(lines)
