"""SIGINT, SIGTERM and SIGHUP during a run (issue 30): the first one raises
Interrupted in the main thread, wherever it is, so that the step's
children are stopped on the way out (results/child.py) and the run is
marked interrupted (results/run_state.py); a second one ends bench-all at
once (the guardian, results/guardian.py, then kills the children).

Interrupted is a BaseException, like KeyboardInterrupt, so that the
`except Exception` that turns a failed step into error rows never takes
it for a failure of the step. Cleanup code can still replace it with an
ordinary exception (a `finally` that stops a sampler which had died of
the same signal); `check` re-raises it wherever a step's exception is
caught, from what the handler recorded.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_received: int | None = None
_last_words = None  # called before a second signal ends the process
_deferring = 0       # inside deferred(): a first signal is raised at its end
_pending = False     # a first signal taken inside deferred(), not raised yet


class Interrupted(BaseException):
    """The run was stopped by a signal; `status` is the shell's 128 + signal."""

    def __init__(self, signum: int):
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.status = 128 + signum
        super().__init__(f"interrupted by {self.name}")


def _handler(signum, frame):
    global _received, _pending
    if _received is None:
        _received = signum
        if _deferring:
            _pending = True
            return
        raise Interrupted(signum)
    name = signal.Signals(signum).name
    print(f"bench-all: {name} again: stopping at once", file=sys.stderr, flush=True)
    if _last_words is not None:
        with contextlib.suppress(BaseException):  # the process ends whatever happens here
            _last_words(signum)
    os._exit(128 + signum)


def _quiet_when_interrupted(unraisable, previous):
    """Where Python cannot raise (an at-fork handler such as logging's
    _releaseLock after subprocess's fork, a __del__), it prints the
    exception as "Exception ignored ... Traceback". An Interrupted there is
    not lost, the handler recorded it and `check` raises it again, so it is
    not printed either; anything else is, as before."""
    if not isinstance(unraisable.exc_value, Interrupted):
        previous(unraisable)


def install(last_words=None) -> dict:
    """Takes SIGINT, SIGTERM and SIGHUP (main thread only). `last_words`
    (signum) runs before a second signal ends the process. Returns the
    handlers it replaced, for `restore`."""
    global _last_words, _received
    _received, _last_words = None, last_words
    replaced = {sig: signal.signal(sig, _handler) for sig in SIGNALS}
    replaced["unraisablehook"] = sys.unraisablehook
    sys.unraisablehook = lambda u: _quiet_when_interrupted(u, replaced["unraisablehook"])
    return replaced


def restore(previous: dict) -> None:
    """Puts back the handlers `install` replaced (bench-all called from
    Python, as the tests do, leaves its caller's handlers as they were) and
    forgets the signal taken: the run it stopped is over, and a later
    `check` in the same process (the next test) is not about it."""
    global _last_words, _received, _pending
    _last_words, _received, _pending = None, None, False
    previous = dict(previous)
    sys.unraisablehook = previous.pop("unraisablehook", sys.unraisablehook)
    for sig, handler in previous.items():
        signal.signal(sig, handler)


@contextlib.contextmanager
def deferred():
    """A first stop signal taken inside is raised at its end, not inside:
    for a child that must not be half-started (subprocess.Popen raising
    after its fork leaves the child running, known to nobody: child.spawn).
    A second signal still ends the process at once."""
    global _deferring, _pending
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    if _deferring == 0 and _pending:
        _pending = False
        raise Interrupted(_received)


def check() -> None:
    """Raises Interrupted when a stop signal was taken: for code that caught
    whatever replaced it."""
    if _received is not None:
        raise Interrupted(_received)
