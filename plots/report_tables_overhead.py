"""The report's overhead tables, reference-overhead (the published tool
overheads and each machine's sampler overhead) and reference-design (a
mechanism beside the published tool whose design it follows: the
registry's x-design); plots/README.md says what each holds. A slowdown
whose 95% CI contains 0 says "not significant" (results/meaning.py decides
it). Cells, captions and footnotes are those of the other tables
(report_tables.py).
"""

from results import meaning, registry
from results import table as text_table
from results.rows import MEASURED
from results.table import DASH

from plots import labels, pairing
from plots.report_tables import (MEDIAN_NOTE, above_null_cell, machine_caption, median_ci,
                                 number, row_notes)
from plots.runs import Run, source_label
from plots.tables import Notes, Table, with_mark

OVERHEAD_CSV = ["kind", "machine", "online_cpus", "source", "tool_or_mechanism", "workload",
                "placement", "cpu", "time", "overhead_pct", "ci95_low", "ci95_high", "n",
                "ci_contains_zero", "significance", "resolved",
                "resolution_note", "sampler_cpu_us_above_null", "above_null_ci95_low",
                "above_null_ci95_high", "above_null_within_noise", "status", "stand_in", "reason",
                "what"]
PUBLISHED_OVERHEAD_WHAT = "run-time slowdown of the measured NAS benchmark (%)"
LOCAL_OVERHEAD_WHAT = "run-time slowdown of the stress-ng workload under the sampler (%)"
NOT_SIGNIFICANT = "not significant"
ZERO_NOTE = ("not significant: its 95% CI (of the median, from order statistics) contains 0, "
             "so at this n no slowdown can be told apart from none (nor a speed-up); "
             "overhead-tests asks with the Wilcoxon signed-rank test, which can disagree")


def overhead_groups(rows: list[dict]) -> dict[tuple, dict[str, dict]]:
    """{(mechanism, placement, CPU): {"wall time": row, "CPU time": row}} of
    the overhead rows among `rows`, in table order."""
    groups: dict[tuple, dict[str, dict]] = {}
    for r in sorted((r for r in rows if r["metric"] == "overhead_pct"), key=text_table.sort_key):
        key = (r["op"], labels.overhead_placement(r), r["cpu"])
        groups.setdefault(key, {})[labels.overhead_measure(r)] = r
    return groups


def overhead_cells(by: dict[str, dict], notes: Notes) -> list[str]:
    """Wall time, CPU time (each "not significant" where its CI contains 0:
    "1.2% (−25–55%), not significant [^3]"; "baseline drift, not a saving"
    where it lies below 0) and the pairs of one group."""
    def cell(r):
        said = meaning.of(r)
        if said.within_noise:
            return with_mark(f"{median_ci(r)}, {NOT_SIGNIFICANT}", notes.mark(ZERO_NOTE))
        if said.drift:
            return with_mark(f"{median_ci(r)}, {meaning.DRIFT}", notes.mark(meaning.DRIFT_NOTE))
        return median_ci(r)
    cells = [cell(r) for r in (by.get("wall time"), by.get("CPU time"))]
    first = by.get("wall time") or by.get("CPU time")
    return cells + [str(first["n"]) if first["status"] == "ok" else DASH]


def overhead_record(r: dict, measure: str, above: dict | None) -> dict:
    """The CSV fields of an overhead row and of the sampler's CPU per tick
    above its null loop beside it (local and design tables)."""
    said = meaning.of(r)
    return {"workload": r.get("target"), "placement": labels.overhead_placement(r),
            "cpu": r.get("cpu"), "time": measure, "overhead_pct": number(r, "median"),
            "ci95_low": number(r, "ci95_low"), "ci95_high": number(r, "ci95_high"),
            "n": r["n"], "ci_contains_zero": said.contains_zero,
            "significance": (NOT_SIGNIFICANT if said.within_noise
                             else meaning.DRIFT if said.drift else None),
            "resolved": (r.get("resolution") or {}).get("resolved"),
            "resolution_note": said.unresolved_note, "status": r["status"],
            "stand_in": r.get("stand_in"), "liveness": said.verdict, "reason": r.get("reason"),
            **above_null_record(above)}


