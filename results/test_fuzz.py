"""Property-based fuzzing (hypothesis) of what reads results files: the
validator, the run loader and the gate get arbitrary bytes, arbitrary JSON
and valid rows with one field replaced by anything. Whatever comes in, they
answer with errors naming the line and field (or a verdict), never with an
exception. derandomize: every `make test` tries the same examples, so a
failure reproduces (the examples found are kept in .hypothesis/)."""

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci import gate
from ci.conftest import common, latency, lognormal
from results import rows as rowlib
from results import runfile, schema

FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

# Any JSON value, including the non-standard constants Python's json writes.
JSON_SCALARS = (st.none() | st.booleans() | st.integers() | st.text(max_size=20)
                | st.floats(allow_nan=True, allow_infinity=True))
JSON_VALUES = st.recursive(JSON_SCALARS,
                           lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=20)


def valid_row() -> dict:
    return latency(common(), lognormal(1, 500, 0.05, n=10))


def check_errors(errors) -> None:
    for line, field, message in errors:
        assert isinstance(line, int) and line >= 0
        assert isinstance(field, str) and field
        assert isinstance(message, str) and message


@FUZZ
@given(st.binary(max_size=400))
def test_the_validator_answers_any_bytes_with_errors(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "results.jsonl"
    path.write_bytes(data)
    check_errors(list(schema.iter_file_errors(path)))


@FUZZ
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=60), max_size=5))
def test_the_validator_answers_any_text_lines_with_errors(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("fuzz") / "results.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    check_errors(list(schema.iter_file_errors(path)))


@FUZZ
@given(field=st.sampled_from(sorted(valid_row())), value=JSON_VALUES)
def test_a_row_with_one_field_replaced_is_valid_or_named(field, value):
    """Replace one field of a valid row by any JSON value: either the row is
    still valid (then its values are finite), or the error names a field."""
    row = {**valid_row(), field: value}
    errors = schema.validate_row(row)
    check_errors((1, f, m) for f, m in errors)
    if not errors:
        assert all(math.isfinite(x) for x in numbers(row)), row


NUMERIC_FIELDS = sorted(k for k, v in valid_row().items() if isinstance(v, float))


@FUZZ
@given(field=st.sampled_from(NUMERIC_FIELDS), value=st.floats(), at=st.integers(0, 9))
def test_a_number_replaced_by_any_float_is_valid_only_when_finite(field, value, at):
    """A summary field, or one sample, replaced by any float (NaN and the
    infinities included): valid only while every number stays finite."""
    row = valid_row()
    row[field] = value
    row["samples"] = row["samples"][:at] + [value] + row["samples"][at + 1:]
    errors = schema.validate_row(row)
    assert bool(errors) == (not math.isfinite(value)), errors


def numbers(value):
    """Every float anywhere inside a JSON value."""
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from numbers(v)


@FUZZ
@given(field=st.sampled_from(sorted(valid_row())), value=JSON_VALUES)
def test_the_gate_answers_a_damaged_current_run_with_a_verdict_or_exit_2(
        tmp_path_factory, capsys, field, value):
    """The gate against a current run whose row had one field replaced:
    exit 0 or 1 with a verdict, or 2 naming the problem; never an internal
    error (which would also be exit 2, so the message is checked)."""
    tmp = tmp_path_factory.mktemp("gate")
    base = valid_row()
    rowlib.write_jsonl([base], tmp / "baseline.jsonl")
    text = json.dumps({**base, field: value})  # NaN and Infinity as Python writes them
    (tmp / "current.jsonl").write_text(text + "\n", encoding="utf-8")
    code = gate.main(["--baseline", str(tmp / "baseline.jsonl"),
                      "--current", str(tmp / "current.jsonl"),
                      "--verdict", str(tmp / "verdict.json")])
    err = capsys.readouterr().err
    assert code in (0, 1, 2)
    assert "internal error" not in err, err
    if code == 2:
        assert "current.jsonl" in err


@FUZZ
@given(st.binary(max_size=300))
def test_the_run_loader_refuses_garbage_naming_the_file(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("load") / "results.jsonl"
    path.write_bytes(data)
    try:
        loaded = runfile.load(path)
    except runfile.RunFileError as e:
        assert "results.jsonl" in str(e)
    else:
        assert loaded.lines  # only a file of valid rows loads
