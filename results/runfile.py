"""Loading one run file: a run directory of `make bench-all` (its
results.jsonl) or a results.jsonl, every row validated against
results/schema.json. The report (plots/runs.py) and the gate (ci/gate.py)
load their runs here.

Every problem raises RunFileError, whose message names the file, and each
bad row in the validator's `FILE:LINE: FIELD: MESSAGE` form
(schema.iter_file_errors). The report and the gate word their messages
their own way (their tests pin both): `role` (the gate's: "baseline",
"current run"; without it, the report's) and `max_errors` choose the
wording, `show` the path shown. A run that did not complete is refused by
name (`incomplete`) before its rows are looked at; rows of schema
versions 1 and 2 get their role as they are loaded (`upgrade`), so that
nothing downstream reads a target's prefix.
"""

import dataclasses
import errno
import json
import os
import stat
from pathlib import Path

from results import rows as rowlib
from results import run_state
from results.schema import iter_file_errors

RESULTS_FILE = "results.jsonl"


def upgrade(row: dict) -> dict:
    """A row of schema 1 or 2 with its role (schema 3's field) taken from
    its target's prefix, the prefix removed; a row that has a role as it is."""
    if "role" in row:
        return row
    target = row.get("target") or ""
    role, prefix = next(((r, p) for r, p in rowlib.ROLE_WORDS.items() if target.startswith(p)),
                        (rowlib.MEASURED, ""))
    target = row.get("target") and target.removeprefix(prefix)
    out = {}
    for key, value in row.items():
        out[key] = target if key == "target" else value
        if key == "target":
            out["role"] = role
    return out


class RunFileError(Exception):
    """A run file that cannot be used: missing, unreadable or holding bad
    rows. str(): the message for people, naming the file (and the line of
    each bad row); `path` is the file or directory, `errors` the bad rows as
    (line, field, message)."""

    def __init__(self, message: str, path=None, errors=()):
        super().__init__(message)
        self.path = None if path is None else Path(path)
        self.errors = list(errors)


@dataclasses.dataclass(frozen=True)
class RunFile:
    """The rows of one valid results.jsonl, with their line numbers, each
    with its role (`upgrade`)."""
    path: Path
    lines: tuple   # ((line number from 1, row), ...)

    @property
    def rows(self) -> list[dict]:
        return [row for _, row in self.lines]


def _reason(e: OSError) -> str:
    """An OSError's reason in the words of the messages here: "no such file
    or directory", "too many levels of symbolic links", "permission denied"."""
    text = e.strerror or str(e)
    return text[:1].lower() + text[1:]


def incomplete(path, show=str) -> None:
    """RunFileError `<path>: <why>` when `path` (a run directory, or a file
    in one) belongs to a run that did not complete: its directory holds
    bench-all's marker (results/run_state.py), whatever else it holds."""
    path = Path(path)
    run_dir = path if path.is_dir() else path.parent
    try:
        os.stat(run_dir / run_state.MARKER)
    except FileNotFoundError:
        return
    except OSError as e:  # a directory we may not look into: not "incomplete"
        if e.errno != errno.ENOTDIR:
            raise RunFileError(f"{show(path)}: {_reason(e)} (looking for "
                               f"{run_dir / run_state.MARKER})", path) from None
        return
    why = run_state.incomplete_reason(run_dir)
    if why:
        raise RunFileError(f"{show(path)}: {why}", path)


def locate(arg, role: str | None = None, hint: str = "", show=str) -> Path:
    """The results.jsonl that `arg` names: the file itself, or the one in a
    run directory. RunFileError when there is none, when `arg` cannot be
    looked at (with the system's reason: a symbolic link loop, permission
    denied), and when it belongs to a run that did not complete (`incomplete`)."""
    path = Path(arg)
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise RunFileError(f"{show(path)}: no such file or directory (the {role}){hint}"
                               if role else f"{arg}: no such run directory or results file",
                               path) from None
        raise RunFileError(f"{show(path)}: {_reason(e)} (the {role})" if role
                           else f"{arg}: {_reason(e)}", path) from None
    incomplete(path, show=show if role else (lambda _: str(arg)))
    if stat.S_ISDIR(st.st_mode):
        found = path / RESULTS_FILE
        try:
            st = os.stat(found)
        except OSError as e:
            if e.errno != errno.ENOENT:
                raise RunFileError(f"{show(found)}: {_reason(e)}" + (f" (the {role})" if role
                                                                     else ""), found) from None
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise RunFileError(
                f"{show(path)}: no {RESULTS_FILE} in this directory (the {role} must be a run "
                f"directory of make bench-all or a {RESULTS_FILE})" if role else
                f"{arg}: not a run directory (no {RESULTS_FILE} in it)", path)
        return found
    if not role and not stat.S_ISREG(st.st_mode):
        raise RunFileError(f"{arg}: not a file", path)
    return path


def load(path, max_errors: int | None = None, show=str) -> RunFile:
    """Validate every row of a results.jsonl, then read them. RunFileError
    when the file cannot be read or any row is invalid: the first
    `max_errors` bad rows under a heading, or (None) every one and a count."""
    path = Path(path)
    shown = show(path)
    try:
        errors = list(iter_file_errors(path))
        if not errors:
            with open(path, "rb") as f:
                lines = f.read().split(b"\n")
    except OSError as e:
        raise RunFileError(f"{shown}: cannot read: {e.strerror or e}", path) from None
    if errors:
        raise RunFileError(_invalid(shown, errors, max_errors), path, errors)
    if lines[-1] == b"":  # the newline ending the last row (as the validator splits)
        lines.pop()
    return RunFile(path, tuple((i, upgrade(json.loads(raw))) for i, raw in enumerate(lines, 1)))


def _invalid(shown: str, errors, max_errors: int | None) -> str:
    listed = [f"{shown}:{line}: {field}: {message}"
              for line, field, message in errors[:max_errors]]
    if max_errors is None:
        return "\n".join(listed + [
            f"{shown}: {len(errors)} invalid row{'s' * (len(errors) != 1)} "
            "(results/schema.json; make validate FILE=... says the same)"])
    more = len(errors) - len(listed)
    if more:
        listed.append(f"... and {more} more (python -m results.validate {shown})")
    return f"{shown}: invalid results file\n" + "\n".join(listed)
