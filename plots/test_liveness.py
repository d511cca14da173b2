"""The report of the KVM guest whose RAPL counter is frozen (issue 11) beside
the Intel run as written under schema 1: frozen rows keep their figures and
are marked as visibly as stand-ins; the schema 1 run says once that it
predates liveness probing."""

import csv
import io
import re

import matplotlib.pyplot as plt
import pytest

from plots import figures, label_overlap, labels, report
from plots.fixtures import KVM_FROZEN, SCHEMA1_INTEL
from plots.runs import load_runs
from plots.test_figures import all_figures
from plots.test_report import md_table

KVM_LABEL = "Intel Xeon Platinum 8581C [VM]"


@pytest.fixture(scope="module")
def mixed():
    return load_runs([SCHEMA1_INTEL, KVM_FROZEN])


@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory, mixed, refs):
    out = tmp_path_factory.mktemp("mixed-report")
    report.build(mixed, refs, out)
    return out


def test_fixture_labels(mixed):
    assert [r.label for r in mixed] == ["Intel Xeon Gold 6330", KVM_LABEL]


def test_frozen_rows_keep_their_figure_and_are_footnoted(mixed_report):
    header, body, notes = md_table((mixed_report / "latency.md").read_text(), KVM_LABEL)
    col = {name: i for i, name in enumerate(header)}
    psys = [r for r in body if r[col["target"]] == "power/energy-psys/"]
    assert {r[col["path"]] for r in psys} == {"perf", "ebpf-lookup", "ebpf-mmap"}
    read = next(r for r in psys if r[col["op"]] == "read" and r[col["cpu→target"]] == "0→0"
                and r[col["harness"]] == "gbench")
    assert read[col["median"]].endswith(" µs")  # the route's cost, still shown
    k = re.fullmatch(r"frozen \[(\d+)\]", read[col["note"]]).group(1)
    assert notes[k].startswith("frozen counter: power/energy-psys/ on CPU 0: did not change")
    assert all(f"frozen [{k}]" in r[col["note"]] for r in psys)
    tex = (mixed_report / "latency.tex").read_text()
    assert re.search(r"frozen\\textsuperscript\{\d+\}", tex)
    assert '<li value="' in (mixed_report / "index.html").read_text()


def test_csv_carries_the_verdict_and_unknown_for_schema_1(mixed_report):
    records = list(csv.DictReader(io.StringIO((mixed_report / "latency.csv").read_text())))
    kvm = [r for r in records if r["machine"] == KVM_LABEL]
    assert {r["liveness"] for r in kvm if r["target"] == "power/energy-psys/"} == {"frozen"}
    assert {r["liveness"] for r in kvm if r["stand_in"]} == {""}
    assert all(r["liveness_note"] for r in kvm if r["liveness"] == "frozen")
    assert {r["liveness"] for r in records if r["machine"] != KVM_LABEL} == {"unknown"}


def test_schema_1_run_says_once_that_it_predates_the_probe(mixed_report):
    md = (mixed_report / "latency.md").read_text()
    block = md.split("### ")[1]
    assert block.startswith("Latency per operation, Intel Xeon Gold 6330")
    assert block.count("predates liveness probing") == 1  # in the caption, not per row
    _, body, _ = md_table(md, "Intel Xeon Gold 6330")
    assert not any("unknown" in cell for row in body for cell in row)
    page = (mixed_report / "index.html").read_text()
    assert "predates liveness probing" in page
    assert re.search(r'<p class="frozen">Intel Xeon Platinum 8581C \[VM\]: \d+ rows read a '
                     r"counter that is frozen", page)


def test_sampler_table_names_the_frozen_counter(mixed_report):
    header, body, notes = md_table((mixed_report / "sampler.md").read_text(), KVM_LABEL)
    col = {name: i for i, name in enumerate(header)}
    perf = next(r for r in body if r[col["mechanism"]] == "perf")
    assert perf[col["rate"]].endswith(" Hz")  # it ticked
    k = re.search(r"frozen \[(\d+)\]", perf[col["note"]]).group(1)
    assert notes[k].startswith("frozen counter: power/energy-psys/")
    timer = next(r for r in body if r[col["mechanism"]] == "timer")
    assert "frozen" not in timer[col["note"]]


def test_figures_mark_frozen_rows_and_name_them_in_the_legend(mixed):
    fig = figures.latency_figure(mixed, labels.FAMILIES[3])  # perf and eBPF
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert figures.DEAD_LABEL in legend
    kvm = fig.axes[1]
    assert any(figures.DEAD_HATCH in (p.get_hatch() or "") for p in kvm.patches)
    # the panels share a slot per route; what each read (and "frozen") is on its top axis
    assert any("frozen" in t.get_text() for a in (kvm, *kvm.child_axes)
               for t in a.get_xticklabels())
    intel = fig.axes[0]  # schema 1: no verdict, nothing marked
    assert not any(figures.DEAD_HATCH in (p.get_hatch() or "") for p in intel.patches)
    plt.close(fig)

    fig = figures.ladder_figure(mixed[1], [])
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "perf read · same CPU  [frozen]" in ticks
    assert figures.DEAD_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]
    plt.close(fig)

    fig = figures.sampler_figure(mixed)
    assert figures.DEAD_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]
    plt.close(fig)


def test_no_overlapping_labels_with_frozen_rows(mixed, refs):
    plt.close("all")
    for name, fig in all_figures(mixed, refs).items():
        assert label_overlap.overlapping_texts(fig) == [], name
        plt.close(fig)
