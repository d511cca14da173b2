"""The guardian: kills what bench-all started when bench-all dies without
doing so itself (issue 30: a SIGKILLed run left raplbench-interfere
running, re-parented to init, writing into the dead run's directory).

bench-all starts every child in a session of its own (results/child.py),
so that Ctrl-C at the terminal reaches bench-all alone and bench-all
decides how each child stops. A child in its own session is no longer
bench-all's process group, so nothing of the kernel's kills it when
bench-all is killed. The guardian does: a small process of its own
session, started first, that reads "+PGID" and "-PGID" lines on its
stdin as children start and end. Only bench-all holds the pipe's write
end, so the guardian reads end of file when bench-all exits, however it
exits (SIGKILL and the out-of-memory killer included), and then kills
each process group still listed, with SIGKILL. When bench-all ended
normally the list is empty and the guardian just exits.

    python -m results.guardian      (stdin: the pipe; started by Guardian)

A child that bench-all is killed in the microseconds between its fork and
its "+PGID" line escapes; nothing else does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys


def kill_groups(groups) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def main() -> int:
    # the terminal's signals never reach this session; a SIGTERM or SIGHUP
    # meant for the run must not end the guardian before it has done its job
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    for line in sys.stdin.buffer:
        try:
            pgid = int(line[1:])
        except ValueError:
            continue
        if line.startswith(b"+"):
            groups.add(pgid)
        elif line.startswith(b"-"):
            groups.discard(pgid)
    kill_groups(groups)
    return 0


class Guardian:
    """The guardian of this process's children: `add` and `discard` tell it
    of a child's process group. Once this process exits, it kills the
    groups still added."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "results.guardian"],
                                     stdin=subprocess.PIPE, start_new_session=True,
                                     cwd=os.path.dirname(os.path.dirname(
                                         os.path.abspath(__file__))))

    def _say(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # the guardian is gone: nothing to tell
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()

    def add(self, pgid: int) -> None:
        self._say(f"+{pgid}")

    def discard(self, pgid: int) -> None:
        self._say(f"-{pgid}")

    def close(self) -> None:
        """Ends the guardian (it kills what is still added) and waits for it."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


if __name__ == "__main__":
    sys.exit(main())
