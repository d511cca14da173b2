"""The LaTeX tables: the renderer's decisions (no TeX needed), then every
table of fixture reports compiled by pdflatex into a one-column and a
two-column article with 1-inch margins, with no error, no overfull box and no
float taller than the page."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from plots import report, tables_latex
from plots.fixtures import AMD, INTEL, KVM_FROZEN, KVM_VICTIM
from plots.runs import load_runs
from plots.tables import Notes, Table
from plots.tables_latex import (PREAMBLE, TEXT_WIDTH_PT, _tex_cell, chunks, column_spec,
                                latex_escape, layout, to_latex)
from plots.test_tables import sample_table


def wide_table(rows: int = 4) -> Table:
    """A latency-like table whose note and target columns are far too long
    for one line."""
    notes = Notes()
    body = [[f"path{i}", "/sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/energy_uj",
             "0→0", "1.23 µs", "1.20–1.30 µs", "10",
             "stand-in for the package energy counter, read through the same kernel "
             f"route as the real one would be {notes.mark('a note')}"] for i in range(rows)]
    return Table(name="w", key="w", title="Wide", caption="A table wider than a page.",
                 columns=["path", "target", "cpu→target", "median", "95% CI", "n", "note"],
                 align="lllrrrl", body=body, footnotes=notes.list(), csv_columns=[], records=[])


# ---- the renderer ----------------------------------------------------------------------

def test_latex_is_booktabs_escaped_and_ascii():
    tex = to_latex([sample_table()])
    tex.encode("ascii")  # every non-ASCII character spelled in LaTeX
    # a caption may break after a dash or an arrow as well as between words
    assert (r"\caption{Latency\_of \#1 \& 50\% of \$. $\mu$s $\to$\penalty50{} ns, "
            r"2--\penalty50{}3 $\times$ faster}") in tex
    assert r"\begin{tabular}{llrl}" in tex and r"\toprule" in tex and r"\midrule" in tex
    assert r"msr-dev & energy\_uj\textbar{}x & --- & unavailable\textsuperscript{1} \\" in tex
    assert r"perf & power/energy-pkg/ & 1.23 $\mu$s & stand-in\textsuperscript{2} \\" in tex
    assert r"\textsuperscript{1}\,unavailable: /\penalty50{}dev" in tex
    assert r"\label{tab:raplbench-t-1}" in tex
    assert r"\begin{table*}" in tex  # spans both columns of a two-column paper


def test_latex_escape():
    assert latex_escape(r"a_b#c%d&e$f{g}h~i^j\k") == \
        r"a\_b\#c\%d\&e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k"
    assert latex_escape("café ≥ 2 — ok") == r"cafe $\geq$ 2 --- ok"
    assert latex_escape("…/rx_bytes") == r"\ldots{}/rx\_bytes"
    assert latex_escape("with − without, δ") == r"with $-$ without, $\delta$"
    assert tables_latex.dropped("a − b ✓ é") == {"✓"}
    # OT1, LaTeX's default font encoding, prints these as "¡", "¿" and a dash
    assert latex_escape("p < 0.001 | x > y") == r"p \textless{} 0.001 \textbar{} x \textgreater{} y"


def test_a_table_that_fits_stays_a_plain_tabular():
    lay = layout(sample_table())
    assert lay.plain and not any(lay.wrap)
    assert column_spec(sample_table(), lay) == "llrl"


def test_long_text_columns_wrap_in_tabularx_and_numbers_stay_fixed():
    t = wide_table()
    lay = layout(t)
    assert not lay.plain
    wrapped = [c for c, x in zip(t.columns, lay.wrap) if x]
    assert "note" in wrapped
    assert not {"cpu→target", "median", "n"} & set(wrapped)
    spec = column_spec(t, lay)
    shares = [float(s) for s in re.findall(r"\\hsize=([\d.]+)\\hsize", spec)]
    assert len(shares) == len(wrapped) and sum(shares) == pytest.approx(len(wrapped), abs=0.01)
    assert r">{\raggedright\arraybackslash" in spec
    tex = to_latex([t])
    assert r"\begin{tabularx}{\linewidth}" in tex and r"\end{tabularx}" in tex


def test_a_path_longer_than_the_page_wraps_after_its_slashes():
    t = wide_table()
    for row in t.body:
        row[1] = "/sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:0/" * 3
    lay = layout(t)
    assert lay.wrap[1] and lay.inside_words
    assert r"intel-rapl/\penalty50{}intel-rapl:0" in to_latex([t])


def test_a_long_header_over_a_narrow_column_is_stacked():
    t = wide_table()
    t.columns[5] = "repetitions behind the median"
    tex = to_latex([t])
    assert r"\begin{tabular}[b]{@{}r@{}}" in tex
    assert "repetitions behind the median" not in tex  # on two lines or more


def test_a_header_line_starting_with_a_bracket_is_not_an_argument_of_the_line_break():
    t = wide_table()
    t.columns[5] = "[VM] ÷ reference Intel Xeon Platinum 8581C"
    tex = to_latex([t])
    assert r"\\[" not in tex


def test_a_table_taller_than_a_page_is_split_with_its_caption_label_and_notes_once():
    t = wide_table(rows=120)
    pieces = chunks(t, layout(t))
    assert len(pieces) > 1 and sum(map(len, pieces)) == 120
    assert [row for piece in pieces for row in piece] == t.body  # in order
    sizes = [len(p) for p in pieces]
    assert max(sizes) - min(sizes) <= max(sizes) // 2  # about the same height
    tex = to_latex([t])
    assert tex.count(r"\begin{table*}") == len(pieces)
    assert tex.count(r"\caption{") == 1 and tex.count(r"\label{") == 1
    assert tex.count(r"(continued)\par") == len(pieces) - 1
    assert tex.count(r"\textsuperscript{1}\,a note") == 1
    assert tex.rindex(r"\textsuperscript{1}\,a note") > tex.rindex(r"\begin{table*}")


def test_the_header_comment_names_the_packages():
    tex = to_latex([sample_table()])
    for package in re.findall(r"\\usepackage\{(\w+)\}", PREAMBLE):
        assert rf"%   \usepackage{{{package}}}" in tex


# ---- compiled by pdflatex ----------------------------------------------------------------

REPORTS = {
    "amd": [AMD], "intel": [INTEL], "kvm-frozen": [KVM_FROZEN], "kvm-victim": [KVM_VICTIM],
    "kvm-victim+kvm-frozen": [KVM_VICTIM, KVM_FROZEN],
    "intel+amd+kvm-victim": [INTEL, AMD, KVM_VICTIM],
}
LAYOUTS = {"one-column": r"\documentclass{article}",
           "two-column": r"\documentclass[twocolumn]{article}"}
INSTALL = "install texlive-latex-base texlive-latex-recommended, or run make deps-test"
MARKER = "RAPLBENCH-TABLE"


def need_tex():
    if not shutil.which("pdflatex") or not shutil.which("kpsewhich"):
        pytest.skip(f"pdflatex not found: {INSTALL}")
    styles = ["booktabs.sty", "tabularx.sty", "geometry.sty"]
    found = subprocess.run(["kpsewhich", *styles], capture_output=True, text=True).stdout
    missing = [s for s in styles if s not in found]
    if missing:
        pytest.skip(f"LaTeX packages missing ({', '.join(missing)}): {INSTALL}")


def document(documentclass: str, tex_files: list[Path]) -> str:
    """Every table of a report in one article, a page each, each announced
    in the log so a complaint can be traced to its table."""
    lines = [documentclass, r"\usepackage[letterpaper,margin=1in]{geometry}", PREAMBLE,
             r"\begin{document}", rf"\typeout{{textwidth=\the\textwidth}}"]
    for tex in tex_files:
        lines += [rf"\typeout{{{MARKER} {tex.name}}}", rf"\input{{{tex.name}}}", r"\clearpage"]
    lines += [rf"\typeout{{{MARKER} (end)}}", r"\end{document}"]
    return "\n".join(lines) + "\n"


def complaints(log: str) -> list[str]:
    """Errors, boxes more than 1pt too wide or tall, floats too large for
    the page: each with the table it came from."""
    found, table = [], "(preamble)"
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(MARKER):
            table = line[len(MARKER):].strip()
        elif line.startswith("!"):
            found.append(f"{table}: {' '.join(lines[i:i + 3])}")
        elif m := re.search(r"Overfull \\[hv]box \(([\d.]+)pt too (wide|high)\)", line):
            if float(m.group(1)) > 1.0:
                found.append(f"{table}: {line.strip()}")
        elif "Float too large for page" in line:
            found.append(f"{table}: {line.strip()}")
    return found


@pytest.mark.parametrize("name", list(REPORTS))
def test_every_table_compiles_within_the_text_width(name, tmp_path, refs):
    out = tmp_path / "report"  # the tables alone: the same as a whole report's (test_report.py)
    report.build(load_runs(REPORTS[name]), refs, out, draw=False)
    tex_files = sorted(out.glob("*.tex"))
    assert tex_files
    # every character of the tables reaches the LaTeX (checked without TeX too)
    lost = {f.name: "".join(sorted(tables_latex.dropped(f.read_text(encoding="utf-8"))))
            for f in sorted(out.glob("*.md"))}
    assert not {k: v for k, v in lost.items() if v}, f"characters LaTeX would drop: {lost}"
    need_tex()
    problems = latex_problems(out, tex_files, name)
    assert not problems, f"report of {name} ({out}):\n" + "\n".join(problems)


def latex_problems(out: Path, tex_files: list[Path], name: str) -> list[str]:
    """Compiles every table of the report in `out` into a one- and a
    two-column article: its errors, overfull boxes and oversized floats."""
    problems = []
    for layout_name, documentclass in LAYOUTS.items():
        doc = out / f"all-{layout_name}.tex"
        doc.write_text(document(documentclass, tex_files), encoding="ascii")
        try:
            run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                                  doc.name], cwd=out, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{name}, {layout_name}: pdflatex took over 60 s")
        log = doc.with_suffix(".log").read_text(encoding="latin-1")
        width = re.search(r"^textwidth=([\d.]+)pt", log, re.M)
        assert width and float(width.group(1)) == pytest.approx(TEXT_WIDTH_PT, abs=0.01)
        problems += [f"{layout_name}: {p}" for p in complaints(log)]
        if run.returncode and not problems:
            problems.append(f"{layout_name}: pdflatex exit {run.returncode}: {run.stdout[-500:]}")
        assert f"{MARKER} (end)" in log or problems
    return problems


def test_complaints_name_the_table_and_ignore_a_point_or_less():
    log = "\n".join([f"{MARKER} latency.tex", r"Overfull \hbox (0.5pt too wide) in alignment",
                     f"{MARKER} machines.tex", r"Overfull \hbox (100.2pt too wide) in paragraph",
                     "LaTeX Warning: Float too large for page by 12.0pt on input line 9.",
                     f"{MARKER} sampler.tex", "! Undefined control sequence.", "l.3 \\foo", ""])
    found = complaints(log)
    assert len(found) == 3
    assert found[0].startswith("machines.tex: Overfull") and "100.2pt" in found[0]
    assert found[1].startswith("machines.tex: LaTeX Warning: Float too large")
    assert found[2].startswith("sampler.tex: ! Undefined control sequence. l.3")


def test_digit_groups_stay_on_one_line():
    assert _tex_cell("1 358 057 reads") == "1~358~057 reads"
