"""Loading what the report shows: runs (a run directory or a results.jsonl
file, validated against results/schema.json) and the published reference
rows (results/reference/*.jsonl).

A file whose rows come from several machines (rows merged by hand, say) is
split into one Run per machine: the report is keyed by machine. A run file
that is missing or invalid raises results.runfile.RunFileError (the loader
the gate shares) with a message naming the file, and the first bad lines in
the validator's `FILE:LINE: FIELD: MESSAGE` form; other bad input (no run
at all) raises InputError.
"""

import dataclasses
import json
from datetime import datetime, timezone
from pathlib import Path

from results import runfile
from results.runfile import RunFileError
from results.schema import excerpt

from plots import labels

REPO = Path(__file__).resolve().parent.parent
RUNS_DIR = REPO / "results" / "runs"
# where a report of several runs goes by default: a directory of its own,
# never one run's report/ (which `make bench-all` wrote for that run alone)
REPORTS_DIR = REPO / "results" / "reports"
REFERENCE_DIR = REPO / "results" / "reference"
MAX_ERRORS_SHOWN = 5


class InputError(Exception):
    """Input the report cannot use that is not a run file's problem
    (those raise RunFileError); the message says what to do."""


@dataclasses.dataclass
class Run:
    """The rows of one machine from one results file."""
    path: Path            # the results.jsonl file
    rows: list[dict]
    label: str = ""       # unique among the report's runs (labels.unique_labels)

    @property
    def machine(self) -> dict:
        return self.rows[0]["machine"]

    @property
    def run_id(self) -> str:
        return self.rows[0]["run_id"]

    @property
    def date(self) -> str:
        return self.rows[0]["timestamp"][:10]

    @property
    def emulated(self) -> bool:
        return labels.is_emulated(self.machine)


def read_rows(path: Path) -> list[dict]:
    """The rows of a JSON Lines file, after validating every row."""
    return runfile.load(path, max_errors=MAX_ERRORS_SHOWN).rows


def load_runs(args) -> list["Run"]:
    """One Run per (file, machine), in the order given, labelled uniquely."""
    if not args:
        raise InputError("no run given")
    runs = []
    for arg in args:
        path = runfile.locate(arg)
        by_machine: dict[str, list[dict]] = {}
        for row in read_rows(path):
            by_machine.setdefault(json.dumps(row["machine"], sort_keys=True), []).append(row)
        runs += [Run(path, rows) for rows in by_machine.values()]
    names = labels.unique_labels([r.machine for r in runs], [r.run_id for r in runs])
    for run, name in zip(runs, names):
        run.label = name
    return runs


def default_run() -> Path:
    """The newest run: the directory results/runs/latest points at now
    (resolved, so that the report names that run, not a link that the
    next run moves)."""
    latest = RUNS_DIR / "latest"
    if not latest.exists():
        raise InputError(f"{latest}: no run yet (make bench-all writes one)")
    return latest.resolve()


def default_out(run_args, reports_dir: Path = REPORTS_DIR, now=None) -> Path:
    """One run: <run dir>/report for a run directory, <file's dir>/report
    for a file. Several: a new directory reports_dir/<UTC time>-<n>-runs
    (a suffix -2, -3, ... when it exists), so that a comparison never
    overwrites the report of one of its runs."""
    run_args = list(run_args)
    if len(run_args) == 1:
        path = Path(run_args[0])
        return (path if path.is_dir() else path.parent) / "report"
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    out = reports_dir / f"{stamp}-{len(run_args)}-runs"
    k = 2
    while out.exists():
        out = reports_dir / f"{stamp}-{len(run_args)}-runs-{k}"
        k += 1
    return out


def load_references(directory=REFERENCE_DIR) -> list[dict]:
    """Every published row of results/reference/*.jsonl (validated); an empty
    list when the directory does not exist."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.glob("*.jsonl")):
        rows = read_rows(path)
        for line, row in enumerate(rows, 1):
            if row["harness"] != "reference":
                raise RunFileError(f"{path}:{line}: harness: a reference file holds only "
                                   f"harness \"reference\" rows, not {excerpt(row['harness'])}",
                                   path)
        found += rows
    return found


def source_label(row: dict) -> str:
    """The citation part of a reference row's source: everything before the
    first ": " ("Raffin & Trystram 2024, Table III (AMD EPYC 7702)")."""
    return row["source"].split(": ", 1)[0]
