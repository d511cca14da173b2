"""The child processes of bench-all's steps, each with a time limit
(RAPLBENCH_STEP_LIMIT_S, issue 14; results/README.md, "A run: its steps,
its end", says what a user sees).

Every child starts in a session of its own (`spawn`), so that at its
limit, or when bench-all itself is interrupted, it is killed together with
whatever it started (cargo's benchmark binary, hyperfine's command,
kbench's QEMU), never left running behind the run; Ctrl-C at the terminal
reaches bench-all alone, which stops its children itself. Each child's
process group is told to the guardian (results/guardian.py) while it
runs, which kills it if bench-all dies first (SIGKILL); `kill_all` kills
every group still running on the way out of an interrupted run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from typing import Callable, TextIO

from results import interrupt

LIMIT_ENV = "RAPLBENCH_STEP_LIMIT_S"
DEFAULT_LIMIT_S = 1800.0  # the longest child, Criterion with its build, takes a few minutes


_guardian = None          # results.guardian.Guardian of this process, if any
_running: set[int] = set()  # the process groups of the children running now


def guard(guardian) -> None:
    """Tells `guardian` (None: none) of every child from now on."""
    global _guardian
    _guardian = guardian


def spawn(cmd: list[str], **popen) -> subprocess.Popen:
    """subprocess.Popen(cmd, **popen) in a session of its own, known to the
    guardian until `release`d. A stop signal is raised once the child is
    known (interrupt.deferred): Popen interrupted after its fork would leave
    it running where kill_all cannot see it (an eBPF sampler ran on for its
    whole --duration after a Ctrl-C of the overhead step)."""
    with interrupt.deferred():
        proc = subprocess.Popen(cmd, start_new_session=True, **popen)
        _running.add(proc.pid)
        if _guardian is not None:
            _guardian.add(proc.pid)
    return proc


def release(proc: subprocess.Popen) -> None:
    """`proc` (from spawn) has ended: its group is no longer ours to kill."""
    _running.discard(proc.pid)
    if _guardian is not None:
        _guardian.discard(proc.pid)


def kill_all() -> None:
    """Kills the process group of every child still running (SIGKILL)."""
    for pgid in list(_running):
        kill_group(pgid)
        _running.discard(pgid)


class TimedOut(RuntimeError):
    """A child ran past its limit and was killed, with what it started."""

    def __init__(self, cmd: list[str], limit: float):
        super().__init__(f"{os.path.basename(cmd[0])} did not finish within {limit:g} s "
                         f"({LIMIT_ENV}); it was killed with the processes it started")


def limit_s() -> float:
    """The time limit of one child, seconds."""
    text = os.environ.get(LIMIT_ENV)
    if text is None:
        return DEFAULT_LIMIT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise ValueError(f"{LIMIT_ENV}={text}: a number of seconds > 0")
    return value


def kill_group(pgid: int) -> None:
    """SIGKILL to the process group `pgid`, if it is still there."""
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(pgid, signal.SIGKILL)


def stream(cmd: list[str], log: TextIO, show: Callable[[str], bool] | None = None,
           **popen) -> int:
    """Runs `cmd` with its stdout and stderr into `log`, line by line,
    printing (indented) the lines `show` accepts; returns its exit status.
    Raises TimedOut when it ran past the limit."""
    limit = limit_s()
    proc = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                 **popen)
    fired = threading.Event()  # the limit killed its process group

    def fire() -> None:
        fired.set()
        kill_group(proc.pid)

    watch = threading.Timer(limit, fire)
    watch.daemon = True
    watch.start()
    try:
        for line in proc.stdout:
            log.write(line)
            if show is not None and show(line):
                print("  " + line.strip(), flush=True)
        code = proc.wait()
    except BaseException:  # Ctrl-C included: never leave it running
        kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        watch.cancel()
        release(proc)
    if fired.is_set():
        raise TimedOut(cmd, limit)
    return code


def run(cmd: list[str], check: bool = False, **popen) -> subprocess.CompletedProcess:
    """subprocess.run(cmd, check=check, **popen) with the limit: raises
    TimedOut when it ran past it (its process group killed)."""
    limit = limit_s()
    if popen.pop("capture_output", False):
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with spawn(cmd, **popen) as proc:
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.communicate()
            raise TimedOut(cmd, limit) from None
        except BaseException:
            kill_group(proc.pid)
            proc.wait()
            raise
        finally:
            release(proc)
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done
