"""Whether a run directory holds a finished run (issue 30).

bench-all writes `incomplete.json` into a run directory before its first
step and removes it only once results.jsonl is written and validated; so
a run directory that has one is not a finished run, whatever else it
holds:

    {"state": "running",     "pid": 1234, "started": "2026-11-26T17:02:09Z"}
    {"state": "interrupted", "pid": 1234, "started": ..., "signal": "SIGINT",
     "step": "overhead"}
    {"state": "failed",      "pid": 1234, "started": ..., "reason": "..."}

A "running" marker whose process is gone is a run that was killed
(SIGKILL, out of memory, a reboot): nothing else could have stopped it
without rewriting the marker. `incomplete_reason` words each state for
people; the gate, the baseline, the report and the validator refuse such
a run with it (results/runfile.py), and bench-all never points `latest`
at it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from results import files

MARKER = "incomplete.json"


def _write(run_dir: Path, state: dict) -> None:
    files.write_atomic(Path(run_dir) / MARKER, json.dumps(state, indent=2) + "\n")


def begin(run_dir: Path, started: str) -> dict:
    """Marks `run_dir` as a run in progress of this process; its state."""
    state = {"state": "running", "pid": os.getpid(), "started": started}
    _write(run_dir, state)
    return state


def _ended(run_dir: Path, state: dict) -> None:
    """The marker of a run that ended without completing, written on the
    way out: where it cannot be written (a full disk), the "running" one
    stays, whose dead process says as much."""
    with contextlib.suppress(OSError):
        _write(run_dir, state)


def interrupted(run_dir: Path, state: dict, signal_name: str, step: str | None) -> None:
    """Marks the run as stopped by `signal_name` during `step` (None:
    between steps)."""
    _ended(run_dir, {**state, "state": "interrupted", "signal": signal_name, "step": step})


def failed(run_dir: Path, state: dict, reason: str) -> None:
    """Marks the run as given up (for `reason`: a full disk, ...)."""
    _ended(run_dir, {**state, "state": "failed", "reason": reason})


def finish(run_dir: Path) -> None:
    """The run is complete: its marker goes."""
    (Path(run_dir) / MARKER).unlink(missing_ok=True)


def _alive(pid) -> bool:
    """Whether `pid` is a bench-all still running (not a process that
    reused the number of a dead one)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"results.bench_all" in cmdline


def incomplete_reason(run_dir) -> str | None:
    """None for a run directory without a marker; else why its run is not
    a finished run, in words for people (no path: the caller names it)."""
    marker = Path(run_dir) / MARKER
    try:
        text = marker.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"incomplete run ({MARKER} unreadable: {e.strerror or e})"
    try:
        state = json.loads(text)
        kind = state["state"]
    except (ValueError, KeyError, TypeError):
        return f"incomplete run ({MARKER} is damaged)"
    started = state.get("started", "?")
    if kind == "interrupted":
        step = state.get("step")
        where = f"during its {step} step" if step else "between steps"
        return (f"the run started at {started} was interrupted by {state.get('signal', '?')} "
                f"{where}: it is incomplete; run make bench-all again")
    if kind == "failed":
        return (f"the run started at {started} failed: {state.get('reason', '?')}; "
                "it is incomplete")
    pid = state.get("pid")
    if _alive(pid):
        return f"the run started at {started} is still in progress (pid {pid})"
    return (f"the run started at {started} did not finish: its process (pid {pid}) ended "
            "without completing it (killed, or the machine restarted); it is incomplete")


def newer_incomplete(latest) -> list[tuple[Path, str]]:
    """(run directory, incomplete_reason) of each run beside `latest` (a
    runs directory's `latest` link) that started after the run it points
    at and did not complete, oldest first: what a user who interrupted a
    run must be told before a tool quietly takes `latest` instead."""
    latest = Path(latest)
    if not latest.is_symlink():
        return []
    newest_complete = latest.resolve().name
    newer = [d for d in sorted(latest.parent.glob("2*")) if d.name > newest_complete and d.is_dir()]
    return [(d, why) for d in newer if (why := incomplete_reason(d)) is not None]