def above_null_record(above: dict | None) -> dict:
    return {"sampler_cpu_us_above_null": number(above, "median"),
            "above_null_ci95_low": number(above, "ci95_low"),
            "above_null_ci95_high": number(above, "ci95_high"),
            "above_null_within_noise": meaning.of(above).within_noise if above else None}


def local_overhead_table(run: Run) -> Table | None:
    """This machine's overhead experiment: per mechanism and placement, the
    workload's wall-time and CPU-time slowdown with their 95% CIs, the pairs
    it took, whether the CI reached its target, and the sampler's own CPU per
    tick above its null loop (from the self-report)."""
    rows = [r for r in run.rows if r["metric"] == "overhead_pct"]
    if not rows:
        return None
    notes, body, records = Notes(), [], []
    for (mech, where, cpu), by in overhead_groups(rows).items():
        extra = labels.above_null_row(run.rows, mech)
        body.append([mech, DASH if where is None else f"{where} (CPU {cpu})",
                     *overhead_cells(by, notes), above_null_cell(extra, notes),
                     row_notes(by.get("wall time") or by.get("CPU time"), notes)])
        records += [{"kind": "local", "machine": run.label, "source": None,
                     "online_cpus": run.machine.get("online_cpus"), "tool_or_mechanism": mech,
                     **overhead_record(r, measure, extra), "what": LOCAL_OVERHEAD_WHAT}
                    for measure, r in by.items()]
    workload = next((r["target"].rsplit(":", 1)[0] for r in rows if r.get("parameters")), None)
    return Table(
        name="reference-overhead", key=f"overhead-{labels.slug(run.label)}",
        title=f"This machine: sampler overhead, {run.label}",
        caption=(f"{machine_caption(run)}. {LOCAL_OVERHEAD_WHAT} at 1 kHz per mechanism"
                 + (f" ({workload}), the sampler pinned to the workload's CPU or to another"
                    if workload else "")
                 + ". Wall time is what a user waits; CPU time is what the workload itself "
                   "spent (a wall-time slowdown without a CPU-time one is the sampler taking "
                   "the workload's CPU). \"above null\" is the sampler's own CPU per tick "
                   "above its bare timer loop, from its self-report (\"within noise\" where its "
                   "CI holds 0). A slowdown whose 95% CI "
                   "contains 0 says \"not significant\" (footnoted); one whose CI excludes 0 "
                   "is not labelled (the overhead-tests table tests each mechanism against 0 "
                   "with the Wilcoxon signed-rank test, a different question that can give "
                   "the other answer near the edge). A row whose 95% CI is "
                   "wider than its target says \"not resolved\" and is not a finding. "
                 + f"{MEDIAN_NOTE}."),
        columns=["mechanism", "sampler on", "wall time (95% CI)", "CPU time (95% CI)", "pairs",
                 "CPU/tick above null", "note"],
        align="llrrrrl", body=body, footnotes=notes.list(), csv_columns=OVERHEAD_CSV,
        records=records)


