"""The ksample module (kbench/ksample.h: the in-kernel sampler behind the
sampler's `kernel` mechanism, Diamond & Stoico's Ref_Rapl_Kernel design),
loaded for as long as a kernel-mechanism run needs it and always unloaded
after:

    with ksample_module.loaded(raw_dir / "ksample.log") as not_loaded:
        if not_loaded is not None:
            ...  # rows with not_loaded.status ("unavailable" or "error") and .reason
        else:
            ...  # raplbench-sample --mechanism kernel

`kbench/load ksample` builds the module against the running kernel and
inserts it; exit status 3 with a last stderr line "unavailable: <reason>"
means this machine cannot load it (results/README.md, `ksample_module.py`,
has the rest). Leaving the block runs `rmmod ksample` whenever this process
loaded it, also when the load itself was interrupted or failed after
insmod (the module is then in /proc/modules, where it was not before). A
module someone else loaded is never removed. A failing rmmod does not hide
the run's rows: it is printed and kept in the log.

`around(mechanism, log)` is `loaded(log)` for the kernel mechanism and a
no-op (None) for every other.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Iterator

from results import child

NAME = "ksample"
MECHANISM = "kernel"  # the sampler mechanism that needs the module (results/schema.json)
REPO = Path(__file__).resolve().parent.parent
LOAD = [str(REPO / "kbench" / "load"), NAME]
RMMOD = ["rmmod", NAME]
PROC_MODULES = Path("/proc/modules")
EXIT_UNAVAILABLE = 3  # kbench/load: this machine cannot load it
UNAVAILABLE_PREFIX = "unavailable: "


@dataclasses.dataclass(frozen=True)
class NotLoaded:
    """Why the module is not loaded: status "unavailable" (this machine
    cannot load it) or "error" (it should have loaded and did not), and the
    reason for the rows, in words a person can act on."""
    status: str
    reason: str


def is_loaded() -> bool:
    """Whether /proc/modules lists the module (False without /proc/modules)."""
    try:
        text = PROC_MODULES.read_text(encoding="utf-8")
    except OSError:
        return False
    return any(line.split(" ", 1)[0] == NAME for line in text.splitlines())


def _log(log: Path | None, text: str) -> None:
    if log is not None:
        with open(log, "a", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")


def load(log: Path | None = None) -> NotLoaded | None:
    """Runs kbench/load ksample: None when it loaded the module, else why not."""
    try:
        done = child.run(LOAD, capture_output=True, text=True)
    except child.TimedOut as e:
        return NotLoaded("error", f"loading the {NAME} module (kbench/load {NAME}): {e}")
    except OSError as e:
        return NotLoaded("error", f"cannot run kbench/load {NAME}: {e}")
    _log(log, f"$ {' '.join(LOAD)}\n(exit {done.returncode})\n{done.stdout}{done.stderr}")
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or [""])[-1].strip()
    if done.returncode == EXIT_UNAVAILABLE and last.startswith(UNAVAILABLE_PREFIX):
        return NotLoaded("unavailable", f"the {NAME} module cannot be loaded here: "
                                        f"{last.removeprefix(UNAVAILABLE_PREFIX)}")
    return NotLoaded("error", f"kbench/load {NAME} exited with status {done.returncode}: "
                              f"{last or 'no message'} (see the log)")


def unload(log: Path | None = None) -> str | None:
    """rmmod ksample: None when it went, else why not (printed and logged)."""
    try:
        # a session of its own: a Ctrl-C that interrupts the run must not
        # also kill the rmmod that cleans up after it
        done = child.run(RMMOD, capture_output=True, text=True)
    except (OSError, child.TimedOut) as e:
        why = f"{' '.join(RMMOD)}: {e}"
    else:
        _log(log, f"$ {' '.join(RMMOD)}\n(exit {done.returncode})\n{done.stdout}{done.stderr}")
        if done.returncode == 0:
            return None
        why = (f"{' '.join(RMMOD)} exited with status {done.returncode}: "
               f"{done.stderr.strip() or 'no message'}")
    why += f"; the {NAME} module is still loaded: remove it by hand (rmmod {NAME})"
    _log(log, why)
    print(f"  {MECHANISM}: {why}", flush=True)
    return why


@contextlib.contextmanager
def loaded(log: Path | None = None) -> Iterator[NotLoaded | None]:
    """The module loaded for the block (None), or why it could not be
    (NotLoaded); removed on leaving whenever this call loaded it."""
    before = is_loaded()
    ours = False
    try:
        not_loaded = load(log)
        # loaded by us: it says so, or it appeared while the load ran (a
        # load interrupted or failed after insmod)
        ours = not_loaded is None or (not before and is_loaded())
        yield not_loaded
    finally:
        if not ours and not before and is_loaded():  # the load itself was interrupted
            ours = True
        if ours:
            unload(log)


def around(mechanism: str | None, log: Path | None = None):
    """loaded(log) for the kernel mechanism; for any other, a block that
    yields None and loads nothing."""
    return loaded(log) if mechanism == MECHANISM else contextlib.nullcontext(None)


@contextlib.contextmanager
def around_experiment(registered, mechanisms: dict, log: Path):
    """The module around an experiment over `mechanisms` ({mechanism:
    stand_in} of those that sample here) among the `registered` ones,
    loaded for the block where the kernel mechanism is among them. Yields
    (the mechanisms to run: without the kernel one where the module did not
    load, why_not), why_not(m) being (reason, status) for a registered
    mechanism that did not run; the module's own reason is also printed."""
    not_loaded: NotLoaded | None = None
    if MECHANISM in registered and MECHANISM not in mechanisms:
        with loaded(log) as not_loaded:  # only to learn why not; removed at once
            pass
    with around(MECHANISM if MECHANISM in mechanisms else None, log) as why_not_loaded:
        if why_not_loaded is not None:
            not_loaded = why_not_loaded
            mechanisms = {m: s for m, s in mechanisms.items() if m != MECHANISM}

        def why_not(m: str) -> tuple[str, str]:
            if m == MECHANISM and not_loaded is not None:
                print(f"  {m}: {not_loaded.status}: {not_loaded.reason}", flush=True)
                return not_loaded.reason, not_loaded.status
            return "the sampler cannot sample here (see its sampler row)", "unavailable"
        yield mechanisms, why_not
