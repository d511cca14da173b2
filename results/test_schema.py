import pytest
from jsonschema import Draft202012Validator

from results import rows, schema

MACHINE = {field: None for field in schema.SCHEMA["$defs"]["machine"]["required"]}
COMMON = rows.common("20261122T000645Z-abcdef", "2026-11-22T00:06:45Z", MACHINE)
WHERE = dict(harness="gbench", path="msr-dev", op="pread", target="0x611", cpu=0, target_cpu=1,
             metric="latency", unit="ns")


def ok_row(**changes):
    row = rows.measured_row(COMMON, **WHERE, samples=[560.0, 540.0, 555.0], iterations=1000)
    return {**row, **changes}


def unavailable_row(**changes):
    row = rows.not_ok_row(COMMON, **WHERE, reason="/dev/cpu/0/msr missing: load the msr module")
    return {**row, **changes}


def reference_row(**changes):
    row = unavailable_row(harness="reference", status="ok", reason=None, median=560.0, n=0,
                          source="Diamond & Stoico 2026, Table 3, Intel i7-8809G")
    return {**row, **changes}


LIVENESS = ("liveness", "liveness_note")


def without(row, field):
    return {k: v for k, v in row.items() if k != field}


def frozen_row(**changes):
    row = ok_row(liveness="frozen", liveness_note="MSR 0x611 on CPU 1: did not change in 100 ms "
                 "(98 reads): a dead counter, it yields no energy")
    return {**row, **changes}


def schema1_row(**changes):
    """A row as written under schema version 1: no liveness fields."""
    row = {k: v for k, v in ok_row().items() if k not in ("liveness", "liveness_note")}
    return {**row, "schema_version": "1", **changes}


def test_the_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(schema.SCHEMA)


def test_row_helpers_follow_the_schema_field_order():
    assert list(rows.FIELDS + rows.OPTIONAL_FIELDS) == list(schema.SCHEMA["properties"])
    # the fields every version requires; schema 2 adds the liveness verdict, 3 the role
    assert [f for f in rows.FIELDS if f not in (*LIVENESS, "role")] == schema.SCHEMA["required"]
    assert rows.FIELDS.index("liveness") == rows.FIELDS.index("stand_in") + 1
    assert list(ok_row()) == list(rows.FIELDS)
    assert list(unavailable_row()) == list(rows.FIELDS)
    with_optional = rows.measured_row(
        rows.common("20261122T000645Z-abcdef", "2026-11-22T00:06:45Z", MACHINE, quick=True,
                    steps=["gbench", "criterion"]),
        **WHERE, samples=[560.0], parameters={"cpu_ops": 297}, resolution=RESOLVED,
        target_state="busy", ipi=True)
    assert list(with_optional) == list(rows.FIELDS + rows.OPTIONAL_FIELDS)
    assert with_optional["run"] == {"mode": "quick", "steps": ["gbench", "criterion"]}
    assert schema.validate_row(with_optional) == []


RESOLVED = {"target_half_width": 0.5, "half_width": 0.31, "resolved": True, "note": None}


@pytest.mark.parametrize("field,value,where", [
    ("parameters", {"cpu_ops": [1]}, "parameters.cpu_ops"),
    ("resolution", {**RESOLVED, "target_half_width": 0}, "resolution.target_half_width"),
    ("resolution", {"resolved": True}, "resolution"),
    ("resolution", {**RESOLVED, "extra": 1}, "resolution.extra"),
    ("run", {"mode": "QUICK", "steps": []}, "run.mode"),
    ("run", {"mode": "full", "steps": ["idle", "idle"]}, "run.steps"),
    ("run", {"mode": "full"}, "run.steps"),
])
def test_the_optional_fields_are_checked(field, value, where):
    errors = schema.validate_row(ok_row(**{field: value}))
    assert errors and errors[0][0] == where, errors


def test_metric_units_match_the_schema():
    assert set(rows.METRIC_UNITS) == set(schema.SCHEMA["properties"]["metric"]["enum"])
    for metric, unit in rows.METRIC_UNITS.items():
        assert schema.validate_row(ok_row(metric=metric, unit=unit)) == []
        other = "ns" if unit != "ns" else "us"
        assert schema.validate_row(ok_row(metric=metric, unit=other))[0][0] == "unit"


