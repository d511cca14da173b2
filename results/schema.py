"""Checking rows and JSON Lines files against results/schema.json.

Errors are reported as (field, message), field being the dotted path of the
offending field ("machine.tsc_khz", "samples.3"), the name of a missing or
unexpected property, or "(row)" when the row as a whole is wrong. For a file,
each bad row gets one error: the most relevant one (jsonschema's best_match).
"""

import json
import math
import re
from datetime import datetime
from pathlib import Path

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import best_match, relevance

SCHEMA_PATH = Path(__file__).with_name("schema.json")
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))

# jsonschema checks "date-time" only when the optional rfc3339-validator
# package is installed; the schema's pattern already fixes the shape, so the
# standard library is enough to reject impossible dates (month 13, ...).
_FORMATS = FormatChecker()


@_FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value) -> bool:
    if isinstance(value, str):
        datetime.fromisoformat(value)
    return True


Draft202012Validator.check_schema(SCHEMA)
_ROW = Draft202012Validator(SCHEMA, format_checker=_FORMATS)
_MACHINE = Draft202012Validator(
    {"$defs": SCHEMA["$defs"], "$ref": "#/$defs/machine"}, format_checker=_FORMATS)


def _field(error) -> str:
    path = [str(p) for p in error.absolute_path]
    # required / additionalProperties errors sit on the object; name the property.
    if error.validator == "required":
        path.append(next((p for p in error.validator_value
                          if p not in error.instance and error.message.startswith(repr(p))), "?"))
    elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        path.append(",".join(k for k in error.instance if k not in known))
    return ".".join(path) or "(row)"


def _message(error) -> str:
    # Errors from the conditional rules (allOf) are clearer with the rule's
    # $comment, e.g. "None is not of type 'string' (a row that is not ok says why)".
    message = error.message
    if error.validator == "not" and error.validator_value == {}:
        message = "not allowed here"  # {"not": {}}: the field must be absent
    elif error.validator == "oneOf" and all("const" in s for s in error.validator_value):
        # a registry list ($defs.path, $defs.mechanism): name the allowed values
        allowed = [s["const"] for s in error.validator_value]
        message = f"{error.instance!r} is not one of {allowed}"
    top = error
    while top.parent is not None:
        top = top.parent
    path = list(top.relative_schema_path)
    if len(path) >= 2 and path[0] == "allOf":
        comment = SCHEMA["allOf"][path[1]].get("$comment")
        if comment:
            return f"{message} ({comment})"
    return message


def _describe(validator, instance) -> list[tuple[str, str]]:
    errors = list(validator.iter_errors(instance))
    if not errors:
        return []
    best = best_match(errors)
    root = best
    while root.parent is not None:
        root = root.parent
    rest = sorted((e for e in errors if e is not root), key=relevance, reverse=True)
    return [(_field(e), _message(e)) for e in [best, *rest]]


def validate_row(row) -> list[tuple[str, str]]:
    """Every schema error of one row as (field, message), the most relevant
    first; an empty list when the row is valid. On top of the schema (which
    JSON Schema cannot say): no NaN or infinity anywhere, and `n` is the
    number of `samples` (except in a `reference` row: a published figure
    keeps its source's n, without the samples)."""
    errors = _describe(_ROW, row)
    errors += [(field, "not a finite number (NaN or infinity): rows hold measured "
                       "values only") for field in _non_finite(row)]
    if not errors and row["harness"] != "reference" and row["n"] != len(row["samples"]):
        errors.append(("n", f"{row['n']}, but samples holds {len(row['samples'])} values"))
    return errors


def _non_finite(value, field="(row)"):
    """The fields (`samples[3]`, `machine.tsc_khz`) holding a float NaN or
    infinity, in any depth of the row."""
    if isinstance(value, float) and not math.isfinite(value):
        yield field
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, key if field == "(row)" else f"{field}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _non_finite(item, f"{field}[{i}]")


def validate_machine(machine) -> list[tuple[str, str]]:
    """Like validate_row, for a `machine` object on its own."""
    return _describe(_MACHINE, machine)


# A JSON object key: a string token followed by a colon. Scanning string
# tokens left to right keeps quotes and colons inside string values harmless.
_STRING_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"(\s*:)?')


def _last_key(text: str) -> str:
    """The last object key that starts before the end of `text`."""
    keys = [m.group(0) for m in _STRING_TOKEN.finditer(text) if m.group(1)]
    if not keys:
        return "(row)"
    return json.loads(keys[-1].rstrip()[:-1].rstrip())


class _NonStandardConstant(ValueError):
    """NaN, Infinity or -Infinity in a line: Python's json accepts them,
    JSON does not."""


def _refuse_constant(name: str):
    raise _NonStandardConstant(name)


# A string token, or one of the constants outside strings.
_CONSTANT_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def _constant_position(text: str) -> int:
    """Where the first NaN or infinity outside a string starts."""
    return next((m.start(1) for m in _CONSTANT_TOKEN.finditer(text) if m.group(1)), len(text))


def iter_file_errors(path):
    """Yield (line_no, field, message) for each bad row of a JSON Lines file.

    Line numbers start at 1. A line that is not JSON (for example a last line
    truncated by a crash) is reported on the key where it broke off; blank
    lines are errors; a file without any row gives one error on line 0.
    Raises OSError when the file cannot be read.
    """
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines[-1] == b"":  # the newline ending the last row
        lines.pop()
    rows = 0
    for line_no, raw in enumerate(lines, start=1):
        if not raw.strip():
            yield line_no, "(row)", "blank line"
            continue
        rows += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            yield line_no, "(row)", f"not valid UTF-8: {e}"
            continue
        try:
            row = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as e:
            yield line_no, _last_key(text[:e.pos]), f"not valid JSON (truncated?): {e}"
            continue
        except _NonStandardConstant as e:
            yield line_no, _last_key(text[:_constant_position(text)]), (
                f"{e.args[0]} is not JSON (RFC 8259 has no NaN or infinity): rows hold "
                "measured, finite values only")
            continue
        except RecursionError:
            yield line_no, "(row)", "nested too deeply to be a row"
            continue
        errors = validate_row(row)
        if errors:
            yield line_no, *errors[0]
    if rows == 0:
        yield 0, "(file)", "no rows"
