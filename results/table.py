"""How a row's cells read in text, for the terminal (results/summary.py),
the report's tables and the gate: values with 3 significant digits,
nanoseconds scaled to µs/ms/s when large, a median with its 95% CI, the
CPUs, a shortened target, the table order, and the notes said beside a
value (stand-ins; counters that are frozen or have no energy unit, whose
latency is the route's cost but which yield no energy; the reasons of rows
that are not ok; why a row is not resolved).
"""

import math

from results import liveness, meaning, registry
from results.rows import ROLE_WORDS
from results.schedule import TARGET_STATES

PATH_ORDER = registry.PATHS
TARGET_WIDTH = 32
DASH = "—"

# (factor, label) from the largest; a ns value is shown in the first unit it reaches 1 of.
NS_SCALES = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
UNIT_LABELS = {"us": "µs"}


def sig3(x: float) -> str:
    """x with 3 significant digits, never in exponent notation."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    digits = 2 - math.floor(math.log10(abs(x)))  # negative: round to tens, hundreds...
    return f"{round(x, digits):.{max(0, digits)}f}"


def scale_for_unit(unit: str, median: float) -> tuple[float, str]:
    if unit != "ns":
        return 1.0, UNIT_LABELS.get(unit, unit)
    return next(((f, label) for f, label in NS_SCALES if abs(median) >= f), (1.0, "ns"))


def median_and_interval(row) -> tuple[str, str]:
    """(median, CI) cells, both in the scale chosen for the median."""
    if row.get("status") != "ok" or row.get("median") is None:
        return DASH, DASH
    factor, label = scale_for_unit(row["unit"], row["median"])
    median = f"{sig3(row['median'] / factor)} {label}"
    if row.get("ci95_low") is None or row.get("ci95_high") is None:
        return median, DASH
    ci = f"{sig3(row['ci95_low'] / factor)}–{sig3(row['ci95_high'] / factor)} {label}"
    return median, ci


def cpus(row, none: str | None = DASH) -> str | None:
    """Where a row ran and whose counter it read: "0→0", "1→0" (another
    CPU's), "0" (a counter of no CPU), "?→0" (ran anywhere); `none` when
    neither is known ("—" in tables; the gate's labels pass None to leave
    the part out). The one formatter of the latency table, the agreement
    report, the report's tables and the gate."""
    cpu, target = row.get("cpu"), row.get("target_cpu")
    if cpu is None and target is None:
        return none
    if target is None:
        return str(cpu)
    state = f" {row['target_state']}" if row.get("target_state") else ""
    return f"{'?' if cpu is None else cpu}→{target}{state}"


def state_rank(row) -> int:
    """Where a row's target state sorts: none first, then idle, ticking, busy."""
    state = row.get("target_state")
    return 0 if state is None else 1 + list(TARGET_STATES).index(state)


def shown_target(row) -> str | None:
    """The target as tables show it, the role before it (rows.ROLE_WORDS; a
    shortened target keeps them): "null: bare timerfd loop @ 1000 Hz"."""
    target = row.get("target")
    return None if target is None else ROLE_WORDS.get(row.get("role"), "") + target


# Where a shortened target may start: after a path separator or a space, so
# that the cut never falls inside a word ("…lass/net/lo/…" did).
BOUNDARIES = "/ "


def shorten(text, width: int = TARGET_WIDTH) -> str:
    """Keep the end of a long target: the file or event name is there; and
    its beginning if that says what the row is (ROLE_WORDS).
    The kept end starts at a boundary ("…/statistics/rx_bytes"), so it may
    be a little shorter than `width`; a tail with no boundary is cut where
    the width falls."""
    if text is None:
        return DASH
    if len(text) <= width:
        return text
    prefix = next((p for p in ROLE_WORDS.values() if text.startswith(p)), "")
    tail = text[-(width - 1 - len(prefix)):]
    cut = next((i for i, c in enumerate(tail) if c in BOUNDARIES and i > 0), None)
    if cut is not None and tail[0] not in BOUNDARIES and tail[cut - 1] not in BOUNDARIES:
        tail = tail[cut:] if tail[cut] == "/" else tail[cut + 1:]
    return prefix + "…" + tail


def sort_key(row):
    def nulls_last(value):
        return (value is None, value if value is not None else 0)

    path = row.get("path")
    return (PATH_ORDER.index(path) if path in PATH_ORDER else len(PATH_ORDER),
            row.get("op") or "", shown_target(row) or "",
            nulls_last(row.get("cpu")), nulls_last(row.get("target_cpu")), state_rank(row),
            row.get("harness") or "", row.get("metric") or "")


def row_notes(row) -> list[tuple[str, str]]:
    """(word, footnote) of what is said of a row beside its value: its
    stand-in, a dead counter, why it is not ok, why it is not resolved (the
    report's tables add the emulated CPU)."""
    notes, said = [], meaning.of(row)
    if row.get("stand_in"):
        notes.append(("stand-in", f"stand-in: {row['stand_in']}"))
    if said.dead:
        notes.append((liveness.tag(row), liveness.footnote(row)))
    if not said.ok:
        notes.append((row.get("status"), f"{row.get('status')}: {row.get('reason')}"))
    if said.unresolved_note:
        notes.append(("not resolved", said.unresolved_note))
    return notes
