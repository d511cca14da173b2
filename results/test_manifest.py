"""The manifest both harnesses write (results/manifest.py): its format,
the errors a malformed one gives, and the older forms that still load."""

import json

import pytest

from results import manifest

ROW = {"bench": "perf/read/msr/tsc/@0", "value": "real_time", "path": "perf", "op": "read",
       "target": "msr/tsc/", "cpu": 0, "target_cpu": 0, "stand_in": "why", "liveness": None,
       "liveness_note": None, "metric": "latency", "unit": "ns", "status": "ok", "reason": None}


def doc(rows, **top):
    return json.dumps({"manifest_version": 1, "harness": "criterion", "rows": rows, **top})


def test_rows_load_as_written():
    assert manifest.parse(doc([ROW]), "m.json") == [ROW]
    assert manifest.row_fields(ROW)["stand_in"] == "why"
    assert "bench" not in manifest.row_fields(ROW)


def test_older_rows_get_defaults():
    old = {k: v for k, v in ROW.items() if k not in ("value", "liveness", "liveness_note")}
    [row] = manifest.parse(json.dumps({"rows": [old]}), "m.json")
    assert (row["value"], row["liveness"], row["liveness_note"]) == ("real_time", None, None)


@pytest.mark.parametrize("text,message", [
    ('{"rows": [', "m.json: not valid JSON"),
    ("[]", 'no "rows" list'),
    (doc([ROW], manifest_version=2), "manifest_version 2, this reader knows 1"),
    (doc([ROW], harness="gbench"), "a manifest of 'gbench', expected 'criterion'"),
    (doc([1]), "row 0 is not an object"),
    (doc([{**ROW, "status": "fine"}]), "status 'fine' is not one of"),
    (doc([{k: v for k, v in ROW.items() if k != "reason"}]), "row 0 lacks reason"),
    (doc([{**ROW, "bench": None}]), "row 0 is ok but names no benchmark"),
])
def test_malformed_manifests_name_the_file_and_the_fault(text, message):
    with pytest.raises(ValueError, match=message):
        manifest.parse(text, "m.json", "criterion")


def test_a_file_that_cannot_be_read_is_an_oserror(tmp_path):
    with pytest.raises(OSError):
        manifest.load(tmp_path / "missing.json")