def overhead_tables(runs: list[Run], refs: list[dict]) -> list[Table]:
    """The published tool overheads (a tool x benchmark matrix per source)
    and each machine's sampler overhead per mechanism."""
    tables = []
    by_source: dict[str, list[dict]] = {}
    for r in refs:
        if r["metric"] == "overhead_pct":
            by_source.setdefault(source_label(r), []).append(r)
    designs = {registry.mechanism(m).design: m for m in registry.MECHANISMS}
    for label, rows in by_source.items():
        tools = list(dict.fromkeys(r["op"] for r in rows))
        benches = list(dict.fromkeys(r.get("target") or "" for r in rows))
        cell = {(r["op"], r.get("target") or ""): r for r in rows}
        body, records = [], []
        for tool in tools:
            # a tool whose design a mechanism follows points to the table beside it
            line = [f"{tool} (design of {designs[tool]}, compared in reference-design)"
                    if tool in designs else tool]
            for bench in benches:
                r = cell.get((tool, bench))
                line.append(DASH if r is None or r["median"] is None else f"{r['median']:.2f}")
                if r is not None:
                    records.append({"kind": "published", "machine": labels.machine_name(r["machine"]),
                                    "source": label, "tool_or_mechanism": tool, "workload": bench,
                                    "overhead_pct": r["median"], "n": r["n"] or None,
                                    "status": r["status"], "what": PUBLISHED_OVERHEAD_WHAT})
            body.append(line)
        tables.append(Table(
            name="reference-overhead", key=f"reference-overhead-{labels.slug(label)}",
            title=f"Published tool overhead at 1 kHz: {label}",
            caption=(f"{pairing.source_note(label) or ''} Values in %, as printed: the "
                     f"slowdown of each NAS benchmark under each tool. The local table below "
                     f"measures the same kind of slowdown on a stress-ng workload under "
                     f"raplbench-sample, so the workloads differ.").strip(),
            columns=["tool"] + [f"NAS {b}" for b in benches], align="l" + "r" * len(benches),
            body=body, footnotes=[], csv_columns=OVERHEAD_CSV, records=records))
    tables += [t for t in (local_overhead_table(run) for run in runs) if t is not None]
    return tables + [t for t in (design_table(runs, refs, m) for m in registry.MECHANISMS)
                     if t is not None]


# ---- a mechanism beside the published tool whose design it follows -----------------------

DESIGN_CSV = ["kind", "machine", "hypervisor", "online_cpus", "source", "sampler", "workload",
              "placement", "cpu", "time", "overhead_pct", "ci95_low", "ci95_high", "n",
              "ci_contains_zero", "significance", "resolved", "resolution_note",
              "sampler_cpu_us_above_null", "above_null_ci95_low", "above_null_ci95_high",
              "above_null_within_noise", "status", "stand_in", "liveness", "reason", "what"]
NOT_PUBLISHED = "not published"
NO_MECHANISM_NOTE = ("this run has no row of the {mechanism} mechanism (run before it "
                     "existed, or without its steps)")
NO_OVERHEAD_NOTE = "the overhead experiment has no row of {mechanism} in this run"
PUBLISHED_NOTE = ("published, not measured here: {source}, as printed, on the paper's "
                  "machine and NAS benchmarks, not this report's")
PUBLISHED_NO_CI = ("the paper prints a median of 15 runs with the tool over a median of 15 "
                   "without, and no confidence interval: whether it differs from 0 cannot be "
                   "told from the table")


def _local_design_lines(run: Run, mechanism: str, notes: Notes):
    """(body lines, records) of `mechanism` in `run`: one line per placement of
    its overhead rows; one line saying why there is none otherwise."""
    mine = [r for r in run.rows if r["path"] == "sampler" and r["op"] == mechanism]
    rate = next((r for r in mine if r["metric"] == "rate_hz" and r["role"] == MEASURED), None)
    above = labels.above_null_row(run.rows, mechanism)
    source = f"measured here: {run.label}"
    name = f"{mechanism} (raplbench-sample)"
    groups = overhead_groups(mine)
    body, records = [], []
    base = {"kind": "measured", "machine": run.label, "hypervisor": run.machine.get("hypervisor"),
            "online_cpus": run.machine.get("online_cpus"),
            "source": None, "sampler": mechanism, "what": LOCAL_OVERHEAD_WHAT}
    if not groups:
        why = (NO_MECHANISM_NOTE if not mine else NO_OVERHEAD_NOTE).format(mechanism=mechanism)
        note = (row_notes(rate, notes) if rate is not None and rate["status"] != "ok"
                else with_mark("not measured", notes.mark(why)))
        body.append([source, name, DASH, DASH, DASH, DASH, DASH,
                     above_null_cell(above, notes), note])
        records.append({**base, **above_null_record(above),
                        "status": rate["status"] if rate else None,
                        "reason": rate.get("reason") if rate and rate["status"] != "ok" else why})
        return body, records
    for (_, where, cpu), by in groups.items():
        first = by.get("wall time") or by.get("CPU time")
        words = [row_notes(first, notes)]
        if rate is not None and rate["status"] != "ok" and rate.get("reason") != first.get("reason"):
            words.append("self-report: " + row_notes(rate, notes))
        target = first.get("target") or ""
        # "<workload>: wall time"; rows from before the placements name what was sampled
        workload = target.rsplit(": ", 1)[0] if where is not None else DASH
        body.append([source, name, workload, DASH if where is None else f"{where} (CPU {cpu})",
                     *overhead_cells(by, notes), above_null_cell(above, notes),
                     "; ".join(w for w in words if w)])
        records += [{**base, **overhead_record(r, measure, above)} for measure, r in by.items()]
    return body, records


