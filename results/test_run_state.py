"""Whether a run directory holds a finished run (results/run_state.py)."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from results import run_state

pytestmark = pytest.mark.serial  # times processes and their signals (conftest.py)


def test_a_run_without_a_marker_is_complete(tmp_path):
    assert run_state.incomplete_reason(tmp_path) is None


def test_an_interrupted_run_says_by_what_and_where(tmp_path):
    state = run_state.begin(tmp_path, "2026-11-26T17:00:00Z")
    run_state.interrupted(tmp_path, state, "SIGINT", "overhead")
    assert run_state.incomplete_reason(tmp_path) == (
        "the run started at 2026-11-26T17:00:00Z was interrupted by SIGINT during its overhead "
        "step: it is incomplete; run make bench-all again")
    run_state.finish(tmp_path)
    assert run_state.incomplete_reason(tmp_path) is None


def test_a_running_marker_of_a_live_bench_all_is_in_progress(tmp_path):
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                              "results.bench_all"])  # its command line names bench-all
    try:
        until = time.monotonic() + 10  # until it runs the new program, not the forked pytest
        while (b"results.bench_all" not in Path(f"/proc/{alive.pid}/cmdline").read_bytes()
               and time.monotonic() < until):
            time.sleep(0.01)
        (tmp_path / run_state.MARKER).write_text(json.dumps(
            {"state": "running", "pid": alive.pid, "started": "2026-11-26T17:00:00Z"}))
        assert run_state.incomplete_reason(tmp_path) == (
            f"the run started at 2026-11-26T17:00:00Z is still in progress (pid {alive.pid})")
    finally:
        alive.kill()
        alive.wait()


def test_a_running_marker_whose_process_is_gone_was_killed(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / run_state.MARKER).write_text(json.dumps(
        {"state": "running", "pid": dead.pid, "started": "2026-11-26T17:00:00Z"}))
    assert "did not finish: its process (pid" in run_state.incomplete_reason(tmp_path)


def test_a_failed_or_damaged_marker_says_so(tmp_path):
    run_state.failed(tmp_path, {"started": "t", "pid": 1}, "the disk is full")
    assert run_state.incomplete_reason(tmp_path) == (
        "the run started at t failed: the disk is full; it is incomplete")
    (tmp_path / run_state.MARKER).write_text("{not json")
    assert run_state.incomplete_reason(tmp_path) == "incomplete run (incomplete.json is damaged)"


def test_runs_interrupted_after_latest_are_named(tmp_path):
    old, done, cut = (tmp_path / name for name in ("20261126T170000Z-aaaaaa",
                                                   "20261126T171000Z-bbbbbb",
                                                   "20261126T172000Z-cccccc"))
    for d in (old, done, cut):
        d.mkdir()
    run_state.interrupted(old, {"started": "t0", "pid": 1}, "SIGINT", "idle")  # before latest
    run_state.interrupted(cut, {"started": "t2", "pid": 1}, "SIGTERM", "victim")
    (tmp_path / "latest").symlink_to(done.name)
    assert run_state.newer_incomplete(tmp_path / "latest") == [
        (cut, "the run started at t2 was interrupted by SIGTERM during its victim step: it is "
              "incomplete; run make bench-all again")]
    assert run_state.newer_incomplete(tmp_path / "none") == []
