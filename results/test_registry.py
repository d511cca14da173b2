"""The registry of paths and mechanisms (results/schema.json, read by
results/registry.py): every path and mechanism appears everywhere it must,
and nothing lists them by hand."""

import re
from pathlib import Path

import pytest

from plots import figures, labels
from results import bench_all, criterion, kbench, registry, sampler, schema, table

REPO = Path(__file__).resolve().parent.parent


def test_every_path_has_a_known_figure_and_harness():
    harnesses = set(schema.SCHEMA["properties"]["harness"]["enum"])
    for path_id in registry.PATHS:
        info = registry.path(path_id)
        assert info.figure in registry.FIGURES, info
        assert info.harnesses and set(info.harnesses) <= harnesses, info
        assert info.title and info.privilege, info


def test_every_path_is_in_exactly_one_figure():
    latency = [p for _, _, paths in labels.FAMILIES for p in paths]
    sampler_paths = registry.paths_in_figure(registry.SAMPLER_FIGURE)
    assert sorted(latency + list(sampler_paths)) == sorted(registry.PATHS)
    assert len(set(latency)) == len(latency)
    assert all(paths for _, _, paths in labels.FAMILIES), labels.FAMILIES


def test_every_mechanism_reads_through_a_registered_path():
    assert registry.MECHANISMS
    for m in registry.MECHANISMS:
        assert registry.mechanism(m).path in registry.PATHS


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(KeyError, match="known: kinsn, uinsn"):
        registry.path("rdpmc")
    with pytest.raises(KeyError, match="known: powercap, msr"):
        registry.mechanism("rdpmc")


def test_the_schema_refuses_an_unregistered_path_naming_the_known_ones():
    row = {"path": "rdpmc"}
    assert any(f == "path" and "is not one of ['kinsn'" in m for f, m in schema.validate_row(row))


def test_harness_steps_owe_rows_for_the_registry_paths():
    assert bench_all.GBENCH_PATHS == registry.paths_of("gbench")
    assert criterion.PATHS == registry.paths_of("criterion")
    assert kbench.PATHS == registry.paths_of("kbench")
    assert sampler.MECHANISMS == registry.MECHANISMS
    assert table.PATH_ORDER == registry.PATHS
    assert figures.MECHANISM_ORDER == registry.MECHANISMS


def test_kbench_normalizer_emits_exactly_its_registry_paths():
    log = (REPO / "results" / "fixtures" / "kbench-qemu-guest.log").read_text()
    common = {"schema_version": "2", "run_id": "r", "timestamp": "2026-01-01T00:00:00Z",
              "machine": {}}
    out = kbench.report_rows(kbench.guest_parts(log)["report"], common)
    assert {r["path"] for r in out} == set(registry.paths_of("kbench"))


def test_readme_documents_every_path():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Access paths", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)`(?:, `([a-z-]+)`)?", section, re.M))
    found = {p for pair in documented for p in pair if p}
    assert set(registry.PATHS) - {"sampler"} <= found, "README's path table misses a path"
