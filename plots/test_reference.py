"""results/reference/*.jsonl: valid, exactly the transcription script's
output, faithful to the papers' tables, and lined up with local rows."""

import json
import re
import subprocess
import sys

import pytest

from plots import pairing, transcribe_references as tr
from plots.runs import REFERENCE_DIR, REPO, load_references, source_label
from results.schema import iter_file_errors

PAPERS = REPO.parent / "shared" / "papers"
FILES = sorted(REFERENCE_DIR.glob("*.jsonl"))


def test_the_reference_files_validate_against_the_schema():
    assert [f.name for f in FILES] == ["diamond-stoico-2026.jsonl", "raffin-trystram-2024.jsonl"]
    for path in FILES:
        assert list(iter_file_errors(path)) == [], path
    done = subprocess.run([sys.executable, "-m", "results.validate", *map(str, FILES)],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_files_are_the_transcription_scripts_output(tmp_path):
    written = tr.write(tmp_path)
    for path in written:
        assert path.read_bytes() == (REFERENCE_DIR / path.name).read_bytes(), (
            f"{path.name} differs: run .venv/bin/python -m plots.transcribe_references")


def test_every_row_cites_its_source_and_states_only_what_the_paper_does():
    for row in load_references():
        assert row["harness"] == "reference" and row["status"] == "ok"
        assert row["samples"] == [] and row["stand_in"] is None
        assert row["cpu"] is None and row["target_cpu"] is None
        assert re.match(r"(Diamond & Stoico 2026, Table [13]|Raffin & Trystram 2024, Table III)"
                        r" \(.+\): .+", row["source"])
        stated = {k for k, v in row["machine"].items() if v is not None}
        assert stated <= {"cpu_vendor", "cpu_model_name", "kernel"}
        assert pairing.published_value(row) is not None


def by(op, path=None, source=None):
    return [r for r in load_references() if r["op"] == op and (path is None or r["path"] == path)
            and (source is None or source in source_label(r))]


def test_unit_conversions():
    # Diamond & Stoico Table 3: ms per batch of 100,000 -> ns per operation (x 10)
    (pkg,) = by("rdmsr:0x611")
    assert (pkg["median"], pkg["mean"], pkg["stddev"], pkg["min"], pkg["max"]) == \
        (556.8, 553.7, 13.4, 529.4, 568.9)
    assert (pkg["n"], pkg["iterations"], pkg["target"], pkg["path"]) == (15, 100_000, "0x611", "kinsn")
    (sysfs,) = by("read", "sys-read")
    assert sysfs["median"] == 1357.4
    (nop,) = by("nop")
    assert nop["median"] == 0.3
    # Raffin & Trystram Table III: 95% CI in µs -> ns (x 1000), no point estimate
    (amd,) = by("pread", "powercap", "AMD EPYC 7702")
    assert (amd["ci95_low"], amd["ci95_high"], amd["median"], amd["mean"]) == (6083.0, 6117.0, None, None)
    assert amd["machine"]["cpu_vendor"] == "AuthenticAMD" and amd["machine"]["kernel"] == "4.18.0"
    (laptop,) = by("read", "perf", "laptop")
    assert (laptop["ci95_low"], laptop["ci95_high"]) == (537.1, 538.5)
    assert laptop["machine"]["cpu_vendor"] is None  # the paper does not name the laptop's CPU
    # Diamond & Stoico Table 1: relative overhead in %, as printed
    (cc_ep,) = [r for r in by("CodeCarbon") if r["target"] == "ep"]
    assert (cc_ep["median"], cc_ep["metric"], cc_ep["unit"], cc_ep["path"]) == \
        (46.75, "overhead_pct", "%", "sampler")
    assert len(by("Perf")) == 6 and len([r for r in load_references()
                                         if r["metric"] == "overhead_pct"]) == 42


def test_published_figures_line_up_with_local_rows(runs):
    """Every published latency figure finds the local row it stands beside
    on the Intel fixture machine (a bare-metal Intel server with kbench)."""
    intel = runs[0]
    for ref in load_references():
        if ref["metric"] != "latency":
            continue
        local, how = pairing.best_local(ref, intel.rows)
        assert local is not None and how == "same", ref["source"]
        assert (local["path"], local["op"]) == (ref["path"], ref["op"])
        if ref["op"] != "rdmsr:0x641":  # the server part lacks PP1: unavailable with a reason
            assert local["status"] == "ok", ref["op"]


# ---- against the papers themselves (skipped where ../shared/papers is absent) ----------

def paper(name):
    path = PAPERS / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path.read_text(encoding="utf-8")


def cells(line):
    return [re.sub(r"\\cellcolor[a-z]+!20", "", c).strip() for c in line.strip().strip("|").split("|")]


def test_diamond_stoico_table3_as_printed():
    text = paper("diamond-stoico-2026-rapl-tool-overhead.md")
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("| Statistic | cpuid 0x1 0 |"))
    header = cells(lines[start])[1:]
    stats = {cells(l)[0]: cells(l)[1:] for l in lines[start + 2:start + 10]}
    assert list(stats) == ["mean", "std", "min", "25%", "50%", "75%", "max", "50%/100k"]
    assert header == list(tr.DS_TABLE3)
    for j, heading in enumerate(header):
        _, printed, per_op = tr.DS_TABLE3[heading]
        column = [float(stats[k][j]) for k in ("mean", "std", "min", "25%", "50%", "75%", "max")]
        assert column == list(printed), heading
        assert stats["50%/100k"][j] == per_op, heading


def test_diamond_stoico_table1_relative_overhead_as_printed():
    text = paper("diamond-stoico-2026-rapl-tool-overhead.md")
    rows = [cells(l) for l in text.splitlines() if l.startswith("| 0.00 |")]
    relative = [rows[1], rows[3]]  # each block: absolute overhead (s), then relative (%)
    blocks = (("bt", "cg", "ep"), ("ft", "is", "mg"))
    for values, benches in zip(relative, blocks):
        values = [float(v) for v in values if v]
        assert len(values) == 24
        for k, bench in enumerate(benches):
            assert tuple(values[8 * k:8 * k + 8]) == tr.DS_TABLE1_RELATIVE[bench], bench


def test_raffin_trystram_table3_as_printed():
    text = paper("raffin-trystram-2024-rapl-access-mechanisms.md")
    columns = ("recent laptop", "AMD server", "Intel server")
    assert "| recent laptop  | AMD server       | Intel server     |" in text
    for mechanism, by_machine in tr.RT_TABLE3.items():
        line = next(l for l in text.splitlines()  # Table II also has a "powercap" row
                    if l.startswith(f"| {mechanism} ") and "[" in l)
        printed = re.findall(r"\[([\d.]+), ([\d.]+)\]", line)
        assert [(float(a), float(b)) for a, b in printed] == [by_machine[c] for c in columns]
    assert re.search(r"\| ebpf +\| N/A", text)  # not transcribed: no figure


def test_reference_readme_documents_every_file():
    readme = (REFERENCE_DIR / "README.md").read_text()
    for path in FILES:
        assert path.name in readme
    assert "x 10" in readme and "x 1000" in readme
    first = json.loads(FILES[0].read_text().splitlines()[0])
    assert first["schema_version"] == "3" and first["liveness"] is None
    assert first["role"] == "measured"
