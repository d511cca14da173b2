"""One run at a time per checkout (issue 30): an exclusive flock(2) on
`<runs dir>/.lock`, held from the start of `make bench-all` (before the
build) to its end; a second run exits (status 2) naming the running one,
whose pid, start and command the lock file holds, or waits (`--wait`).
Why, and what a user sees: results/README.md, "Stopping a run, two runs
at once, a full disk".

    python3 -m results.run_lock [--wait] [--runs-dir DIR] [--what TEXT] -- COMMAND ...

takes the lock and execs COMMAND (make's bench-all target: the build, the
run and its report), which inherits it. The inherited descriptor is named
in RAPLBENCH_RUN_LOCK ("FD:PATH"), so that bench-all, run under it, knows
its lock is held and does not take it again (python -m results.bench_all
run by hand takes it itself). Standard library only: it runs before the
venv exists.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import sys
import time
from pathlib import Path

LOCK_NAME = ".lock"
ENV = "RAPLBENCH_RUN_LOCK"
DEFAULT_RUNS_DIR = Path(__file__).resolve().parent / "runs"


class Busy(Exception):
    """Another run holds the lock; str(): who, for people; `pid` its
    process (None when the lock file does not say)."""

    def __init__(self, who: str, pid: int | None = None):
        super().__init__(who)
        self.pid = pid


def lock_path(runs_dir) -> Path:
    return Path(runs_dir) / LOCK_NAME


def _read_holder(fd: int) -> dict:
    try:
        raw = os.pread(fd, 4096, 0)
        holder = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (OSError, ValueError):
        holder = {}
    return holder if isinstance(holder, dict) else {}


def describe(holder: dict) -> str:
    """The run that holds the lock, in words: "run 20261126T172000Z-ab12
    (pid 4242, started 2026-11-26T17:20:00Z: make bench-all QUICK=1)"."""
    parts = [f"pid {holder['pid']}" if holder.get("pid") else None,
             f"started {holder['started']}" if holder.get("started") else None]
    detail = ", ".join(p for p in parts if p)
    if holder.get("command"):
        detail += (": " if detail else "") + holder["command"]
    head = f"run {holder['run_id']}" if holder.get("run_id") else "a run"
    return f"{head} ({detail})" if detail else head


def update(fd: int, **fields) -> None:
    """Adds `fields` to what the lock file says of its holder (best effort:
    a lock file this user may only read keeps what it said)."""
    holder = {**_read_holder(fd), **fields}
    with contextlib.suppress(OSError):
        data = (json.dumps(holder) + "\n").encode("utf-8")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except PermissionError:  # another user's lock file: flock needs reading only
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def acquire(runs_dir, wait: bool = False, command: str = "") -> int:
    """Takes the lock of `runs_dir`: its descriptor (close-on-exec). Busy
    when another run holds it and not `wait`; with `wait`, says on stderr
    whom it waits for, then waits."""
    path = lock_path(runs_dir)
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(fd)
        if not wait:
            os.close(fd)
            pid = holder.get("pid")
            raise Busy(describe(holder), pid if isinstance(pid, int) else None) from None
        print(f"bench-all: waiting for {describe(holder)} to finish (lock {path})",
              file=sys.stderr, flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)
    update(fd, pid=os.getpid(), command=command, run_id=None,
           started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return fd


def inherited(runs_dir) -> int | None:
    """The descriptor of `runs_dir`'s lock when an ancestor took it and
    passed it down (RAPLBENCH_RUN_LOCK), else None."""
    text = os.environ.get(ENV, "")
    fd_text, _, path = text.partition(":")
    if not fd_text.isdigit() or not path:
        return None
    fd = int(fd_text)
    try:
        mine, want = os.fstat(fd), os.stat(lock_path(runs_dir))
    except OSError:
        return None
    if (mine.st_dev, mine.st_ino) != (want.st_dev, want.st_ino):
        return None
    return fd


def take(runs_dir, wait: bool = False, command: str = "") -> int:
    """The lock of `runs_dir`: inherited, or taken now (acquire)."""
    fd = inherited(runs_dir)
    return fd if fd is not None else acquire(runs_dir, wait, command)


def not_taken(runs_dir, e: Busy | KeyboardInterrupt | OSError) -> int:
    """Says on stderr why the lock of `runs_dir` was not taken (e, raised
    while taking it) and returns the exit status."""
    if isinstance(e, Busy):
        print(f"bench-all: another run is in progress in this checkout: {e}. Two runs at once "
              "slow each other down and neither measures this machine alone. Wait for it "
              f"(make bench-all WAIT=1 waits), or stop it (kill -TERM {e.pid or 'PID'}); lock: "
              f"{lock_path(runs_dir)}", file=sys.stderr)
        return 2
    if isinstance(e, KeyboardInterrupt):  # Ctrl-C while it waited (--wait): nothing started yet
        print("\nbench-all: stopped waiting for the run lock; no run was made", file=sys.stderr)
        return 130
    print(f"bench-all: cannot take the run lock {lock_path(runs_dir)}: {e.strerror or e}",
          file=sys.stderr)
    return 2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m results.run_lock",
                                     description="Run COMMAND holding the checkout's run lock.")
    parser.add_argument("--wait", action="store_true", help="wait for a running run to end")
    parser.add_argument("--runs-dir", type=Path, default=DEFAULT_RUNS_DIR)
    parser.add_argument("--what", help="the command as the lock file names it (default: COMMAND)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no COMMAND to run")
    try:
        fd = acquire(args.runs_dir, args.wait, args.what or " ".join(command))
    except (Busy, KeyboardInterrupt, OSError) as e:
        return not_taken(args.runs_dir, e)
    os.set_inheritable(fd, True)
    os.environ[ENV] = f"{fd}:{lock_path(args.runs_dir)}"
    try:
        os.execvp(command[0], command)
    except OSError as e:
        print(f"bench-all: cannot run {command[0]}: {e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
