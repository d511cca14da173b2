"""The plan: the rows both latency harnesses time, as rbench's discovery
writes it (rbench/src/plan.rs, Plan::to_json; raw/plan.json in bench-all):

    {"plan_version": 1, "target_tick_hz": 1000, "rows": [ROW, ...]}
    ROW = {"id", "path", "op", "target", "cpu", "target_cpu", "stand_in", "liveness",
           "liveness_note", "target_state", "ipi", "target_load", "metric", "unit",
           "harnesses": [...],
           "status": "ok" | "unavailable", "reason", "open"}

"id" is the name each harness's benchmark of the row runs under (the Google
Benchmark name in ubench, the Criterion full id in rbench), by which
results/gbench.py and results/criterion.py join the harness's output to
the row; "harnesses" says which harnesses time it; an unavailable row has
the reason and no liveness verdict. A cross-CPU row comes once per target
state the run times ("target_state", issue 34; "ipi": whether a read runs
code on the target CPU), its id ending in ":<state>"; "target_load" is the
harnesses' (the load they start there: None where the BPF program's own
timer holds the eBPF rows' "ticking"). Plans written before states existed
lack these keys (None).
"""

import json
from pathlib import Path

VERSION = 1
# the keys a ROW must have
REQUIRED = ("id", "path", "op", "target", "cpu", "target_cpu", "stand_in", "liveness",
            "liveness_note", "metric", "unit", "harnesses", "status", "reason")
# the keys copied as they are into a result row
ROW_KEYS = ("path", "op", "target", "cpu", "target_cpu", "stand_in", "liveness",
            "liveness_note", "metric", "unit")
# the keys copied into a result row where the plan has them (None where not)
OPTIONAL_ROW_KEYS = ("target_state", "ipi")
STATUSES = ("ok", "unavailable")


def parse(text: str, origin: str, harness: str) -> tuple[list[dict], dict]:
    """The rows of a plan document that `harness` times, in plan order, and
    the document; ValueError naming `origin` when it is not a plan."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{origin}: not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise ValueError(f"{origin}: not a raplbench plan (no \"rows\" list)")
    if doc.get("plan_version") != VERSION:
        raise ValueError(f"{origin}: plan_version {doc.get('plan_version')!r}, this reader "
                         f"knows {VERSION}: rebuild (make build)")
    rows = [_row(r, origin, i) for i, r in enumerate(doc["rows"])]
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{origin}: two rows have one id")
    return [r for r in rows if harness in r["harnesses"]], doc


def load(path, harness: str) -> list[dict]:
    """The rows `harness` times of the plan file `path`; OSError if it
    cannot be read, ValueError naming the file if it is malformed."""
    return parse(Path(path).read_text(encoding="utf-8"), str(path), harness)[0]


def _row(r, origin: str, index: int) -> dict:
    if not isinstance(r, dict):
        raise ValueError(f"{origin}: row {index} is not an object")
    missing = [k for k in REQUIRED if k not in r]
    if missing:
        raise ValueError(f"{origin}: row {index} lacks {', '.join(missing)}")
    if r["status"] not in STATUSES:
        raise ValueError(f"{origin}: row {index}: status {r['status']!r} is not one of {STATUSES}")
    return r


def row_fields(r: dict) -> dict:
    """The fields a plan row gives its result row."""
    return {**{key: r[key] for key in ROW_KEYS}, **{key: r.get(key) for key in OPTIONAL_ROW_KEYS}}