def design_table(runs: list[Run], refs: list[dict], mechanism: str) -> Table | None:
    """`mechanism` (its overhead rows in every run that has sampler rows)
    beside the published overhead rows of the tool whose design it follows
    (the registry's x-design), one line each, labelled measured here or
    published. None when the mechanism follows no published design, or
    neither side has a row."""
    tool = registry.mechanism(mechanism).design
    if tool is None:
        return None
    published = [r for r in refs if r["metric"] == "overhead_pct" and r["op"] == tool]
    local_runs = [run for run in runs if any(r["path"] == "sampler" for r in run.rows)]
    if not published and not local_runs:
        return None
    notes, body, records = Notes(), [], []
    for run in local_runs:
        lines, recs = _local_design_lines(run, mechanism, notes)
        body += lines
        records += recs
    for ref in published:
        label = source_label(ref)
        machine = labels.machine_name(ref["machine"])
        source_mark = notes.mark(PUBLISHED_NOTE.format(source=label),
                                 pairing.source_note(label) or ref["source"])
        body.append([f"published: {label}", tool, f"NAS {ref.get('target')}", "not stated",
                     with_mark(f"{ref['median']:.2f} %", notes.mark(PUBLISHED_NO_CI)),
                     NOT_PUBLISHED, str(ref["n"]) if ref.get("n") else DASH, NOT_PUBLISHED,
                     with_mark("published", source_mark)])
        records.append({"kind": "published", "machine": machine, "hypervisor": None,
                        "source": ref["source"], "sampler": tool,
                        "workload": f"NAS {ref.get('target')}", "time": "run time",
                        "overhead_pct": ref["median"], "n": ref["n"] or None,
                        "ci_contains_zero": None, "status": ref["status"],
                        "what": PUBLISHED_OVERHEAD_WHAT})
    title = registry.mechanism(mechanism).title
    caption = (f"The {mechanism} mechanism ({title}) follows the design of {tool}; each line "
               f"says where it comes from. Measured here: {LOCAL_OVERHEAD_WHAT} at 1 kHz, "
               f"the sampler pinned to the workload's CPU or another (for an in-kernel "
               f"mechanism only its drain thread: its timer runs where the kernel runs it); "
               f"the median of its pairs with a distribution-free 95% CI of the median; "
               f"\"above null\" is its own CPU per tick above its bare timer, from its "
               f"self-report (\"within noise\" where its CI holds 0). Published: "
               f"{PUBLISHED_OVERHEAD_WHAT}, as printed: "
               f"another machine, other workloads, no confidence interval; it shows what the "
               f"design cost there, not a figure measured here. A CI that contains 0 cannot "
               f"tell a slowdown from none and says \"{NOT_SIGNIFICANT}\" in its cell; a row "
               f"that is not resolved is not a finding; a "
               f"mechanism that could not run here says why.")
    return Table(
        name="reference-design", key=f"design-{labels.slug(mechanism)}-{labels.slug(tool)}",
        title=f"The {mechanism} mechanism beside {tool}, the published design it follows",
        caption=caption,
        columns=["source", "sampler", "workload", "sampler on", "wall time (95% CI)",
                 "CPU time (95% CI)", "n", "CPU/tick above null", "note"],
        align="lllllrrrl", body=body, footnotes=notes.list(), csv_columns=DESIGN_CSV,
        records=records)
