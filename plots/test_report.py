"""The report of two stored fixture machines (an Intel and an AMD server):
every file, PNG sizes, unavailable rows as "—" with their footnote,
stand-ins, cycles, captions, machines side by side, index.html, and the
command line (its sampler side: test_report_sampler.py)."""

import base64
import csv
import io
import json
import re
import struct

import pytest

from plots import figures, labels, report
from plots.fixtures import AMD, INTEL, emulated_copy
from plots.runs import Run, load_runs
from results import rows as rows_mod
from results.schedule import STEPS

INTEL_LABEL = "Intel Xeon Gold 6330"
AMD_LABEL = "AMD EPYC 7702 64-Core"

EXPECTED_FILES = {
    "index.html", "figures.json",
    "latency-kernel-instructions.png", "latency-user-instructions.png",
    "latency-file-reads.png", "latency-perf-ebpf.png",
    "ladder-intel-xeon-gold-6330.png", "ladder-amd-epyc-7702-64-core.png",
    "reference.png", "machines.png", "sampler.png", "overhead.png",
    *(f"{name}.{ext}" for name in ("latency", "reference", "reference-overhead",
                                   "reference-design", "machines", "sampler",
                                   "ladder-tests", "overhead-tests", "machines-tests")
      for ext in ("md", "csv", "tex")),
}

# (width, height) in pixels: figsize x 100 dpi, fixed by each figure's inputs.
EXPECTED_SIZES = {
    "latency-kernel-instructions.png": (1200, 840),   # two machines: 2.4 + 2 x 3.0 in
    "latency-user-instructions.png": (1200, 840),
    "latency-file-reads.png": (1200, 840),
    "latency-perf-ebpf.png": (1200, 840),
    "ladder-intel-xeon-gold-6330.png": (1100, 850),
    "ladder-amd-epyc-7702-64-core.png": (1100, 850),
    "reference.png": (1200, 848),                     # 14 published quantities
    "machines.png": (1200, 1294),                     # 31 routes measured on both machines
    "sampler.png": (1200, 500),
    "overhead.png": (1200, 560),
}


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    return struct.unpack(">II", data[16:24])


def md_table(text, title_end):
    """(header cells, body rows, footnotes {n: text}) of the Markdown table
    whose title ends with title_end."""
    blocks = [b for b in text.split("### ") if b.strip()]
    block = next(b for b in blocks if b.splitlines()[0].endswith(title_end))
    lines = block.splitlines()
    table = [l for l in lines if l.startswith("|")]
    cells = [[c.strip() for c in l.strip("|").split(" | ")] for l in table]
    notes = dict(re.findall(r"^- \[(\d+)\] (.*)$", block, re.M))
    return cells[0], cells[2:], notes


def test_every_file_is_written(built):
    out, result = built
    assert {p.name for p in out.iterdir()} == EXPECTED_FILES
    assert set(result["files"]) == EXPECTED_FILES


def test_the_tables_alone_are_the_whole_reports_tables(built, tmp_path):
    """--tables-only (draw=False): every table file of the whole report, the
    same bytes, and nothing else."""
    out, _ = built
    result = report.main([str(INTEL), str(AMD), "--out", str(tmp_path), "--tables-only"])
    assert result == 0
    tables = {p.name for p in out.iterdir() if p.suffix in (".md", ".csv", ".tex")}
    assert {p.name for p in tmp_path.iterdir()} == tables
    for name in tables:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name


def test_pngs_are_non_empty_and_of_the_expected_size(built):
    out, result = built
    manifest = {m["file"]: m for m in json.loads((out / "figures.json").read_text())}
    assert set(manifest) == set(EXPECTED_SIZES)
    for name, size in EXPECTED_SIZES.items():
        assert (out / name).stat().st_size > 20_000, name
        assert png_size(out / name) == size, name
        assert (manifest[name]["width"], manifest[name]["height"]) == size
    assert figures.pixels(figures.latency_size(2)) == EXPECTED_SIZES["latency-file-reads.png"]
    from plots.report_tables_compare import machine_quantities
    keys, per_run = machine_quantities(load_runs([INTEL, AMD]))
    both = [k for k in keys if all(k in f and f[k]["status"] == "ok" for f in per_run)]
    assert figures.pixels(figures.machines_size(len(both))) == EXPECTED_SIZES["machines.png"]
    assert figures.pixels(figures.reference_size(14)) == EXPECTED_SIZES["reference.png"]


