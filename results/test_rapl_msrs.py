"""The RAPL MSR table: the reader of kbench/rapl_msrs.h, and issue 31's
"at most three source files hold a table of RAPL MSR addresses: the header,
and a reader where a language cannot include it" kept true."""

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

from results import rapl_msrs

REPO = Path(__file__).resolve().parent.parent
HEADER = "kbench/rapl_msrs.h"
# Source files allowed three or more RAPL addresses on code lines, and why.
ALLOWED = {
    HEADER: "the table",
    "plots/transcribe_references.py": "a paper's Table 3 as printed: the MSRs "
                                      "Diamond & Stoico timed are their data",
}
RAPL = {m.addr for m in rapl_msrs.MSRS if m.kind != "REFERENCE"}
HEX = re.compile(r"\b0x([0-9a-f_]+)\b", re.IGNORECASE)
C_LIKE = (".c", ".h", ".cc", ".cpp", ".hpp", ".rs")


def test_the_header_reads_as_one_row_per_msr():
    msrs = rapl_msrs.MSRS
    assert len({m.addr for m in msrs}) == len({m.name for m in msrs}) == len(msrs) >= 12
    for vendor in ("INTEL", "AMD"):
        assert [m.hex for m in msrs if m.vendor == vendor and m.kind == "UNIT"] \
            == {"INTEL": ["0x606"], "AMD": ["0xc0010299"]}[vendor]
    energy = {m.hex: (m.domain, m.label) for m in msrs if m.kind == "ENERGY"}
    assert energy["0x611"] == energy["0xc001029b"] == ("package", "PKG energy")
    assert energy["0x619"] == ("dram", "DRAM energy")
    assert all(m.domain == "" for m in msrs if m.kind != "ENERGY")
    assert rapl_msrs.LABELS["0x19c"] == "thermal status"


def test_a_row_of_the_wrong_shape_is_refused():
    assert rapl_msrs.parse('\tRAPL_MSR(X, 0x1f, AMD, UNIT, "", "R", "unit") \\\n')[0].hex == "0x1f"
    with pytest.raises(ValueError):
        rapl_msrs.parse('\tRAPL_MSR(X, 0x1f, AMD, UNIT, "", "R") \\\n')


def code(path: str, text: str) -> str:
    """The code of a source file: no comments, no docstrings, no Rust tests."""
    if path.endswith(".py") or text.startswith("#!") and "python" in text.split("\n", 1)[0]:
        docs = {node.body[0].value.lineno for node in ast.walk(ast.parse(text))
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and node.body and isinstance(node.body[0], ast.Expr)
                and isinstance(node.body[0].value, ast.Constant)}
        return " ".join(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                        if t.type != tokenize.COMMENT
                        and not (t.type == tokenize.STRING and t.start[0] in docs))
    if path.endswith(C_LIKE):
        text = text.split("#[cfg(test)]", 1)[0] if path.endswith(".rs") else text
        return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL))
    return re.sub(r"#[^\n]*", "", text)  # shell and other scripts


def rapl_addresses(path: str, text: str) -> set[int]:
    return {int(h.replace("_", ""), 16) for h in HEX.findall(code(path, text))} & RAPL


def sources() -> list[str]:
    """git's files, tests, fixtures, docs and data aside (the issue's count)."""
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    out = []
    for f in files:
        if re.search(r"test|fixtures|testdata", f) or not (REPO / f).is_file():
            continue
        if f.endswith(C_LIKE + (".py", ".sh")) or (REPO / f).read_bytes()[:2] == b"#!":
            out.append(f)
    return out


def test_only_the_header_holds_a_table_of_rapl_addresses():
    tables = {f for f in sources()
              if len(rapl_addresses(f, (REPO / f).read_text(errors="replace"))) >= 3}
    assert HEADER in tables  # the scan sees a table where there is one
    assert tables <= set(ALLOWED), (
        f"{sorted(tables - set(ALLOWED))} hold a table of RAPL MSR addresses: "
        f"read {HEADER} instead (C: include it; Rust: rbench::msr; Python: results.rapl_msrs)")
    assert len(ALLOWED) <= 3


def test_the_scan_ignores_comments_docstrings_and_rust_tests():
    py = '"""0x611 0x639 0x641"""\n# 0x619 0x64d\nX = {"0x611": 1, "0x639": 2}\n'
    assert rapl_addresses("a.py", py) == {0x611, 0x639}
    rs = "/// 0x611\nconst A: u32 = 0xC001_029B; // 0x639\n#[cfg(test)]\nmod t { 0x641 }\n"
    assert rapl_addresses("a.rs", rs) == {0xC001029B}
    c = "/* 0x611\n * 0x639 */ int a = 0x64d; int b = 0x10;\n"
    assert rapl_addresses("a.c", c) == {0x64D}
