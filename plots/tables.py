"""Tables fit to cite: one model, rendered as Markdown, CSV and HTML here, as
LaTeX (booktabs) in plots/tables_latex.py.

A Table has display cells (strings; "—" where there is no number, never a
number for a row that is not ok) and CSV records (raw numbers in base units,
empty where there is none). A cell may carry footnote marks written
"[^1]" or "[^1,3]"; each renderer turns them into its own form ([1],
\\textsuperscript{1}, <sup>). Footnote texts are numbered per table in order
of first use and shared by identical texts.

Tables with the same `name` go to the same files (latency.md, latency.csv,
latency.tex): one table per machine, one CSV in long form.
"""

import csv
import dataclasses
import html
import io
import re

from results import markdown
from results.table import DASH

MARK = re.compile(r"\[\^(\d+(?:,\d+)*)\]")


@dataclasses.dataclass
class Table:
    name: str                   # file stem: latency, reference, machines, sampler, ...
    key: str                    # unique in the report (LaTeX label, HTML id)
    title: str
    caption: str
    columns: list[str]
    align: str                  # "l" or "r" per column
    body: list[list[str]]
    footnotes: list[str]
    csv_columns: list[str]
    records: list[dict]


class Notes:
    """Footnotes of one table: mark(text) gives "[^k]", numbered in order of
    first use, one number per distinct text."""

    def __init__(self):
        self.texts: dict[str, int] = {}

    def number(self, text: str) -> int:
        return self.texts.setdefault(text, len(self.texts) + 1)

    def mark(self, *texts: str) -> str:
        numbers = sorted({self.number(t) for t in texts if t})
        return f"[^{','.join(map(str, numbers))}]" if numbers else ""

    def list(self) -> list[str]:
        return list(self.texts)


def with_mark(text: str, mark: str) -> str:
    return f"{text} {mark}" if mark else text


# ---- Markdown ----------------------------------------------------------------------

def _marks(text: str) -> str:
    """Footnote marks as Markdown shows them: "[^3]" -> "[3]"."""
    return MARK.sub(lambda m: f"[{m.group(1)}]", text)


def to_markdown(tables: list[Table]) -> str:
    out = []
    for t in tables:
        out += [f"### {t.title}", "", t.caption, ""]
        out += markdown.table([_marks(c) for c in t.columns],
                              [[_marks(c) for c in row] for row in t.body], t.align)
        if t.footnotes:
            out.append("")
            out += [f"- [{i}] {markdown.cell(_marks(text))}"
                    for i, text in enumerate(t.footnotes, 1)]
        out.append("")
    return "\n".join(out)


# ---- CSV -------------------------------------------------------------------------------

def _csv_value(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return value


def to_csv(tables: list[Table]) -> str:
    """The records of every table (they share the columns of the first)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=tables[0].csv_columns, lineterminator="\n")
    writer.writeheader()
    for t in tables:
        for record in t.records:
            writer.writerow({k: _csv_value(record.get(k)) for k in t.csv_columns})
    return buf.getvalue()


# ---- HTML ------------------------------------------------------------------------------

# The words that mark a row's status in a note cell ("stand-in [^2]"), and
# the class that colours them in index.html (htmlpage.STYLE): a word is a
# mark only where a footnote mark follows it.
HTML_MARK_CLASSES = {"stand-in": "stand-in", "frozen": "frozen", "no-unit": "frozen"}
_WORD_BEFORE_MARK = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, HTML_MARK_CLASSES))
                               + r") $")


# A space after a digit, before a digit group or a unit ("1 321 121", "1.15 µs",
# "0.99 %"): a no-break space in HTML, so that a narrow column never splits a number.
_SPACE_IN_NUMBER = re.compile(r"(?<=\d) (?=[\w%×])")


def _html_text(text: str) -> str:
    return _SPACE_IN_NUMBER.sub("&nbsp;", html.escape(text))


def _html_before_mark(text: str) -> str:
    word = _WORD_BEFORE_MARK.search(text)
    if not word:
        return _html_text(text)
    return (_html_text(text[:word.start()])
            + f'<span class="{HTML_MARK_CLASSES[word.group(1)]}">{word.group(1)}</span> ')


def _html_cell(text: str) -> str:
    pieces = MARK.split(text)  # text, marks' numbers, text, ..., text
    return "".join(_html_before_mark(before) + f'<sup class="mark">[{numbers}]</sup>'
                   for before, numbers in zip(pieces[::2], pieces[1::2])) \
        + _html_text(pieces[-1])


def to_html(t: Table) -> str:
    """One table with its caption and footnotes, for index.html."""
    align = {"l": "left", "r": "right"}
    out = [f'<table id="table-{html.escape(t.key)}">',
           f"<caption><b>{html.escape(t.title)}.</b> {html.escape(t.caption)}</caption>",
           "<thead><tr>" + "".join(
               f'<th style="text-align:{align[a]}" scope="col">{_html_cell(c)}</th>'
               for c, a in zip(t.columns, t.align)) + "</tr></thead>",
           "<tbody>"]
    for row in t.body:
        cells = []
        for c, a in zip(row, t.align):
            cls = ' class="dash"' if c == DASH else ""
            cells.append(f'<td style="text-align:{align[a]}"{cls}>{_html_cell(c)}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    if t.footnotes:
        out.append('<ol class="notes">' + "".join(
            f'<li value="{i}">{html.escape(text)}</li>' for i, text in enumerate(t.footnotes, 1))
            + "</ol>")
    return "\n".join(out)