@pytest.mark.parametrize("row", [ok_row(), unavailable_row(), unavailable_row(status="error"),
                                 reference_row(), ok_row(stand_in="/dev/cpu/0/cpuid for /dev/cpu/0/msr"),
                                 ok_row(timestamp="2026-11-22T00:06:45.123+00:00"),
                                 ok_row(liveness="live"), frozen_row(),
                                 frozen_row(liveness="no-unit"),
                                 frozen_row(status="error", reason="the benchmark crashed"),
                                 schema1_row(), schema1_row(stand_in="a stand-in")],
                         ids=["ok", "unavailable", "error", "reference", "stand-in", "fractional-time",
                              "live", "frozen", "no-unit", "frozen-error", "schema-1",
                              "schema-1-stand-in"])
def test_accepts_good_rows(row):
    assert schema.validate_row(row) == []


@pytest.mark.parametrize("row, field, words", [
    (without(ok_row(), "samples"), "samples", "required"),
    (without(ok_row(), "reason"), "reason", "required"),
    ({**ok_row(), "machine": without(MACHINE, "tsc_khz")}, "machine.tsc_khz", "required"),
    (ok_row(cpu="0"), "cpu", "not of type"),
    (ok_row(samples=[1.0, "2"]), "samples.1", "not of type"),
    (ok_row(samples=[], n=0), "samples", "non-empty"),
    (ok_row(median=None), "median", "not of type"),
    (unavailable_row(reason=None), "reason", "not ok says why"),
    (unavailable_row(reason=""), "reason", "not ok says why"),
    (ok_row(schema_version="4"), "schema_version", "is not one of ['1', '2', '3']"),
    (without(ok_row(), "liveness"), "liveness", "required"),
    (without(ok_row(), "liveness_note"), "liveness_note", "required"),
    (ok_row(liveness="dead"), "liveness", "is not one of"),
    (frozen_row(liveness_note=None), "liveness_note", "says why"),
    (frozen_row(liveness="no-unit", liveness_note=""), "liveness_note", "non-empty"),
    (ok_row(liveness="live", liveness_note="moved"), "liveness_note", "says why"),
    (ok_row(stand_in="lo rx_bytes for energy_uj", liveness="live"), "liveness",
     "a stand-in is not an energy counter"),
    (reference_row(liveness="live"), "liveness", "a published figure has no liveness verdict"),
    (schema1_row(liveness=None), "liveness", "predates it"),
    (schema1_row(liveness_note=None), "liveness_note", "predates it"),
    (ok_row(unit="us"), "unit", "'ns' was expected"),
    (ok_row(metric="cycles"), "unit", "'cycles' was expected"),
    (ok_row(latency_ns=3.0), "latency_ns", "not allowed"),
    (ok_row(source="a paper"), "source", "not of type 'null'"),
    (reference_row(source=None), "source", "cites where it comes from"),
    (ok_row(timestamp="2026-11-22 00:06:45"), "timestamp", "does not match"),
    (ok_row(timestamp="2026-13-22T00:06:45Z"), "timestamp", "date-time"),
    (ok_row(path="msr"), "path", "is not one of"),
    (ok_row(iterations=0), "iterations", "minimum"),
    (ok_row(stand_in=""), "stand_in", "non-empty"),
    ([ok_row()], "(row)", "not of type 'object'"),
], ids=lambda x: x if isinstance(x, str) and " " not in x else None)
def test_rejects_bad_rows(row, field, words):
    errors = schema.validate_row(row)
    assert errors, "expected the row to be rejected"
    assert errors[0][0] == field
    assert words in errors[0][1]


def test_machine_is_checked_on_its_own():
    assert schema.validate_machine(MACHINE) == []
    assert schema.validate_machine({**MACHINE, "tsc_khz": 0})[0][0] == "tsc_khz"
    assert schema.validate_machine({**MACHINE, "gpu": "none"})[0][0] == "gpu"
