"""Issue 30, item 1: every message about a bad row is bounded, however big
the row. A 50 MB line holding a JSON array once gave `make validate` a
78.6 MB line on stderr (8 s, 488 MB): jsonschema quotes repr() of the
whole instance, and the gate and the report said the same."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from results import schema
from results.conftest import FIXTURES

pytestmark = pytest.mark.serial  # times messages against a bound (conftest.py)

REPO = Path(__file__).resolve().parent.parent
GOLDEN = FIXTURES / "gbench-1.7.1.golden.jsonl"
MB = 2**20
# A message quotes about 200 characters of a value, names file, line and
# field: a few hundred bytes in all.
BOUND = 1024


def good_row() -> dict:
    return json.loads(GOLDEN.read_text().splitlines()[0])


def errors_of(tmp_path, line: bytes) -> list:
    path = tmp_path / "results.jsonl"
    path.write_bytes(line + b"\n")
    return list(schema.iter_file_errors(path))


def one_error(tmp_path, line: bytes):
    errors = errors_of(tmp_path, line)
    assert len(errors) == 1, errors
    (line_no, field, message), = errors
    assert line_no == 1
    assert len(f"{field}: {message}".encode()) < BOUND, (field[:300], message[:300])
    return field, message


# ---- excerpt: the one way a value is quoted -----------------------------------------

def test_excerpt_is_repr_when_short_and_cut_when_long():
    assert schema.excerpt("abc") == "'abc'"
    assert schema.excerpt([1, 2.5, None, True, {"a": (1,)}]) == repr([1, 2.5, None, True,
                                                                      {"a": (1,)}])
    long = schema.excerpt(["x" * 50] * 100)
    assert len(long) == schema.EXCERPT_CHARS + 1 and long.endswith("…")
    assert long.startswith("['xxx")
    assert schema.excerpt("y" * 10**6, limit=20) == "'" + "y" * 19 + "…"


def test_excerpt_costs_the_same_for_any_size():
    """repr() of 20 million zeros takes seconds and a hundred megabytes;
    the excerpt looks at the first few dozen."""
    huge = [0] * 20_000_000
    nested = {"a": [[[i] for i in range(5)]] * 1_000_000}
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    started = time.perf_counter()
    for value in (huge, nested, deep, "z" * 50 * MB, 10**4000):
        assert len(schema.excerpt(value)) <= schema.EXCERPT_CHARS + 1
    assert time.perf_counter() - started < 0.5


def test_a_row_that_is_not_an_object_is_refused_without_jsonschema():
    started = time.perf_counter()
    errors = schema.validate_row([0] * 20_000_000)
    assert time.perf_counter() - started < 0.5
    assert errors == [("(row)", schema.excerpt([0] * 100) + " is not of type 'object'")]


# ---- lines of a file ------------------------------------------------------------------

def test_a_huge_array_line_is_judged_without_being_parsed(tmp_path):
    started = time.perf_counter()
    field, message = one_error(tmp_path, b"[" + b"0, " * (15 * MB) + b"0]")
    assert time.perf_counter() - started < 2
    assert field == "(row)"
    assert message.startswith("not a JSON object (a row is one {...} per line): '[0, 0, 0")


@pytest.mark.parametrize("line, field", [
    (b"42", "(row)"), (b'"a row"', "(row)"), (b"null", "(row)"), (b" [1, 2]\r", "(row)"),
    ("\ufeff{}".encode(), "(row)"),
])
def test_small_lines_that_are_no_object(tmp_path, line, field):
    got, message = one_error(tmp_path, line)
    assert got == field and message.startswith("not a JSON object")


def test_a_huge_string_field(tmp_path):
    row = {**good_row(), "samples": "x" * (20 * MB)}
    field, message = one_error(tmp_path, json.dumps(row).encode())
    assert field == "samples"
    assert message.startswith("'xxxxx") and message.endswith("… is not of type 'array'")


def test_a_huge_string_in_an_enum_field_and_a_huge_timestamp(tmp_path):
    for key in ("harness", "path", "timestamp", "unit"):
        row = {**good_row(), key: "q" * (5 * MB)}
        field, _ = one_error(tmp_path, json.dumps(row).encode())
        assert field == key


def test_a_huge_nested_object(tmp_path):
    row = {**good_row(), "machine": [[0, 1, 2]] * 300_000}
    field, message = one_error(tmp_path, json.dumps(row).encode())
    assert field == "machine" and message.endswith("… is not of type 'object'")
    row = {**good_row(), "resolution": {"note": ["n"] * 2_000_000}}
    field, message = one_error(tmp_path, json.dumps(row).encode())
    assert field == "resolution.note" and message.startswith("['n', 'n', 'n'")


def test_a_huge_unexpected_property(tmp_path):
    row = {**good_row(), "k" * (5 * MB): ["v" * MB]}
    field, message = one_error(tmp_path, json.dumps(row).encode())
    assert field == "k" * schema.FIELD_CHARS + "…"
    assert message.startswith("Additional properties are not allowed ('kkkk")


def test_a_huge_line_that_is_not_json(tmp_path):
    """Cut off in a key of megabytes: the field named is that key, cut."""
    text = json.dumps(good_row())[:-1] + ', "' + "k" * (5 * MB) + '": [1, 2'
    field, message = one_error(tmp_path, text.encode())
    assert field == "k" * schema.FIELD_CHARS + "…"
    assert message.startswith("not valid JSON (truncated?): Expecting")


def test_a_line_of_invalid_utf8_names_the_field_it_is_in(tmp_path):
    text = json.dumps({**good_row(), "target": "t" * (5 * MB)}).encode()
    at = text.index(b"tttt")
    field, message = one_error(tmp_path, text[:at] + b"\xff\xfe" + text[at:])
    assert field == "target"
    assert message.startswith("not valid UTF-8: 'utf-8' codec can't decode byte 0xff")


def test_an_integer_python_cannot_read_is_an_error_not_a_crash(tmp_path):
    digits = sys.get_int_max_str_digits()
    text = json.dumps(good_row()).replace('"n": ', f'"n": {"9" * (digits + 1)}, "x": ', 1)
    field, message = one_error(tmp_path, text.encode())
    assert field == "n" and message.startswith(f"an integer of more than {digits} digits")


def test_a_valid_big_row_is_still_valid(tmp_path):
    """Rows carry raw samples and may be megabytes: never refused for it."""
    samples = [float(i % 97) + 0.5 for i in range(50_000)]
    row = {**good_row(), "samples": samples, "n": len(samples),
           "reason": None, "target": "t" * MB}
    assert errors_of(tmp_path, json.dumps(row).encode()) == []


# ---- the three commands on a 50 MB line ---------------------------------------------------

@pytest.fixture(scope="module")
def array_line(tmp_path_factory) -> Path:
    """One line of 50 MB: a JSON array of zeros."""
    path = tmp_path_factory.mktemp("huge") / "results.jsonl"
    with open(path, "wb") as f:
        f.write(b"[" + b"0, " * (50 * MB // 3) + b"0]\n")
    return path


COMMANDS = {
    "validate": lambda f, out: [sys.executable, "-m", "results.validate", str(f)],
    "gate": lambda f, out: [str(REPO / "ci" / "gate"), "--current", str(f),
                            "--baseline", str(f)],
    "report": lambda f, out: [sys.executable, "-m", "plots.report", str(f), "--out", str(out)],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_50_mb_array_line_gives_a_short_message(array_line, tmp_path, command):
    assert array_line.stat().st_size > 50 * 10**6
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    started = time.perf_counter()
    done = subprocess.run(COMMANDS[command](array_line, tmp_path / "report"), cwd=REPO,
                          env=env, capture_output=True, timeout=120)
    took = time.perf_counter() - started
    size = len(done.stdout) + len(done.stderr)
    print(f"{command}: exit {done.returncode}, {size} bytes, {took:.2f} s")
    assert done.returncode == 2, done.stderr[:2000]
    assert size < BOUND, done.stderr[:2000]
    err = done.stderr.decode()
    assert f"{array_line}:1: (row): not a JSON object" in err
    assert took < 20
