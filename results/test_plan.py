"""The plan both harnesses' rows are built from (results/plan.py): the
rows of one harness, and the errors a malformed plan gives."""

import json

import pytest

from results import plan

ROW = {"id": "perf/read/msr/tsc/@0->0", "path": "perf", "op": "read", "target": "msr/tsc/",
       "cpu": 0, "target_cpu": 0, "stand_in": "why", "liveness": None, "liveness_note": None,
       "metric": "latency", "unit": "ns", "harnesses": ["gbench", "criterion"], "status": "ok",
       "reason": None, "open": {"perf": ["msr/tsc/"], "cpu": 0, "group": False}}
TICK = {**ROW, "id": "ebpf-mmap/tick/x@0", "harnesses": ["gbench"], "metric": "rate_hz"}


def doc(rows, **top):
    return json.dumps({"plan_version": 1, "rows": rows, **top})


def test_a_harness_gets_its_rows_in_plan_order():
    rows, _ = plan.parse(doc([TICK, ROW]), "p.json", "gbench")
    assert [r["id"] for r in rows] == [TICK["id"], ROW["id"]]
    assert plan.parse(doc([TICK, ROW]), "p.json", "criterion")[0] == [ROW]
    assert plan.row_fields(ROW)["stand_in"] == "why"
    assert not {"id", "open", "harnesses"} & set(plan.row_fields(ROW))
    # the target state and ipi where the plan has them (issue 34), None where not
    assert (plan.row_fields(ROW)["target_state"], plan.row_fields(ROW)["ipi"]) == (None, None)
    busy = {**ROW, "target_state": "busy", "ipi": True}
    assert (plan.row_fields(busy)["target_state"], plan.row_fields(busy)["ipi"]) == ("busy", True)


@pytest.mark.parametrize("text,message", [
    ('{"rows": [', "p.json: not valid JSON"),
    ("[]", 'no "rows" list'),
    (doc([ROW], plan_version=2), "plan_version 2, this reader knows 1"),
    (json.dumps({"rows": [ROW]}), "plan_version None"),
    (doc([1]), "row 0 is not an object"),
    (doc([{**ROW, "status": "error"}]), "status 'error' is not one of"),
    (doc([{k: v for k, v in ROW.items() if k != "id"}]), "row 0 lacks id"),
    (doc([ROW, {**ROW, "op": "group-read"}]), "two rows have one id"),
])
def test_malformed_plans_name_the_file_and_the_fault(text, message):
    with pytest.raises(ValueError, match=message):
        plan.parse(text, "p.json", "gbench")


def test_a_file_that_cannot_be_read_is_an_oserror(tmp_path):
    with pytest.raises(OSError):
        plan.load(tmp_path / "missing.json", "gbench")
