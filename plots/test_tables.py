"""The table model's renderings: Markdown, CSV, HTML (LaTeX: test_latex.py)."""

import csv
import io

from plots.report_tables_compare import distinct
from plots.tables import Notes, Table, to_csv, to_html, to_markdown


def sample_table():
    notes = Notes()
    a = notes.mark("unavailable: /dev/cpu/0/msr missing")
    b = notes.mark("stand-in: /dev/cpu/0/cpuid for /dev/cpu/0/msr")
    assert notes.mark("unavailable: /dev/cpu/0/msr missing") == a == "[^1]"
    return Table(
        name="t", key="t-1", title="Latency_of #1 & 50% of $", caption="µs → ns, 2–3 × faster",
        columns=["path", "target", "median", "note"], align="llrl",
        body=[["msr-dev", "energy_uj|x", "—", f"unavailable {a}"],
              ["perf", "power/energy-pkg/", "1.23 µs", f"stand-in {b}"]],
        footnotes=notes.list(), csv_columns=["path", "median_ns", "note"],
        records=[{"path": "msr-dev", "median_ns": None, "note": "x"},
                 {"path": "perf", "median_ns": 1234.5, "note": "y, z"}])


def test_notes_number_distinct_texts_in_order_of_first_use():
    notes = Notes()
    assert notes.mark("b", "a") == "[^1,2]"
    assert notes.mark("a") == "[^2]" and notes.mark() == ""
    assert notes.list() == ["b", "a"]


def test_markdown():
    md = to_markdown([sample_table()])
    assert "### Latency_of #1 & 50% of $" in md
    assert "| msr-dev | energy_uj\\|x | — | unavailable [1] |" in md
    assert "|---|---|---:|---|" in md
    assert "- [1] unavailable: /dev/cpu/0/msr missing" in md
    assert "- [2] stand-in: /dev/cpu/0/cpuid for /dev/cpu/0/msr" in md


def test_csv_has_numbers_and_empty_cells_where_none():
    records = list(csv.DictReader(io.StringIO(to_csv([sample_table()]))))
    assert records == [{"path": "msr-dev", "median_ns": "", "note": "x"},
                       {"path": "perf", "median_ns": "1234.5", "note": "y, z"}]


def test_html_escapes_and_marks():
    page = to_html(sample_table())
    assert '<table id="table-t-1">' in page
    assert "<caption><b>Latency_of #1 &amp; 50% of $.</b>" in page
    assert 'class="dash">—</td>' in page
    assert 'unavailable <sup class="mark">[1]</sup>' in page
    assert '<li value="2">stand-in: /dev/cpu/0/cpuid for /dev/cpu/0/msr</li>' in page


def test_distinct_keeps_published_intervals_apart():
    assert distinct(499.0, 499.3) == ("499.0", "499.3")
    assert distinct(737.6, 737.7) == ("737.6", "737.7")
    assert distinct(1.966, 2.106) == ("1.97", "2.11")
    assert distinct(5.0, 5.0) == ("5.00", "5.00")