def test_unavailable_rows_are_a_dash_with_their_footnote(built):
    out, _ = built
    header, body, notes = md_table((out / "latency.md").read_text(), INTEL_LABEL)
    col = {name: i for i, name in enumerate(header)}
    row = next(r for r in body if r[col["op"]] == "rdmsr:0x641")
    assert row[col["median"]] == row[col["95% CI"]] == row[col["n"]] == "—"
    mark = re.fullmatch(r"unavailable \[(\d+)\]", row[col["note"]])
    assert mark, row
    assert notes[mark.group(1)].startswith("unavailable: rdmsr 0x641 faults on this CPU")
    # no row that is not ok shows a number
    for r in body:
        if "unavailable" in r[col["note"]] or "error" in r[col["note"]]:
            assert r[col["median"]] == "—" and r[col["cycles"]] == "—"

    tex = (out / "latency.tex").read_text()
    line = next(l for l in tex.splitlines() if l.startswith("kinsn & rdmsr:0x641"))
    k = re.search(r"unavailable\\textsuperscript\{(\d+)\}", line).group(1)
    assert line.count("---") >= 4
    assert f"\\textsuperscript{{{k}}}\\,unavailable: rdmsr 0x641 faults" in tex

    records = list(csv.DictReader(io.StringIO((out / "latency.csv").read_text())))
    rec = next(r for r in records if r["op"] == "rdmsr:0x641" and r["machine"] == INTEL_LABEL)
    assert rec["status"] == "unavailable" and rec["median_ns"] == "" and "faults" in rec["reason"]

    page = (out / "index.html").read_text()
    assert '<td style="text-align:right" class="dash">—</td>' in page
    assert "unavailable: rdmsr 0x641 faults on this CPU" in page


def test_stand_ins_are_footnoted_with_the_substitute(built):
    out, _ = built
    header, body, notes = md_table((out / "latency.md").read_text(), AMD_LABEL)
    col = {name: i for i, name in enumerate(header)}
    row = next(r for r in body if r[col["path"]] == "msr-dev" and r[col["harness"]] == "gbench"
               and r[col["cpu→target"]] == "0→0")
    assert row[col["median"]].endswith("ns")  # a stand-in is a measurement: shown, marked
    k = re.fullmatch(r"stand-in \[(\d+)\]", row[col["note"]]).group(1)
    assert notes[k].startswith("stand-in: /dev/cpu/0/msr missing")
    assert "/dev/cpu/0/cpuid" in notes[k]


def test_cycles_where_the_kernel_module_counted_them(built, runs):
    out, _ = built
    header, body, _ = md_table((out / "latency.md").read_text(), INTEL_LABEL)
    col = {name: i for i, name in enumerate(header)}
    row = next(r for r in body if r[col["op"]] == "rdmsr:0x611")
    cycles = next(r for r in runs[0].rows if r["op"] == "rdmsr:0x611" and r["metric"] == "cycles")
    from results.table import sig3
    assert row[col["cycles"]] == sig3(cycles["median"])
    gbench = next(r for r in body if r[col["harness"]] == "gbench")
    assert gbench[col["cycles"]] == "—"


def test_captions_name_machine_kernel_platform_and_date(built):
    out, _ = built
    md = (out / "latency.md").read_text()
    for part in ("Intel Xeon Gold 6330", "Intel(R) Xeon(R) Gold 6330 CPU @ 2.00GHz",
                 "Linux 6.1.0-27-amd64", "bare metal", "2026-11-20", "microcode 0xd0003a5"):
        assert part in md
    tex = (out / "latency.tex").read_text()
    assert r"\caption{Latency per operation, AMD EPYC 7702 64-Core." in tex
    assert "2026-11-21" in tex and r"\toprule" in tex and r"\bottomrule" in tex


