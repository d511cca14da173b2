"""The report's experiment tables as plain text for the terminal: make
bench-all prints them after the latency table (results/summary.py). Each is
the report's own table (plots/report_tables*.py) cut to the columns a
reader needs at a glance, so the terminal and the report never say two
things; every column keeps the report's header, which names its quantity
(the cells carry the unit). Footnotes are numbered across all the terminal's
tables, so a text shared by several tables is printed once.
"""

from pathlib import Path

from plots import report_tables, report_tables_overhead
from plots.runs import Run
from plots.tables import MARK, Table

# (table maker, the columns shown), in the order printed
SHOWN = (
    (report_tables.sampler_table,
     ["mechanism", "target", "cpu→target", "rate", "jitter", "missed ticks", "CPU per tick",
      "CPU above null (95% CI)", "n", "note"]),
    (report_tables_overhead.local_overhead_table,
     ["mechanism", "sampler on", "wall time (95% CI)", "CPU time (95% CI)", "pairs", "note"]),
    (report_tables.victim_table,
     ["route", "cpu→target", "victim", "rate", "stolen per read (95% CI)",
      "victim gap p99 (95% CI) / baseline", "max gap / baseline", "n", "note"]),
    (lambda run: report_tables.victim_table(run, sampler=True),
     ["mechanism", "victim", "rate", "stolen per tick (95% CI)",
      "victim gap p99 (95% CI) / baseline", "max gap / baseline", "n", "note"]),
    (report_tables.idle_cost_table,
     ["mechanism", "frequency", "wakeups/s above baseline (95% CI)",
      "busy % above baseline (95% CI)", "deep idle above baseline (95% CI)", "n", "note"]),
)


def to_text(t: Table, columns: list[str], footnotes: dict[str, int]) -> str:
    """Table `t` with `columns` only (those it has), its marks renumbered
    into `footnotes` (text -> number, shared by all tables, added to)."""
    keep = [i for i, c in enumerate(t.columns) if c in columns]

    def renumber(cell: str) -> str:
        def one(m):
            numbers = (footnotes.setdefault(t.footnotes[int(k) - 1], len(footnotes) + 1)
                       for k in m.group(1).split(","))
            return f"[{','.join(map(str, sorted(set(numbers))))}]"
        return MARK.sub(one, cell)

    header = [t.columns[i] for i in keep]
    body = [[renumber(row[i]) for i in keep] for row in t.body]
    widths = [max(len(cells[j]) for cells in [header, *body]) for j in range(len(keep))]
    align = [t.align[i] for i in keep]

    def render(cells):
        return "  ".join(c.rjust(w) if a == "r" else c.ljust(w)
                         for c, w, a in zip(cells, widths, align)).rstrip()

    title = t.title.rsplit(", ", 1)[0]  # the machine is the run's, said once
    return "\n".join([title, render(header), render(["-" * w for w in widths]),
                      *map(render, body)]) + "\n"


def experiment_tables(rows: list[dict], path: Path, footnotes: dict[str, int]) -> str:
    """The experiment tables that have rows, of one run's `rows` (one
    machine's, validated: bench-all has just written them to `path`; reading
    them back would validate them all again, seconds of jsonschema)."""
    run = Run(path, rows)
    shown = []
    for make, columns in SHOWN:
        table = make(run)
        if table is not None and table.body:
            shown.append(to_text(table, columns, footnotes))
    return "\n".join(shown)
