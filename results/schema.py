"""Checking rows and JSON Lines files against results/schema.json.

Errors are reported as (field, message), field being the dotted path of the
offending field ("machine.tsc_khz", "samples.3"), the name of a missing or
unexpected property, or "(row)" when the row as a whole is wrong. For a file,
each bad row gets one error: the most relevant one (jsonschema's best_match).

Messages are bounded whatever the row holds (issue 30): a value is quoted
with `excerpt` (about 200 characters of its repr, at a cost bounded by that
too), a field name with `clip`; a line that is not a JSON object is
reported as such without being parsed or handed to jsonschema, whose own
messages would embed repr() of the whole instance (a 50 MB line once made
a 78.6 MB message).
"""

import json
import math
import re
import sys
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


# ---- bounded quotes -----------------------------------------------------------------

EXCERPT_CHARS = 200   # of a value quoted in a message
FIELD_CHARS = 100     # of a field name (an object key can be any length)
MESSAGE_CHARS = 600   # of any one message: a last bound, whatever built it
ELLIPSIS = "…"


def clip(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` cut to `limit` characters, "…" marking the cut."""
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def excerpt(value, limit: int = EXCERPT_CHARS) -> str:
    """repr() of a value from a row, cut to `limit` characters ("…" marking
    the cut). The one way a message quotes a value: its cost is bounded by
    `limit` however big the value (a list of millions of samples, a string
    of megabytes, nesting of any depth), which repr() itself is not."""
    pieces, size = [], 0
    for piece in _repr_pieces(value, limit):
        pieces.append(piece)
        size += len(piece)
        if size > limit:
            break
    return clip("".join(pieces), limit)


def _repr_pieces(value, limit: int):
    """repr(value) in pieces, produced only as far as they are taken."""
    if isinstance(value, str):
        # a string past the limit is cut anyway; repr() of a slice is cheap
        yield str.__repr__(value[:limit + 1])
    elif isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(dict.items(value)):  # (not a subclass's items())
            if i:
                yield ", "
            yield from _repr_pieces(key, limit)
            yield ": "
            yield from _repr_pieces(item, limit)
        yield "}"
    elif isinstance(value, (list, tuple)):
        yield "[" if isinstance(value, list) else "("
        for i, item in enumerate(list.__iter__(value) if isinstance(value, list) else value):
            if i:
                yield ", "
            yield from _repr_pieces(item, limit)
        yield "]" if isinstance(value, list) else ("," * (len(value) == 1) + ")")
    else:
        try:
            yield repr(value)
        except ValueError:  # an int past sys.get_int_max_str_digits()
            yield f"<an integer of {value.bit_length()} bits>"


class _QuotedStr(str):
    """A str that jsonschema quotes (f"{instance!r}") with excerpt()."""
    __slots__ = ()

    def __repr__(self):
        return excerpt(self)


class _QuotedList(list):
    """A list quoted with excerpt(), whose items are _quotable() as they are
    read: only what jsonschema visits is wrapped (the millions of items of
    a list it refuses by its type never are)."""
    __slots__ = ()

    def __repr__(self):
        return excerpt(self)

    def __getitem__(self, i):
        item = list.__getitem__(self, i)
        return _QuotedList(item) if isinstance(i, slice) else _quotable(item)

    def __iter__(self):
        return map(_quotable, list.__iter__(self))


class _QuotedDict(dict):
    """A dict quoted with excerpt(), its keys and values _quotable() as they
    are read."""
    __slots__ = ()

    def __repr__(self):
        return excerpt(self)

    def __getitem__(self, key):
        return _quotable(dict.__getitem__(self, key))

    def get(self, key, default=None):
        return self[key] if key in self else default

    def __iter__(self):
        return map(_quotable, dict.__iter__(self))

    def keys(self):
        return list(self)

    def values(self):
        return [_quotable(v) for v in dict.values(self)]

    def items(self):
        return [(_quotable(k), _quotable(v)) for k, v in dict.items(self)]


def _quotable(value):
    """`value` for jsonschema: equal to it, but every list, dict and long
    string in it has a bounded repr() (jsonschema's messages quote the
    instance at fault: see the module docstring)."""
    if isinstance(value, str):
        return _QuotedStr(value) if len(value) > EXCERPT_CHARS and type(value) is str else value
    if type(value) is dict:
        return _QuotedDict(value)
    if type(value) is list:
        return _QuotedList(value)
    return value


# (that SCHEMA is itself a valid schema: results/test_schema.py, not every import)
_ROW = Draft202012Validator(SCHEMA, format_checker=_FORMATS)
_MACHINE = Draft202012Validator(
    {"$defs": SCHEMA["$defs"], "$ref": "#/$defs/machine"}, format_checker=_FORMATS)


def _field(error) -> str:
    path = [clip(str(p), FIELD_CHARS) for p in error.absolute_path]
    # required / additionalProperties errors sit on the object; name the property.
    if error.validator == "required":
        path.append(next((p for p in error.validator_value
                          if p not in error.instance and error.message.startswith(repr(p))), "?"))
    elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        path.append(clip(",".join(clip(k, FIELD_CHARS) for k in error.instance
                                  if k not in known), FIELD_CHARS))
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
        message = f"{excerpt(error.instance)} is not one of {allowed}"
    path = list(error.absolute_schema_path)  # from the top error's keyword down
    if len(path) >= 2 and path[0] == "allOf":
        comment = SCHEMA["allOf"][path[1]].get("$comment")
        if comment:
            message = f"{message} ({comment})"
    return clip(message, MESSAGE_CHARS)


def _describe(validator, instance) -> list[tuple[str, str]]:
    errors = list(validator.iter_errors(_quotable(instance)))
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
    keeps its source's n, without the samples). A row that is not an object
    gets that one error, without jsonschema."""
    if not isinstance(row, dict):  # jsonschema's words, bounded
        return [("(row)", f"{excerpt(row)} is not of type 'object'")]
    errors = _describe(_ROW, row)
    errors += [(field, "not a finite number (NaN or infinity): rows hold measured "
                       "values only") for field in _non_finite_fields(row)]
    if not errors and row["harness"] != "reference" and row["n"] != len(row["samples"]):
        errors.append(("n", f"{excerpt(row['n'])}, but samples holds {len(row['samples'])} "
                            "values"))
    return errors


def _non_finite_fields(row) -> list[str]:
    """_non_finite(row), looked for only where json's C encoder finds a NaN
    or infinity (it walks millions of items in a blink; most rows have none)."""
    try:
        json.dumps(row, allow_nan=False)
        return []
    except (ValueError, TypeError, RecursionError):
        return list(_non_finite(row))


def _non_finite(value, field="(row)"):
    """The fields (`samples[3]`, `machine.tsc_khz`) holding a float NaN or
    infinity, in any depth of a row (a dict or list). (Items are looked at
    in the loop, not each in a call of its own, and named only when found: a
    row may hold millions of samples.)"""
    for key, item in (value.items() if isinstance(value, dict) else enumerate(value)):
        if isinstance(item, (dict, list)) or isinstance(item, float) and not math.isfinite(item):
            name = (f"{field}[{key}]" if isinstance(value, list)
                    else key if field == "(row)" else f"{field}.{key}")
            if isinstance(item, float):
                yield name
            else:
                yield from _non_finite(item, name)


def validate_machine(machine) -> list[tuple[str, str]]:
    """Like validate_row, for a `machine` object on its own."""
    return _describe(_MACHINE, machine)


# A JSON object key: a string token followed by a colon. Scanning string
# tokens left to right keeps quotes and colons inside string values harmless.
# (The string token is written as an unrolled loop: a megabyte string is one
# run of [^"\\]*, not a million alternations.)
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRING_TOKEN = re.compile(_STRING + r'(\s*:)?')


def _last_key(text: str) -> str:
    """The last object key that starts before the end of `text` (clipped)."""
    key = None
    for m in _STRING_TOKEN.finditer(text):
        if m.group(1):
            key = m.group(0)
    if key is None:
        return "(row)"
    return clip(json.loads(key.rstrip()[:-1].rstrip()), FIELD_CHARS)


class _NonStandardConstant(ValueError):
    """NaN, Infinity or -Infinity in a line: Python's json accepts them,
    JSON does not."""


def _refuse_constant(name: str):
    raise _NonStandardConstant(name)


def _outside_strings(pattern: str, text: str) -> int:
    """Where the first match of `pattern` outside a string token starts
    (len(text) when there is none)."""
    token = re.compile(_STRING + f"|({pattern})")
    return next((m.start(1) for m in token.finditer(text) if m.group(1)), len(text))


_JSON_SPACE = re.compile(r"[ \t\r\n]*")


def parse_row(raw: bytes):
    """One line of a JSON Lines file: (row, None) for a JSON object, else
    (None, (field, message)) saying why it is no row. A line that does not
    start with "{" is not parsed at all (a huge array is slow to parse)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        where = _last_key(raw[:e.start].decode("utf-8"))
        return None, (where, f"not valid UTF-8: {e}")
    start = _JSON_SPACE.match(text).end()
    if text[start:start + 1] != "{":
        return None, ("(row)", "not a JSON object (a row is one {...} per line): "
                               f"{excerpt(text[start:])}")
    try:
        return json.loads(text, parse_constant=_refuse_constant), None
    except json.JSONDecodeError as e:
        return None, (_last_key(text[:e.pos]), f"not valid JSON (truncated?): {e}")
    except _NonStandardConstant as e:
        return None, (_last_key(text[:_outside_strings(r"-?Infinity|NaN", text)]), (
            f"{e.args[0]} is not JSON (RFC 8259 has no NaN or infinity): rows hold "
            "measured, finite values only"))
    except RecursionError:
        return None, ("(row)", "nested too deeply to be a row")
    except ValueError:  # an integer longer than Python converts
        digits = sys.get_int_max_str_digits()
        return None, (_last_key(text[:_outside_strings(r"\d{%d,}" % (digits + 1), text)]),
                      f"an integer of more than {digits} digits: not a measured value")


def iter_file_errors(path):
    """Yield (line_no, field, message) for each bad row of a JSON Lines file.

    Line numbers start at 1. A line that is not JSON (for example a last line
    truncated by a crash) is reported on the key where it broke off; a line
    that is not a JSON object, as such; blank lines are errors; a file
    without any row gives one error on line 0. Every message is bounded
    (excerpt), however long the line. Raises OSError when the file cannot
    be read.
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
        row, error = parse_row(raw)
        if error is None:
            errors = validate_row(row)
            error = errors[0] if errors else None
        if error is not None:
            yield line_no, *error
    if rows == 0:
        yield 0, "(file)", "no rows"