def test_published_figures_stand_beside_each_machine(built):
    out, _ = built
    header, body, notes = md_table((out / "reference.md").read_text(),
                                    "Published figures beside this report")
    assert header[3:] == [INTEL_LABEL, "÷ published", AMD_LABEL, "÷ published"]
    row = next(r for r in body if r[0] == "kinsn rdmsr:0x611 (PKG energy)")
    assert row[1] == "557 ns (median of 15)"
    assert row[3].startswith("452 ns") or row[3].startswith("45")  # Intel's kbench rdmsr 0x611
    assert row[4].endswith("×")
    assert re.match(r"— \[\d+\]", row[5])  # AMD: 0x611 faults, with its reason
    amd_perf = next(r for r in body if r[0] == "perf read" and "AMD EPYC 7702" in r[2])
    assert amd_perf[1] == "499.0–499.3 ns (95% CI)"
    assert any("converted to ns per operation (x 10)" in t for t in notes.values())
    records = list(csv.DictReader(io.StringIO((out / "reference.csv").read_text())))
    assert {r["machine"] for r in records} == {INTEL_LABEL, AMD_LABEL}
    rec = next(r for r in records if r["published_op"] == "rdmsr:0x611"
               and r["machine"] == INTEL_LABEL)
    assert float(rec["ratio_local_to_published"]) == pytest.approx(
        float(rec["local_median_ns"]) / 556.8)


def test_machines_side_by_side_with_ratios(built, runs):
    out, _ = built
    header, body, _ = md_table((out / "machines.md").read_text(), "Machines side by side")
    assert header == ["quantity", f"{INTEL_LABEL} (reference)", "n", AMD_LABEL, "n",
                      f"{AMD_LABEL} ÷ reference"]
    row = next(r for r in body if r[0].startswith("kinsn rdmsr PKG energy"))
    assert (row[2], row[4]) == ("10", "10")
    intel = next(r for r in runs[0].rows if r["op"] == "rdmsr:0x611" and r["metric"] == "latency")
    amd = next(r for r in runs[1].rows if r["op"] == "rdmsr:0xc001029b"
               and r["metric"] == "latency")
    from results.table import sig3
    assert row[5] == f"{sig3(amd['median'] / intel['median'])}×"
    records = list(csv.DictReader(io.StringIO((out / "machines.csv").read_text())))
    assert {r["reference_machine"] for r in records} == {INTEL_LABEL}


def test_reference_machine_can_be_chosen(tmp_path, runs, refs):
    assert report.pick_reference(runs, "amd") == 1
    assert report.pick_reference(runs, "2") == 1
    assert report.pick_reference(runs, None) == 0
    with pytest.raises(Exception, match="matches 0 machines"):
        report.pick_reference(runs, "arm")
    assert report.main([str(INTEL), str(AMD), "--out", str(tmp_path),
                        "--reference-machine", "EPYC"]) == 0
    header = (tmp_path / "machines.md").read_text().split("| quantity |")[1].splitlines()[0]
    assert f"{AMD_LABEL} (reference)" in header and f"{INTEL_LABEL} ÷ reference" in header


def test_index_html_is_self_contained(built):
    out, result = built
    page = (out / "index.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<link" not in page and "<script" not in page
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == len(result["figures"])
    assert base64.b64decode(images[0]) == (out / result["figures"][0]["file"]).read_bytes()
    for key in ("table-latency-intel-xeon-gold-6330", "table-reference", "table-machines",
                "table-sampler-amd-epyc-7702-64-core"):
        assert f'id="{key}"' in page


def test_one_run_without_sampler_rows(tmp_path, runs, refs):
    """The newest run alone (the default of make report): no machines table,
    no sampler figures when there are no sampler rows."""
    rows = [r for r in runs[0].rows if r["path"] != "sampler" and r["metric"] == "latency"]
    run = Run(runs[0].path, rows, label=runs[0].label)
    result = report.build([run], refs, tmp_path)
    names = set(result["files"])
    assert "machines.md" not in names and "sampler.png" not in names
    assert "overhead.png" not in names and "sampler.md" not in names
    assert {"latency.md", "latency.csv", "latency.tex", "reference.md", "index.html",
            "reference.png", "ladder-intel-xeon-gold-6330.png"} <= names


def test_emulated_rows_are_never_hardware_figures(tmp_path, runs, refs):
    path = tmp_path / "qemu.jsonl"
    rows_mod.write_jsonl(emulated_copy(runs[0].rows), path)
    both = load_runs([INTEL, path])
    assert both[1].label == f"{INTEL_LABEL} [emulated]"
    result = report.build(both, refs, tmp_path / "out")
    md = (tmp_path / "out" / "latency.md").read_text()
    _, body, notes = md_table(md, f"{INTEL_LABEL} [emulated]")
    assert all("emulated [" in r[-1] for r in body)
    assert any(t.startswith("emulated CPU (qemu-tcg)") for t in notes.values())
    assert "emulated CPU (qemu-tcg): not hardware figures" in md
    fig = figures.latency_figure(both, labels.FAMILIES[0])
    emulated_ax = fig.axes[1]
    assert emulated_ax._left_title.get_color() == figures.EMULATED_COLOR
    assert "emulated CPU" in emulated_ax.get_title(loc="left")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("emulated CPU") for t in legend)
    assert "[emulated]" in (tmp_path / "out" / "machines.md").read_text()
    assert result["figures"]


