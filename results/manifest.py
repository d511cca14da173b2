"""The manifest: how a harness says which result rows it owes.

Google Benchmark and Criterion report benchmark ids and times only. So both
harnesses, ubench (C++) and rbench (Rust), write one manifest in the same
format, a JSON file:

    {"manifest_version": 1, "harness": "gbench" | "criterion", "rows": [ROW, ...]}
    ROW = {"bench": <benchmark id> | null, "value": "real_time" | "counter:<name>" | null,
           "path", "op", "target", "cpu", "target_cpu", "stand_in", "liveness",
           "liveness_note", "metric", "unit", "status": "ok" | "unavailable" | "error",
           "reason"}

One ROW per future result row. "bench" names the benchmark whose figures feed
the row (null when the path could not even be set up here: status is not ok
and "reason" says why, in words a person can act on); "value" says which of
its figures: the time per iteration, or a user counter (null exactly when
"bench" is). The rest are the
row's fields in the results schema, as rbench's plan (rbench/src/plan.rs,
the one discovery both harnesses time) gives them. The harnesses write it
with `--raplbench_manifest=FILE` (ubench; without measuring with
`--raplbench_plan_only`) and `$RAPLBENCH_MANIFEST` (rbench).

Files written before this format (a bare {"rows": [...]}, or ubench's
manifest embedded as a string in Google Benchmark's context) still load; a
row without "liveness" or "value" gets null / "real_time".
"""

import json
from pathlib import Path

VERSION = 1
# the keys a ROW must have (the others default, for manifests of older harnesses)
REQUIRED = ("bench", "path", "op", "target", "cpu", "target_cpu", "stand_in", "metric", "unit",
            "status", "reason")
# the keys copied as they are into a result row
ROW_KEYS = ("path", "op", "target", "cpu", "target_cpu", "stand_in", "liveness",
            "liveness_note", "metric", "unit")
STATUSES = ("ok", "unavailable", "error")


def parse(text: str, origin: str, harness: str | None = None) -> list[dict]:
    """The rows of a manifest document; ValueError naming `origin` when it is
    not one (or is another harness's)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{origin}: not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise ValueError(f"{origin}: not a raplbench manifest (no \"rows\" list)")
    version = doc.get("manifest_version", VERSION)
    if version != VERSION:
        raise ValueError(f"{origin}: manifest_version {version!r}, this reader knows {VERSION}: "
                         "normalize with the raplbench that wrote it")
    if harness and doc.get("harness", harness) != harness:
        raise ValueError(f"{origin}: a manifest of {doc['harness']!r}, expected {harness!r}")
    return [_row(m, origin, i) for i, m in enumerate(doc["rows"])]


def load(path, harness: str | None = None) -> list[dict]:
    """The rows of the manifest file `path`; OSError if it cannot be read,
    ValueError naming the file if it is malformed."""
    return parse(Path(path).read_text(encoding="utf-8"), str(path), harness)


def _row(m, origin: str, index: int) -> dict:
    if not isinstance(m, dict):
        raise ValueError(f"{origin}: row {index} is not an object")
    missing = [k for k in REQUIRED if k not in m]
    if missing:
        raise ValueError(f"{origin}: row {index} lacks {', '.join(missing)}")
    if m["status"] not in STATUSES:
        raise ValueError(f"{origin}: row {index}: status {m['status']!r} is not one of {STATUSES}")
    if m["status"] == "ok" and not m["bench"]:
        raise ValueError(f"{origin}: row {index} is ok but names no benchmark")
    defaults = {"value": "real_time" if m["bench"] else None, "liveness": None,
                "liveness_note": None}
    return {**defaults, **m}


def row_fields(m: dict) -> dict:
    """The fields a manifest row gives its result row."""
    return {key: m.get(key) for key in ROW_KEYS}
