"""The report of two stored fixture machines (an Intel and an AMD server):
every file, PNG sizes, unavailable rows as "—" with their footnote,
stand-ins, cycles, captions, machines side by side, index.html."""

import base64
import csv
import io
import json
import re
import struct

import pytest

from plots import figures, labels, report, report_tables
from plots.fixtures import AMD, INTEL, emulated_copy
from plots.runs import Run, load_runs
from results import rows as rows_mod
from results import stats

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


def test_sampler_table_per_mechanism(built):
    out, _ = built
    header, body, notes = md_table((out / "sampler.md").read_text(), AMD_LABEL)
    col = {name: i for i, name in enumerate(header)}
    assert "overhead (95% CI)" not in col  # the overhead table has it
    msr = next(r for r in body if r[col["mechanism"]] == "msr")
    assert msr[col["rate"]] == "—"
    assert "msr module" in notes[re.search(r"\[(\d+)\]", msr[col["note"]]).group(1)]
    perf = next(r for r in body if r[col["mechanism"]] == "perf")
    assert perf[col["rate"]].endswith(" Hz") and perf[col["harness"]] == "sampler"


def test_overhead_table_of_the_older_rows(built):
    """The fixtures' overhead rows predate placements and CPU time: one line
    per mechanism, wall time only."""
    out, _ = built
    header, body, _ = md_table((out / "reference-overhead.md").read_text(), AMD_LABEL)
    col = {name: i for i, name in enumerate(header)}
    perf = next(r for r in body if r[col["mechanism"]] == "perf")
    assert "(" in perf[col["wall time (95% CI)"]] and perf[col["CPU time (95% CI)"]] == "—"
    assert perf[col["sampler on"]] == "—"


def test_overhead_table_shows_placement_cpu_time_resolution_and_the_cost_above_null(tmp_path):
    """An overhead experiment's rows (results/overhead.py) and the
    self-report's "above null" row: one line per mechanism and placement,
    wall and CPU time, the pairs, the sampler's CPU above null, and an
    unresolved row marked "not resolved" with its note."""
    from plots.report_tables_overhead import local_overhead_table
    from results import overhead
    run0 = load_runs([str(AMD)])[0]
    common = {k: run0.rows[0][k] for k in ("schema_version", "run_id", "timestamp", "machine")}
    same = overhead.Placement("same CPU", 1, 1)
    resolved = overhead.Condition("perf", same, wall=[1.0 + 0.01 * i for i in range(40)],
                                  cpu=[0.1] * 40, bare=[(0.25, 0.24)] * 40)
    wide = overhead.Condition("perf", overhead.Placement("other CPU", 0, 1),
                              wall=[(-1) ** i * 5.0 for i in range(40)], cpu=[0.0] * 40,
                              bare=[(0.25, 0.24)] * 40)
    got = (overhead.condition_rows(common, resolved, 297, None, False, 400.0)
           + overhead.condition_rows(common, wide, 297, None, False, 400.0))
    above = rows_mod.measured_row(common, harness="sampler", path="sampler", op="perf",
                                  target="msr/tsc/ @ 1000 Hz", role=rows_mod.ABOVE_NULL,
                                  cpu=None, target_cpu=None, metric="cpu_us_per_sample", unit="us",
                                  samples=[3.0, 3.2, 2.9, 3.1, 3.0, 3.3, 2.8, 3.1, 3.0, 3.2])
    table = local_overhead_table(Run(run0.path, got + [above], label="here"))
    col = {name: i for i, name in enumerate(table.columns)}
    by_place = {line[col["sampler on"]]: line for line in table.body}
    assert set(by_place) == {"same CPU (CPU 1)", "other CPU (CPU 0)"}
    assert by_place["same CPU (CPU 1)"][col["wall time (95% CI)"]] == "1.19 % (1.13–1.26 %)"
    assert by_place["same CPU (CPU 1)"][col["CPU time (95% CI)"]].startswith("0.1")
    assert by_place["same CPU (CPU 1)"][col["pairs"]] == "40"
    assert by_place["same CPU (CPU 1)"][col["CPU/tick above null"]].startswith("3.0")
    assert "not resolved" not in by_place["same CPU (CPU 1)"][col["note"]]
    assert "not resolved" in by_place["other CPU (CPU 0)"][col["note"]]
    assert any("not resolved at this n: 40 pairs gave ±5.00 points" in f for f in table.footnotes)
    records = {(r["placement"], r["time"]): r for r in table.records}
    assert records[("same CPU", "wall time")]["resolved"] is True
    assert records[("other CPU", "CPU time")]["resolved"] is True  # its own CI: all 0.0
    assert records[("other CPU", "wall time")]["resolved"] is False
    assert records[("same CPU", "wall time")]["sampler_cpu_us_above_null"] == 3.05


