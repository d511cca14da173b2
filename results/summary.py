"""What make bench-all prints at its end (issue 32): the latency table, one
line per route and placement with the harnesses side by side, the ratio
criterion / gbench and the agreement verdict (results/agreement.py); the
experiment tables (plots/terminal.py); the findings (results/findings.py).
Every row of the run stays in results.jsonl and the report; none is printed
twice here.

    path     op     target    cpu→target  gbench (95% CI)          criterion (95% CI)       c/g   agreement  note
    -------  -----  --------  ----------  -----------------------  -----------------------  ----  ---------  ----
    msr-dev  pread  0x611     0→0         1.83 µs (1.69–2.37 µs)   2.36 µs (1.84–2.52 µs)   1.29  unclear    [1]
"""

from pathlib import Path

from results import agreement, findings, liveness
from results.table import (DASH, cpus, median_and_interval, row_notes, shorten, shown_target,
                           sort_key)

HARNESSES = ("gbench", "criterion", "kbench")
VERDICT_WORDS = {agreement.AGREE: "agree", agreement.DIFFER: "differ",
                 agreement.UNCLEAR: "too noisy"}


def _cell(row) -> str:
    median, ci = median_and_interval(row)
    return median if ci == DASH else f"{median} ({ci})"


def _group_key(row) -> tuple:
    return (row.get("path"), row.get("op"), shown_target(row), row.get("cpu"),
            row.get("target_cpu"), row.get("target_state"))


def latency_lines(rows) -> list[dict[str, dict]]:
    """The latency rows as lines of {harness: row}, in table order; a second
    row of one harness on one line's key starts a line of its own."""
    lines: list[dict[str, dict]] = []
    index: dict[tuple, int] = {}
    for row in sorted((r for r in rows if r.get("metric") == "latency"), key=sort_key):
        at = index.get(_group_key(row))
        if at is None or row.get("harness") in lines[at]:
            index[_group_key(row)] = len(lines)
            lines.append({})
            at = len(lines) - 1
        lines[at][row.get("harness")] = row
    return lines


def format_latency_table(rows, footnotes: dict[str, int] | None = None) -> str:
    """The latency rows as an aligned text table, its notes marked: stand-ins,
    dead counters, reasons of rows not ok, rows not resolved. The footnotes
    follow it, unless `footnotes` (text -> number) is given to collect them
    with other tables' (format_footnotes prints them)."""
    own = footnotes is None
    footnotes = {} if own else footnotes
    lines = latency_lines(rows)
    harnesses = [h for h in HARNESSES if any(h in line for line in lines)]
    compared = {"gbench", "criterion"} <= set(harnesses)
    header = ["path", "op", "target", "cpu→target", *(f"{h} (95% CI)" for h in harnesses),
              *(["c/g", "agreement"] if compared else []), "note"]
    right = {f"{h} (95% CI)" for h in harnesses} | {"c/g"}
    body = []
    for line in lines:
        first = next(iter(line.values()))
        texts = dict.fromkeys(text for row in line.values() for _, text in row_notes(row))
        marks = "".join(f"[{footnotes.setdefault(t, len(footnotes) + 1)}]" for t in texts)
        cells = [first.get("path") or DASH, first.get("op") or DASH,
                 shorten(shown_target(first)), cpus(first),
                 *(_cell(line[h]) if h in line else "" for h in harnesses)]
        if compared:
            g, c = line.get("gbench"), line.get("criterion")
            if g and c and g["status"] == c["status"] == "ok" and g.get("median"):
                verdict = agreement.judge(g, c)
                cells += [f"{verdict.ratio:.2f}", VERDICT_WORDS[verdict.kind]]
            else:
                cells += ["", ""]
        body.append([*cells, marks])
    widths = [max(len(cells[i]) for cells in [header, *body]) for i in range(len(header))]

    def render(cells):
        return "  ".join(c.rjust(w) if name in right else c.ljust(w)
                         for name, c, w in zip(header, cells, widths)).rstrip()

    out = ["Latency per read (median of the blocks, 95% CI); c/g: criterion / gbench",
           render(header), render(["-" * w for w in widths]), *map(render, body)]
    if compared:
        out += [f"agreement: the 95% CI of c/g within ±{agreement.PERCENT}% (agree), "
                "outside it (differ), or too wide to tell (too noisy); agreement.md in the "
                "run directory says why"]
    if any(liveness.predates_probe(row) for row in rows):
        out += [f"Schema 1 rows: {liveness.PREDATES_NOTE}."]
    if own and footnotes:
        out += ["", format_footnotes(footnotes)]
    return "\n".join(out) + "\n"


def format_footnotes(footnotes: dict[str, int]) -> str:
    return "\n".join(f"[{n}] {text}" for text, n in footnotes.items())


def format_summary(rows, run_dir=None) -> str:
    """The end of make bench-all: the latency table, the experiment tables
    of the run in `run_dir` (none without it, or where the report's tables
    cannot be made: the reason instead), one list of footnotes, the
    findings."""
    footnotes: dict[str, int] = {}
    parts = [format_latency_table(rows, footnotes)]
    if run_dir is not None:
        try:
            from plots import terminal  # noqa: PLC0415 (matplotlib only when printing)
            parts.append(terminal.experiment_tables(rows, Path(run_dir) / "results.jsonl",
                                                    footnotes))
        except Exception as e:  # noqa: BLE001 (the run is written: say why, go on)
            parts.append(f"(the experiment tables could not be made: {type(e).__name__}: {e}; "
                         "the report has them, make report)\n")
    if footnotes:
        parts.append(format_footnotes(footnotes) + "\n")
    parts.append(findings.format_findings(findings.of(rows)) + "\n")
    return "\n".join(parts)
