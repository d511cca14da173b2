"""A step of bench-all: what it knows of the run it feeds (Run), and the
rows that stand for a step that gave none (failed_rows, run_step): a step
that crashes, hangs or fails never aborts the run."""

import dataclasses
import traceback
from pathlib import Path

from results import child, files, interrupt, rows


@dataclasses.dataclass
class Run:
    """What a harness step needs to know about the run it feeds."""
    run_dir: Path
    raw_dir: Path
    quick: bool
    common: dict          # schema_version, run_id, timestamp, machine
    build_dir: Path
    tsc_khz_hints: list = dataclasses.field(default_factory=list)
    # {mechanism: stand_in} of the mechanisms the sampler could run here
    sampler_mechanisms: dict | None = None
    # the sampler step's rows (their targets name each mechanism's counters)
    sampler_rows: list = dataclasses.field(default_factory=list)
    # seconds the step running now may take (bench_all.run_steps)
    step_budget_s: float | None = None
    # --tool NAME='command ... {period_ms} ...': the user's own tools (tools.Tool)
    user_tools: tuple = ()


def failed_rows(run: Run, harness: str, paths, reason: str, status="error") -> list[dict]:
    """One row per path of a harness that could not produce its own rows."""
    return [rows.not_ok_row(run.common, harness=harness, path=p, op="*", metric="latency",
                            reason=reason, status=status) for p in paths]


def failure_reason(run: Run, name: str, e: Exception) -> str:
    """Why step `name` gave no rows, for its error rows: its child hung
    (child.TimedOut), or it raised (a bug, a parse error), its traceback
    then kept in raw/<name>-crash.log. Not for what ends the whole run: a
    signal (an exception that replaced it: interrupt.check) or storage
    that fails (no later step could write either: files.DiskError)."""
    interrupt.check()
    if files.is_storage_error(e):
        raise files.storage_error(e, run.raw_dir)
    if isinstance(e, child.TimedOut):
        print(f"  {name}: {e}", flush=True)
        return f"the {name} step stopped: {e}"
    log = run.raw_dir / f"{name}-crash.log"
    log.write_text(traceback.format_exc(), encoding="utf-8")
    print(f"  {name}: crashed: {type(e).__name__}: {e} (traceback in {log})", flush=True)
    return (f"the {name} step crashed ({type(e).__name__}: {e}); a bug in "
            f"raplbench: please report it with {log}")


def run_step(run: Run, name: str, step, stands_for: tuple) -> list[dict]:
    """A step's rows; a step that raises or whose child hung becomes error
    rows saying which (failure_reason), so that the other steps' rows are
    still written. `stands_for` is (harness, paths): the rows a failed
    step stands for."""
    try:
        return step(run)
    except Exception as e:  # noqa: BLE001 - any failure of one step, by design
        harness, paths = stands_for
        return failed_rows(run, harness, paths, failure_reason(run, name, e))
