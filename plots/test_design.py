"""The kernel mechanism beside Ref_Rapl_Kernel, the published design it
follows (report_tables_overhead.design_table, reference-design.{md,csv,tex}):
every line says whether it was measured here or published; published
figures never sit in a measured line; a kernel row that could not run shows
its reason; a CI that contains 0 or did not resolve says so."""

import csv
import io

from plots import report_tables_overhead as design
from plots.tables_latex import to_latex
from plots.fixtures import AMD, INTEL, KVM_FROZEN, emulated_copy
from plots.runs import Run, load_runs
from plots.test_report import md_table
from results import overhead, registry

TOOL = "Ref_Rapl_Kernel"


def test_the_registry_names_the_design_the_kernel_mechanism_follows(refs):
    assert registry.mechanism("kernel").design == TOOL
    assert [m for m in registry.MECHANISMS if registry.mechanism(m).design] == ["kernel"]
    published = [r for r in refs if r["op"] == TOOL]
    assert len(published) == 6 and all(r["metric"] == "overhead_pct" for r in published)


def test_the_built_report_has_the_table_with_both_kinds_of_line(built):
    out, result = built
    assert {"reference-design.md", "reference-design.csv", "reference-design.tex"} <= set(
        result["files"])
    header, body, notes = md_table((out / "reference-design.md").read_text(), "design it follows")
    col = {name: i for i, name in enumerate(header)}
    measured = [line for line in body if line[col["source"]].startswith("measured here: ")]
    published = [line for line in body if line[col["source"]].startswith("published: ")]
    assert len(measured) + len(published) == len(body)
    assert [line[col["source"]] for line in measured] == [
        "measured here: Intel Xeon Gold 6330", "measured here: AMD EPYC 7702 64-Core"]
    assert {line[col["workload"]] for line in published} == {
        f"NAS {b}" for b in ("bt", "cg", "ep", "ft", "is", "mg")}
    for line in published:
        assert line[col["sampler"]] == TOOL
        assert line[col["CPU time (95% CI)"]] == "not published"
        assert "(" not in line[col["wall time (95% CI)"]]  # no CI was published
        mark = line[col["note"]].split("[")[1].rstrip("]").split(",")
        assert any(notes[k].startswith("published, not measured here: Diamond & Stoico 2026, "
                                       "Table 1") for k in mark)
    for line in measured:
        assert line[col["sampler"]] == "kernel (raplbench-sample)"
    intel, amd = measured
    assert intel[col["wall time (95% CI)"]] == "—" and "not measured" in intel[col["note"]]
    assert amd[col["wall time (95% CI)"]].endswith("%)")  # median (CI) measured on AMD
    # the CSV keeps the kinds apart, numbers in their own columns
    records = list(csv.DictReader(io.StringIO((out / "reference-design.csv").read_text())))
    kinds = {r["kind"] for r in records}
    assert kinds == {"measured", "published"}
    assert all(r["ci95_low"] == "" and r["source"] for r in records if r["kind"] == "published")
    assert all(r["source"] == "" for r in records if r["kind"] == "measured")


def test_an_unavailable_kernel_row_shows_its_reason(refs):
    (run,) = load_runs([KVM_FROZEN])
    table = design.design_table([run], refs, "kernel")
    col = {name: i for i, name in enumerate(table.columns)}
    (line,) = [x for x in table.body if x[col["source"]].startswith("measured here")]
    assert line[col["wall time (95% CI)"]] == "—" and "unavailable" in line[col["note"]]
    assert any(note.startswith("unavailable: the ksample module cannot be loaded here: this "
                               "kernel") for note in table.footnotes)
    (record,) = [r for r in table.records if r["kind"] == "measured"]
    assert record["status"] == "unavailable" and "ksample module" in record["reason"]


def overhead_run(wall, label="here", emulated=False):
    """A run with the overhead experiment's kernel rows (both placements)."""
    (amd,) = load_runs([AMD])
    common = {k: amd.rows[0][k] for k in ("schema_version", "run_id", "timestamp", "machine")}
    got = []
    for place, samples in zip((overhead.Placement("same CPU", 1, 1),
                               overhead.Placement("other CPU", 0, 1)), wall):
        c = overhead.Condition("kernel", place, wall=list(samples), cpu=[0.0] * len(samples),
                               bare=[(0.25, 0.24)] * len(samples))
        got += overhead.condition_rows(common, c, 297, None, False, 400.0,
                                        overhead.budget_s(False))
    if emulated:
        got = emulated_copy(got)
    return Run(amd.path, got, label=label)


def test_a_ci_containing_zero_and_an_unresolved_row_say_so(refs):
    resolved_zero = [(-1) ** i * 0.1 for i in range(40)]       # ±0.1: resolved, CI holds 0
    wide = [1.0 + (-1) ** i * 5.0 for i in range(40)]          # ±5: not resolved
    table = design.design_table([overhead_run([resolved_zero, wide])], refs, "kernel")
    col = {name: i for i, name in enumerate(table.columns)}
    lines = {x[col["sampler on"]]: x for x in table.body if x[col["source"]] == "measured here: here"}
    assert set(lines) == {"same CPU (CPU 1)", "other CPU (CPU 0)"}
    zero_mark = f"[^{table.footnotes.index(design.ZERO_NOTE) + 1}]"
    assert lines["same CPU (CPU 1)"][col["wall time (95% CI)"]].endswith(zero_mark)
    assert "not resolved" not in lines["same CPU (CPU 1)"][col["note"]]
    assert "not resolved" in lines["other CPU (CPU 0)"][col["note"]]
    assert lines["same CPU (CPU 1)"][col["workload"]].startswith("stress-ng --cpu 1")
    records = {(r["placement"], r["time"]): r for r in table.records if r["kind"] == "measured"}
    assert records[("same CPU", "wall time")]["ci_contains_zero"] is True
    assert records[("other CPU", "wall time")]["resolved"] is False


def test_an_emulated_kernel_row_is_marked(refs):
    run = overhead_run([[0.5 + 0.01 * i for i in range(30)]] * 2, emulated=True)
    table = design.design_table([run], refs, "kernel")
    col = {name: i for i, name in enumerate(table.columns)}
    measured = [x for x in table.body if x[col["source"]].startswith("measured here")]
    assert measured and all("emulated" in x[col["note"]] for x in measured)


def test_no_table_without_a_published_design_or_any_row():
    (intel,) = load_runs([INTEL])
    assert design.design_table([intel], [], "perf") is None  # perf follows no published tool
    latency_only = Run(intel.path, [r for r in intel.rows if r["path"] != "sampler"], label="x")
    assert design.design_table([latency_only], [], "kernel") is None


def test_published_lines_alone_when_no_run_sampled(refs):
    (intel,) = load_runs([INTEL])
    latency_only = Run(intel.path, [r for r in intel.rows if r["path"] != "sampler"], label="x")
    table = design.design_table([latency_only], refs, "kernel")
    assert len(table.body) == 6 and all(line[0].startswith("published: ") for line in table.body)
    assert to_latex([table])  # renders
