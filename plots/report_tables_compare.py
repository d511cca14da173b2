"""The report's tables that compare: reference (the papers' latency
figures beside each machine's own) and machines (one table keyed by
machine, ratios to a reference machine); the overhead tables are in
report_tables_overhead.py. Cells, captions and footnotes are those of the
other tables (report_tables.py).
"""

import math

from results import liveness
from results import table as text_table
from results.table import DASH, median_and_interval, sig3

from plots import labels, pairing
from plots.report_tables import (MEDIAN_NOTE, USER_SPACE_NOTE, VALUES, cell_marks,
                                 machine_caption, median_ci, number, ratio_cell, row_fields)
from plots.runs import Run, source_label
from plots.tables import Notes, Table, with_mark

# ---- published figures beside the local ones ---------------------------------------------

REFERENCE_CSV = ["source", "published_path", "published_op", "published_target",
                 "published_median_ns", "published_ci95_low_ns", "published_ci95_high_ns",
                 "published_n", "machine", "pairing", "local_harness", "local_path", "local_op",
                 "local_target", "local_cpu", "local_target_cpu", "local_online_cpus",
                 "local_status",
                 "local_median_ns", "local_ci95_low_ns", "local_ci95_high_ns", "local_n",
                 "local_stand_in", "local_liveness", "local_reason", "ratio_local_to_published",
                 "no_ratio_because", "source_text"]


def distinct(lo: float, hi: float) -> tuple[str, str]:
    """lo and hi with 3 significant digits, or more (up to 6, the same
    number of decimals for both) until they differ: a published
    0.4990–0.4993 µs stays 499.0–499.3 ns."""
    if sig3(lo) != sig3(hi) or lo == hi:
        return sig3(lo), sig3(hi)
    magnitude = math.floor(math.log10(max(abs(lo), abs(hi))))
    for digits in range(4, 7):
        decimals = max(0, digits - 1 - magnitude)
        a, b = f"{lo:.{decimals}f}", f"{hi:.{decimals}f}"
        if a != b:
            break
    return a, b


def published_cell(ref: dict) -> str:
    """"557 ns (median of 15)", "1.97–2.11 µs (95% CI)"."""
    value = pairing.published_value(ref)
    n = f" of {ref['n']}" if ref.get("n") else ""
    if ref.get("median") is not None or ref.get("mean") is not None:
        cell, _ = median_and_interval({**ref, "median": value, "ci95_low": None,
                                       "ci95_high": None})
        return f"{cell} ({'median' if ref.get('median') is not None else 'mean'}{n})"
    factor, unit = text_table.scale_for_unit(ref["unit"], value)
    lo, hi = distinct(ref["ci95_low"] / factor, ref["ci95_high"] / factor)
    return f"{lo}–{hi} {unit} (95% CI)"


def _figure_label(row: dict) -> str:
    op, target = row["op"], row.get("target")
    if op.startswith("rdmsr:"):
        name = labels.msr_name(target)
        return f"{row['path']} {op}" + (f" ({name})" if name else "")
    return " ".join(x for x in (row["path"], op, target) if x)


def published_latency(refs: list[dict]) -> list[dict]:
    """The published latency rows in the report's order (pairing.published_order)."""
    order = pairing.published_order(refs)
    refs = [r for r in refs if r["metric"] == "latency"]
    return sorted(refs, key=lambda r: (order.index((r["path"], r["op"])),
                                       pairing.published_value(r), source_label(r)))


def reference_table(runs: list[Run], refs: list[dict]) -> Table:
    notes, body, records = Notes(), [], []
    columns = ["published figure", "published", "source"]
    for run in runs:
        columns += [run.label, "÷ published"]
    for ref in published_latency(refs):
        label = source_label(ref)
        row = [_figure_label(ref), published_cell(ref),
               with_mark(label, notes.mark(pairing.source_note(label) or ref["source"]))]
        published = pairing.published_value(ref)
        for run in runs:
            local, how = pairing.best_local(ref, run.rows)
            extra = []
            if how == "user-space":
                extra.append(USER_SPACE_NOTE)
            if local is None:
                extra.append(f"not measured on {run.label}")
            elif local["status"] == "ok" and labels.placement(local) == labels.OTHER_CPU:
                extra.append("only measured from another CPU on this machine")
            why = pairing.unlike(ref, local, how)
            ratio = (with_mark(DASH, notes.mark(f"no ratio: {why}")) if why
                     else ratio_cell(number(local, "median"), published))
            row += [with_mark(median_ci(local), cell_marks(local, notes, *extra)), ratio]
            records.append({
                "source": label, "published_path": ref["path"], "published_op": ref["op"],
                "published_target": ref.get("target"), "published_n": ref["n"] or None,
                **{f"published_{k}_ns": ref.get(k) for k in VALUES},
                "machine": run.label, "pairing": how if local is not None else "none",
                **{f"local_{k}": v for k, v in row_fields(local).items()},
                "local_online_cpus": run.machine.get("online_cpus"),
                "ratio_local_to_published": (number(local, "median") / published
                                             if number(local, "median") and published
                                             and not why else None),
                "no_ratio_because": why,
                "source_text": ref["source"]})
        body.append(row)
    caption = ("Published per-operation figures (results/reference/*.jsonl) beside this "
               "report's machines: the local median with its 95% CI for the same path and "
               "operation (same CPU preferred, the real counter before a stand-in), and the "
               "ratio local ÷ published where the two are alike: a stand-in against the real "
               "counter, a user-space instruction against a kernel loop, or a virtual machine "
               "against bare metal get no ratio, and the footnote says which. Latencies in ns "
               "per operation; the papers' units are converted as the footnotes say.")
    return Table(name="reference", key="reference", title="Published figures beside this report",
                 caption=caption, columns=columns,
                 align="lrl" + "rr" * len(runs), body=body, footnotes=notes.list(),
                 csv_columns=REFERENCE_CSV, records=records)