@pytest.mark.parametrize("argv, message", [
    (["/nonexistent/run"], "/nonexistent/run: no such run directory or results file"),
])
def test_bad_input_exits_2_naming_the_file(capsys, argv, message):
    assert report.main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_directory_without_results_and_an_invalid_file(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert report.main([str(tmp_path / "empty")]) == 2
    assert f"{tmp_path / 'empty'}: not a run directory (no results.jsonl" in capsys.readouterr().err
    bad = tmp_path / "results.jsonl"
    good = (INTEL / "results.jsonl").read_text().splitlines()
    row = json.loads(good[0])
    row["unit"] = "us"  # latency must be in ns
    bad.write_text(good[1] + "\n" + json.dumps(row) + "\n")
    assert report.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: invalid results file" in err and f"{bad}:2: unit:" in err


def test_an_invalid_reference_file_exits_2(tmp_path, capsys):
    (tmp_path / "x.jsonl").write_text((INTEL / "results.jsonl").read_text().splitlines()[0] + "\n")
    assert report.main([str(INTEL), "--out", str(tmp_path / "o"), "--references",
                        str(tmp_path)]) == 2
    assert f"{tmp_path / 'x.jsonl'}:1: harness:" in capsys.readouterr().err


def test_default_is_the_newest_run(tmp_path, monkeypatch, capsys):
    import shutil
    from plots import runs as runs_mod
    run_dir = tmp_path / "runs" / "20261121T143000Z-a3d9c4"
    shutil.copytree(AMD, run_dir)
    (tmp_path / "runs" / "latest").symlink_to(run_dir.name)
    monkeypatch.setattr(runs_mod, "RUNS_DIR", tmp_path / "runs")
    assert report.main([]) == 0
    page = (tmp_path / "runs" / "latest" / "report" / "index.html").read_text()
    # the run it drew, by its own name: `latest` moves with the next run (issue 30)
    assert str(run_dir / "results.jsonl") in page and "latest" not in page
    monkeypatch.setattr(runs_mod, "RUNS_DIR", tmp_path / "none")
    assert report.main([]) == 2
    assert "no run yet" in capsys.readouterr().err


def test_one_run_reports_into_itself_several_into_a_new_directory(tmp_path):
    """Issue 17: a report of several runs overwrote the first run's report/."""
    from datetime import datetime, timezone
    from plots.runs import default_out
    a, b = tmp_path / "run-a", tmp_path / "run-b"
    a.mkdir()
    b.mkdir()
    assert default_out([a]) == a / "report"
    assert default_out([a / "results.jsonl"]) == a / "report"
    now = datetime(2026, 11, 24, 8, 0, 0, tzinfo=timezone.utc)
    reports = tmp_path / "reports"
    first = default_out([a, b], reports, now)
    assert first == reports / "20261124T080000Z-2-runs"
    first.mkdir(parents=True)
    assert default_out([a, b], reports, now) == reports / "20261124T080000Z-2-runs-2"
    assert not (a / "report").exists()


def test_a_full_disk_while_drawing_is_one_line_naming_the_path(tmp_path, monkeypatch, capsys):
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "o" / "x.png"))

    monkeypatch.setattr(report, "build", full)
    assert report.main([str(INTEL), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err == (f"report: {tmp_path / 'o' / 'x.png'}: no space left on device: free some "
                   f"space on its filesystem (df -h) and run again ({tmp_path / 'o'}/ is "
                   "incomplete)\n")


def test_the_findings_open_the_page(built, runs):
    """The findings make bench-all prints last open index.html, one list per
    machine, in the nav; what is not a finding is greyed."""
    from results import findings  # noqa: PLC0415
    page = (built[0] / "index.html").read_text()
    first = page.index('<h2 id="findings">')
    assert first < page.index("<p>How long") and 'href="#findings-2"' in page
    for run in runs:
        for f in findings.of(run.rows):
            assert f.text.replace("'", "&#x27;").replace('"', "&quot;") in page, f.text
    assert 'class="unresolved"' in page


def test_a_header_box_says_what_the_run_is_before_the_findings(built, runs):
    """Issue 33: index.html opens with what a reader must know first: QUICK
    or full, the steps, a busy machine, and no RAPL where every energy route
    is a stand-in or dead. The fixture runs predate the mode; a run that
    records it says it."""
    from plots import htmlpage  # noqa: PLC0415
    page = (built[0] / "index.html").read_text()
    assert page.index('id="about-this-run"') < page.index('<h2 id="findings">')
    assert "Mode and steps not recorded" in page
    run = runs[0]
    common = rows_mod.common("20261127T000000Z-abcdef", "2026-11-27T00:00:00Z", run.machine,
                             quick=True, steps=["gbench", "criterion"])
    stand_in = rows_mod.measured_row(common, harness="gbench", path="powercap", op="pread",
                                     target="/sys/class/net/lo/statistics/rx_bytes", cpu=0,
                                     target_cpu=None, metric="latency", unit="ns",
                                     samples=[300.0] * 10, stand_in="no powercap zone here")
    lines = dict(htmlpage.header_lines(Run(run.path, [stand_in], label="here")))
    assert lines[next(t for t in lines if t.startswith("A QUICK run"))] is True
    assert lines["Steps: gbench, criterion; not run: kbench, sampler, victim, idle, "
                 "overhead."] is True
    assert any(t.startswith("No RAPL here") and warn for t, warn in lines.items())
    full = {**common, "run": {"mode": "full", "steps": list(STEPS)}}
    live = {**stand_in, **full, "path": "perf", "target": "power/energy-pkg/",
            "stand_in": None, "liveness": "live"}
    lines = dict(htmlpage.header_lines(Run(run.path, [live], label="here")))
    assert "A full run (make bench-all)." in lines
    assert f"Steps: {', '.join(STEPS)} (all of them)." in lines
    assert "Live energy counters: power/energy-pkg/." in lines


def test_published_ratios_divide_only_like_by_like(refs):
    """Issue 33: local ÷ published only for the real counter against the real
    one, the same privilege level, bare metal against bare metal; otherwise
    "—" with the reason."""
    from plots import pairing  # noqa: PLC0415
    from plots.fixtures import KVM_VICTIM  # noqa: PLC0415
    from plots.report_tables_compare import reference_table  # noqa: PLC0415
    ref = next(r for r in refs if r["metric"] == "latency")
    metal = {**ref["machine"], "hypervisor": None}
    local = {"status": "ok", "stand_in": None, "machine": metal}
    assert pairing.unlike(ref, local, "same") is None
    assert pairing.unlike(ref, local, "user-space") == ("a user-space instruction against "
                                                        "the paper's kernel loop")
    assert pairing.unlike(ref, {**local, "stand_in": "x"}, "same") == ("a stand-in against "
                                                                      "the real counter")
    assert pairing.unlike(ref, {**local, "machine": {**metal, "hypervisor": "kvm"}},
                          "same") == "a virtual machine (kvm) against bare metal"
    (vm,) = load_runs([KVM_VICTIM])
    table = reference_table([vm], refs)
    ratios = [line[4] for line in table.body if not line[3].startswith("—")]
    assert ratios and all(re.fullmatch(r"— \[\^\d+\]", cell) for cell in ratios), ratios
    assert "no ratio: a stand-in against the real counter" in table.footnotes
    assert all(r["ratio_local_to_published"] is None for r in table.records)


def test_each_section_opens_with_the_question_it_answers(built):
    """Issue 33: the figures come after the findings, each section with a
    one-line question; every section the report draws has one."""
    from plots import htmlpage  # noqa: PLC0415
    page = (built[0] / "index.html").read_text()
    sections = re.findall(r'<h2 id="([^"]+)">', page)
    drawn = [s for s in sections if s not in ("files",) and not s.startswith("findings")]
    assert drawn and set(drawn) <= set(htmlpage.QUESTIONS), drawn
    for s in drawn:
        after = page[page.index(f'<h2 id="{s}">'):]
        question = htmlpage.QUESTIONS[s].replace("'", "&#x27;")
        assert after.index(f'<p class="question">{question}</p>') < after.index("</h2>") + 40