def with_above_null(run: Run) -> Run:
    """`run` and, for each sampler mechanism that ran, the rows of its self-report
    above its null loop (rate_hz and cpu_us_per_sample: one difference per pair)."""
    extra = []
    for r in run.rows:
        if (r["harness"], r["status"], r["metric"]) == ("sampler", "ok", "rate_hz") \
                and r["op"] != "timer":
            for metric, unit, diffs in (("rate_hz", "Hz", [-0.4, 0.1, 0.2, -0.1, 0.0, 0.3]),
                                        ("cpu_us_per_sample", "us", [2.1, 2.4, 1.9, 2.2, 2.6, 2.0])):
                above = {**r, "role": rows_mod.ABOVE_NULL, "metric": metric, "unit": unit}
                above.update(stats.summarize(diffs), samples=diffs, n=len(diffs))
                extra.append(above)
    return Run(run.path, run.rows + extra, label=run.label)


def test_the_cpu_above_null_joins_its_samplers_line(runs):
    run = with_above_null(runs[1])  # AMD
    table = report_tables.sampler_table(run)
    col = {name: i for i, name in enumerate(table.columns)}
    mechanisms = [line[col["mechanism"]] for line in table.body]
    assert mechanisms == [line[col["mechanism"]]
                          for line in report_tables.sampler_table(runs[1]).body]
    assert not any(line[col["target"]].startswith("above null") for line in table.body)
    perf = next(line for line in table.body if line[col["mechanism"]] == "perf")
    assert perf[col["CPU above null (95% CI)"]] == "2.15 µs (1.90–2.60 µs)"
    assert perf[col["rate"]].endswith(" Hz") and not perf[col["rate"]].startswith("0.")
    timer = next(line for line in table.body if line[col["mechanism"]] == "timer")
    assert timer[col["CPU above null (95% CI)"]] == ""
    # every row stays in the CSV, the differences under their own target (as shown)
    above = [r for r in table.records if (r["target"] or "").startswith("above null: ")]
    assert {(r["op"], r["metric"]) for r in above} >= {("perf", "rate_hz"),
                                                      ("perf", "cpu_us_per_sample")}


def test_a_cpu_above_null_whose_ci_holds_0_says_within_noise(runs):
    """The sampler's CPU above its null loop is a difference: where its 95% CI
    holds 0 the sampler and overhead tables say "within noise" (footnoted),
    their CSVs flag it, and the overhead figure greys its label; a CI clear
    of 0 is not labelled."""
    from plots.report_tables_overhead import local_overhead_table
    from results import overhead
    run = with_above_null(runs[1])  # AMD: perf's difference 1.90–2.60 µs
    noisy = [-3.0, 4.0, 1.0, -2.0, 5.0, 0.5]
    rows = [({**r, **stats.summarize(noisy), "samples": noisy, "n": len(noisy)}
             if r["op"] == "ebpf" and r["metric"] == "cpu_us_per_sample"
             and r["role"] == rows_mod.ABOVE_NULL else r) for r in run.rows]
    common = {k: rows[0][k] for k in ("schema_version", "run_id", "timestamp", "machine")}
    for mech in ("perf", "ebpf"):
        rows += overhead.condition_rows(
            common, overhead.Condition(mech, overhead.Placement("same CPU", 1, 1),
                                       wall=[1.0 + 0.01 * i for i in range(12)],
                                       cpu=[0.1] * 12, bare=[(0.25, 0.24)] * 12),
            297, None, False, 400.0)
    run = Run(run.path, rows, label=run.label)

    table = report_tables.sampler_table(run)
    col = {name: i for i, name in enumerate(table.columns)}
    line = {line[col["mechanism"]]: line for line in table.body}
    assert "within noise" in line["ebpf"][col["CPU above null (95% CI)"]]
    assert "within noise" not in line["perf"][col["CPU above null (95% CI)"]]
    assert any(f.startswith("within noise: the 95% CI of the sampler's CPU per tick")
               for f in table.footnotes)
    flags = {r["op"]: r["within_noise"] for r in table.records
             if r["metric"] == "cpu_us_per_sample"
             and (r["target"] or "").startswith("above null: ")}
    assert flags["ebpf"] is True and flags["perf"] is False

    overhead_table = local_overhead_table(run)
    col = {name: i for i, name in enumerate(overhead_table.columns)}
    cells = {line[0]: line[col["CPU/tick above null"]] for line in overhead_table.body}
    assert "within noise" in cells["ebpf"] and "within noise" not in cells["perf"]
    flags = {r["tool_or_mechanism"]: r["above_null_within_noise"] for r in overhead_table.records}
    assert flags["ebpf"] is True and flags["perf"] is False

    fig = figures.overhead_figure([run], [])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.endswith("µs (noise)") for t in texts)
    assert any(t.startswith("+2.2 µs") and "noise" not in t for t in texts)


def test_the_sampler_figure_leaves_the_differences_out(runs):
    run = with_above_null(runs[1])
    fig = figures.sampler_figure([run])
    ticks = {t.get_text() for ax in fig.axes for t in ax.get_xticklabels()}
    assert ticks == {t.get_text() for ax in figures.sampler_figure([runs[1]]).axes
                     for t in ax.get_xticklabels()}
    rate_axis = fig.axes[0]
    assert min(rate_axis.get_ylim()) > 900  # no 0 Hz difference among the rates


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