# ---- machines side by side ----------------------------------------------------------------

MACHINES_CSV = ["quantity", "path", "op", "what", "placement", "harness", "machine",
                "cpu_vendor", "cpu_family", "cpu_model", "cpu_stepping", "online_cpus",
                "packages", "hypervisor", "reference_machine", "target", "cpu", "target_cpu",
                "status", "median_ns",
                "ci95_low_ns", "ci95_high_ns", "n", "stand_in", "liveness", "reason",
                "ratio_to_reference"]


def machine_quantities(runs: list[Run]) -> tuple[list[tuple], list[dict]]:
    """The latency quantities of several runs, keyed by route
    (pairing.quantity: path, op, placement, harness; an rdmsr by its MSR's
    name): (keys in display order, one {key: row} per run, the row that
    stands for the route on that machine, chosen by pairing.route_rank).

    Display order: the registry's path order; within a path, operations by
    the fastest median any machine has for them (a ladder), then same CPU,
    other CPU, not per-CPU, then the harness, so a route's placements and
    harnesses stay together whichever machines measured them."""
    per_run = [pairing.route_rows(run.rows) for run in runs]

    def fastest(key):
        medians = [r["median"] for found in per_run for k, r in found.items()
                   if k[:3] == key[:3] and r["status"] == "ok"]
        return min(medians) if medians else float("inf")

    keys = sorted({k for found in per_run for k in found},
                  key=lambda k: (pairing.sort_key(k)[0], fastest(k), pairing.sort_key(k)))
    return keys, per_run


def missing_reason(run: Run, path: str) -> str:
    """Why a quantity has no row on a machine: its path's harness-level row, if any."""
    for r in run.rows:
        if r["path"] == path and r["op"] == "*" and r["status"] != "ok":
            return f"{r['status']} on {run.label}: {r['reason']}"
    return f"not measured on {run.label}"


def machines_table(runs: list[Run], reference: int = 0) -> Table:
    """A line per route, a column per machine (its median and CI, the target
    it read with "stand-in" or "frozen" and a footnote) and its n, then each
    machine's ratio to the reference machine."""
    keys, per_run = machine_quantities(runs)
    ref_run = runs[reference]
    harnesses = {k[4] for k in keys}
    notes, body, records = Notes(), [], []
    columns = ["quantity"]
    for i, r in enumerate(runs):
        columns += [r.label + (" (reference)" if i == reference else ""), "n"]
    columns += [f"{r.label} ÷ reference" for i, r in enumerate(runs) if i != reference]
    for key in keys:
        ref_row = per_run[reference].get(key)
        rows = [found.get(key) for found in per_run]
        line = [pairing.quantity_label(key, with_harness=len(harnesses) > 1)]
        ratios = []
        for i, (run, row) in enumerate(zip(runs, rows)):
            extra = [] if row is not None else [missing_reason(run, key[0])]
            read = pairing.read_mark(row)  # what this machine read: "msr/tsc (stand-in)"
            cell = f"{median_ci(row)} · {read}" if read and number(row, "median") is not None \
                else median_ci(row)
            line += [with_mark(cell, cell_marks(row, notes, *extra)),
                     str(row["n"]) if row is not None and row["status"] == "ok" else DASH]
            median, ref_median = number(row, "median"), number(ref_row, "median")
            if i != reference:
                ratios.append(ratio_cell(median, ref_median))
            records.append({  # the route's path, op and harness over the row's
                **row_fields(row), "quantity": pairing.quantity_label(key), "path": key[0],
                "op": key[1], "what": key[2], "placement": key[3], "harness": key[4], "machine": run.label,
                **labels.machine_fields(run.machine), "reference_machine": ref_run.label,
                "ratio_to_reference": median / ref_median
                if median is not None and ref_median else None})
        body.append(line + ratios)
    caption = (f"Latency per operation, machines side by side. "
               + " ".join(f"({i}) {r.label}: {machine_caption(r)}."
                          for i, r in enumerate(runs, 1))
               + f" {MEDIAN_NOTE}; n: the repetitions behind each median. Ratios are medians "
                 f"divided by the reference machine's ({ref_run.label}). A line is a route "
                 f"(path, operation, placement, harness), whatever each machine read through "
                 f"it: the target read follows the value (after ·), with (stand-in) or "
                 f"(frozen) and a footnote; where a machine has several rows of a route, the "
                 f"one shown is ok before not ok, the real counter before a stand-in, package "
                 f"energy first, live before frozen. \"other CPU\" is the reader→counter pair "
                 f"named per machine above. MSRs read by rdmsr are compared by name (Intel "
                 f"0x611 and AMD 0xc001029b are both PKG energy)."
               + "".join(f" {r.label}: predates liveness probing (schema 1), verdicts unknown."
                         for r in runs if any(liveness.predates_probe(x) for x in r.rows)))
    return Table(name="machines", key="machines", title="Machines side by side",
                 caption=caption, columns=columns,
                 align="l" + "r" * (len(columns) - 1), body=body, footnotes=notes.list(),
                 csv_columns=MACHINES_CSV, records=records)
