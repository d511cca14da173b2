"""Markdown tables, written in one place: every cell is escaped ("|" as
"\\|", a line break as a space), so that a value holding a pipe (the
sampler's "|interval − period|", a reason quoting a shell pipeline) never
splits its row. The report's tables (plots/tables.py), the gate's summary,
agreement.md, the gbench-effect table and the soak report use it.
"""


def cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header, rows, align: str | None = None) -> list[str]:
    """The lines of a Markdown table: the header, its rule (`align`: one "l"
    or "r" per column, default all left), a line per row of cells."""
    rule = ["---:" if a == "r" else "---" for a in (align or "l" * len(header))]
    return ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join(rule) + "|",
            *("| " + " | ".join(cell(c) for c in row) + " |" for row in rows)]
