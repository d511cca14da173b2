"""Building result rows (schema version 3, see results/README.md).

Every harness normalizer builds its rows with these helpers, so that field
order, nulls and the summary statistics are the same whatever the harness.
Rows are plain dicts whose key order is the schema's field order (it keeps
JSON Lines files readable and diffable); rows are not checked here, the
schema is the single judge (results/schema.py).
"""

import json
import secrets
from datetime import datetime, timezone

from results import files, schema, stats

SCHEMA_VERSION = "3"

# What a row is (its `role`, schema 3): measured; the null loop a sampler is
# judged against; the sampler above it, pair by pair.
MEASURED, NULL, ABOVE_NULL = "measured", "null", "above-null"
# the words before the target that say the role in every table
ROLE_WORDS = {NULL: "null: ", ABOVE_NULL: "above null: "}

FIELDS = (
    "schema_version", "run_id", "timestamp", "machine",
    "harness", "path", "op", "target", "role", "cpu", "target_cpu", "stand_in",
    "liveness", "liveness_note",
    "metric", "unit", "samples", "n", "iterations",
    "mean", "median", "stddev", "min", "max", "p05", "p95", "ci95_low", "ci95_high",
    "status", "reason", "source",
)
# Optional fields, written only by the rows that have them (after FIELDS):
# `run` from common() (a run of bench-all says its mode and steps), the
# others from the row's builder.
OPTIONAL_FIELDS = ("target_state", "ipi", "run", "parameters", "resolution")
QUICK, FULL = "quick", "full"


def _metric_units(node) -> dict:
    """metric -> unit, from the schema rules that pair them: every
    {"if": {metric: const M}, "then": {unit: const U}} under the schema's
    allOf, in schema order."""
    units = {}
    for rule in node.get("allOf", ()):
        metric = rule.get("if", {}).get("properties", {}).get("metric", {})
        unit = rule.get("then", {}).get("properties", {}).get("unit", {})
        if "const" in metric and "const" in unit:
            units[metric["const"]] = unit["const"]
        units.update(_metric_units(rule))
    return units


METRIC_UNITS = _metric_units(schema.SCHEMA)


def _now(now: datetime | None) -> datetime:
    return (now or datetime.now(timezone.utc)).astimezone(timezone.utc)


def new_run_id(now: datetime | None = None) -> str:
    """A run id such as "20261122T000645Z-3fa9c1": UTC time plus 6 random hex
    digits, so that two runs started in the same second differ."""
    return _now(now).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def utc_timestamp(now: datetime | None = None) -> str:
    """ISO 8601 UTC time to the second, e.g. "2026-11-22T00:06:45Z"."""
    return _now(now).strftime("%Y-%m-%dT%H:%M:%SZ")


def common(run_id: str, timestamp: str, machine: dict, *, quick: bool | None = None,
           steps=None) -> dict:
    """The fields shared by every row of one run. A run of bench-all gives
    its mode (`quick`) and the `steps` it was asked to run: the gate
    compares runs of one mode and the same steps only (ci/README.md)."""
    out = {"schema_version": SCHEMA_VERSION, "run_id": run_id,
           "timestamp": timestamp, "machine": machine}
    if quick is not None:
        out["run"] = {"mode": QUICK if quick else FULL, "steps": list(steps or [])}
    return out


def run_of(rows) -> dict | None:
    """The mode and steps (`run`, from common()) that every measured row of
    `rows` records: one dict, or None when a row records none (a harness
    run on its own, a run written before rows said it) or they disagree
    (several runs in one file). Reference rows are left out."""
    kinds = {json.dumps(row.get("run"), sort_keys=True)
             for row in rows if row.get("harness") != "reference"}
    return json.loads(kinds.pop()) if len(kinds) == 1 else None


def describe_run(run: dict | None) -> str:
    """"a QUICK run of gbench, criterion", as the gate and the report say it."""
    if run is None:
        return "records no mode or steps (a harness run alone, or written before runs said them)"
    return f"a {'QUICK' if run['mode'] == QUICK else 'full'} run of {', '.join(run['steps'])}"


def _row(common, harness, path, op, target, role, cpu, target_cpu, stand_in, liveness,
         liveness_note, metric, unit, samples, iterations, summary, status, reason,
         optional=None) -> dict:
    row = {
        **common,
        "harness": harness, "path": path, "op": op, "target": target, "role": role,
        "cpu": cpu, "target_cpu": target_cpu, "stand_in": stand_in,
        "liveness": liveness, "liveness_note": liveness_note,
        "metric": metric, "unit": unit,
        "samples": samples, "iterations": iterations,
        **summary,
        "status": status, "reason": reason, "source": None,
    }
    ordered = {field: row[field] for field in FIELDS}  # schema order
    extra = {"run": common.get("run"), **(optional or {})}
    for field in OPTIONAL_FIELDS:
        if extra.get(field) is not None:
            ordered[field] = extra[field]
    return ordered


def measured_row(common: dict, *, harness: str, path: str, op: str, target,
                 cpu, target_cpu, metric: str, unit: str, samples,
                 iterations=None, stand_in=None, liveness=None, liveness_note=None,
                 parameters=None, resolution=None, role=MEASURED, target_state=None,
                 ipi=None) -> dict:
    """An ok row: the raw samples and their summary (results/stats.py).
    liveness / liveness_note: the verdict on the energy counter the row
    reads (results/liveness.py); None where it reads none. parameters:
    run-varying settings that are not part of the key (calibrated counts);
    resolution: whether the CI reached its target (results/README.md);
    role: MEASURED, NULL or ABOVE_NULL; target_state, ipi: what the target
    CPU of a cross-CPU read was doing, and whether the read runs code there."""
    samples = [float(x) for x in samples]
    return _row(common, harness, path, op, target, role, cpu, target_cpu, stand_in,
                liveness, liveness_note, metric, unit, samples, iterations, stats.summarize(samples),
                "ok", None, {"parameters": parameters, "resolution": resolution,
                             "target_state": target_state, "ipi": ipi})


def not_ok_row(common: dict, *, harness: str, path: str, op: str, metric: str,
               reason: str, target=None, cpu=None, target_cpu=None, unit: str | None = None,
               status: str = "unavailable", stand_in=None, liveness=None,
               liveness_note=None, role=MEASURED, target_state=None, ipi=None) -> dict:
    """A row for a quantity that could not be measured ("unavailable": the
    machine lacks something; "error": it failed), with a reason a person can
    act on. No samples, n = 0, every summary value null. unit: the metric's
    (METRIC_UNITS) unless given."""
    unit = METRIC_UNITS[metric] if unit is None else unit
    return _row(common, harness, path, op, target, role, cpu, target_cpu, stand_in,
                liveness, liveness_note, metric, unit, [], None, stats.summarize([]), status, reason,
                {"target_state": target_state, "ipi": ipi})


def dumps(row: dict) -> str:
    """One JSON Lines line (without the newline). NaN and infinities are
    refused: they are not JSON."""
    return json.dumps(row, ensure_ascii=False, allow_nan=False)


def write_jsonl(rows, path) -> None:
    """Write rows to a JSON Lines file, one row per line, through a
    temporary file and a rename (results/files.py): never half-written."""
    with files.replacing(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(dumps(row) + "\n")
