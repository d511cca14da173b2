"""One run at a time per checkout (results/run_lock.py)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from results import run_lock

pytestmark = pytest.mark.serial  # times waits on the run lock (conftest.py)

REPO = Path(__file__).resolve().parent.parent


def test_a_held_lock_is_refused_with_its_holder(tmp_path):
    fd = run_lock.acquire(tmp_path, command="make bench-all QUICK=1")
    run_lock.update(fd, run_id="20261126T170000Z-0001")
    try:
        with pytest.raises(run_lock.Busy) as got:
            run_lock.acquire(tmp_path)
        assert str(got.value).startswith("run 20261126T170000Z-0001 (pid ")
        assert str(got.value).endswith(": make bench-all QUICK=1)")
    finally:
        os.close(fd)
    os.close(run_lock.acquire(tmp_path))  # free again once its holder closed it


def test_the_lock_goes_with_its_holder_however_it_ends(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom results import run_lock\n"
         f"run_lock.acquire({str(tmp_path)!r})\nprint('held', flush=True)\ntime.sleep(60)"],
        cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    with pytest.raises(run_lock.Busy):
        run_lock.acquire(tmp_path)
    holder.kill()
    holder.wait()
    os.close(run_lock.acquire(tmp_path))


def test_run_lock_runs_a_command_that_inherits_the_lock(tmp_path):
    probe = ("import os\nfrom results import run_lock\n"
             f"print(run_lock.inherited({str(tmp_path)!r}) is not None)")
    done = subprocess.run([sys.executable, "-m", "results.run_lock", "--runs-dir", str(tmp_path),
                           "--", sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True)
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr
    fd = run_lock.acquire(tmp_path, command="the other run")
    try:
        done = subprocess.run([sys.executable, "-m", "results.run_lock", "--runs-dir",
                               str(tmp_path), "--", "true"], cwd=REPO, capture_output=True,
                              text=True)
    finally:
        os.close(fd)
    assert done.returncode == 2
    assert "another run is in progress" in done.stderr and "the other run" in done.stderr


def test_ctrl_c_while_waiting_for_the_lock_is_one_line(tmp_path):
    fd = run_lock.acquire(tmp_path, command="the other run")
    try:
        waiting = subprocess.Popen(
            [sys.executable, "-m", "results.run_lock", "--wait", "--runs-dir", str(tmp_path),
             "--", "true"], cwd=REPO, stderr=subprocess.PIPE, text=True,
            # as from a terminal: a test run started in the background (`&`) has
            # SIGINT ignored, which Python would keep, and the child never stop
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert "waiting for a run" in waiting.stderr.readline()
        waiting.send_signal(signal.SIGINT)
        err = waiting.stderr.read()
        assert waiting.wait(timeout=30) == 130
    finally:
        os.close(fd)
    assert err.strip() == "bench-all: stopped waiting for the run lock; no run was made"
