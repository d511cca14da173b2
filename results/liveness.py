"""Reading the liveness verdict of a row (schema version 2, results/README.md).

The harnesses probe every energy counter where they discover it and write
the verdict into the rows that read it: `liveness` is "live", "frozen",
"no-unit" or null (no energy counter: stand-ins, instructions, overhead,
reference rows), and `liveness_note` says why a counter is not live. Rows of
schema version 1 predate the probe: their verdict is "unknown".

Everything that shows rows (the terminal table, agreement.md, the report, the
gate) reads the verdict through these functions, so that a frozen counter is
named the same way everywhere. The note is displayed, never parsed.
"""

LIVE, FROZEN, NO_UNIT = "live", "frozen", "no-unit"
UNKNOWN = "unknown"   # a schema 1 row: measured before liveness probing
DEAD = (FROZEN, NO_UNIT)

# How each dead verdict is named in footnotes, legends and the gate summary.
DEAD_WORDS = {FROZEN: "frozen counter", NO_UNIT: "no energy unit"}
PREDATES_NOTE = ("verdict unknown: schema 1 rows predate liveness probing, so whether "
                 "their energy counters advanced was not checked")


def verdict(row: dict) -> str | None:
    """LIVE, FROZEN, NO_UNIT, None (no energy counter) or UNKNOWN."""
    return row.get("liveness", UNKNOWN)


def is_dead(row: dict) -> bool:
    """The row reads a counter that yields no energy: frozen or unit-less.
    Its latency is still the route's cost; only the energy is missing."""
    return verdict(row) in DEAD


def predates_probe(row: dict) -> bool:
    return verdict(row) == UNKNOWN


def footnote(row: dict) -> str | None:
    """"frozen counter: <note>" for a dead row, None otherwise."""
    v = verdict(row)
    if v not in DEAD:
        return None
    return f"{DEAD_WORDS[v]}: {row.get('liveness_note') or '(no note)'}"


def tag(row: dict) -> str | None:
    """A short word for a dead row ("frozen", "no-unit"), None otherwise."""
    v = verdict(row)
    return v if v in DEAD else None
