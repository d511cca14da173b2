"""The registry of paths and mechanisms (results/schema.json, read by
results/registry.py): every path and mechanism appears everywhere it must,
and no Python source lists them by hand. (That the C++ and Rust harnesses
owe rows for exactly their registry paths, in its order, is checked by
test_ubench_plan.py and rbench/src/paths/mod.rs; the sampler's mechanisms by
a test in its cli.rs.)"""

import ast
import re
from pathlib import Path

import pytest

from plots import labels
from results import bench_all, kbench, registry, schema

REPO = Path(__file__).resolve().parent.parent
COMMON = {"schema_version": "2", "run_id": "r", "timestamp": "2026-01-01T00:00:00Z",
          "machine": {}}


def test_every_path_has_a_known_figure_and_harness():
    harnesses = set(schema.SCHEMA["properties"]["harness"]["enum"])
    for path_id in registry.PATHS:
        info = registry.path(path_id)
        assert info.figure in registry.FIGURES, info
        assert info.harnesses and set(info.harnesses) <= harnesses, info
        assert info.title and info.privilege, info


def test_every_figure_shows_a_path_and_the_latency_figures_leave_out_only_the_sampler():
    assert all(paths for _, _, paths in labels.FAMILIES), labels.FAMILIES
    shown = {p for _, _, paths in labels.FAMILIES for p in paths}
    assert set(registry.PATHS) - shown == set(registry.paths_in_figure(registry.SAMPLER_FIGURE))


def test_every_mechanism_reads_through_a_registered_path():
    assert registry.MECHANISMS
    for m in registry.MECHANISMS:
        assert registry.mechanism(m).path in registry.PATHS


# a name no recipe of CONTRIBUTING.md would register (its example path is rdpmc)
UNKNOWN = "no-such-route"


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(KeyError, match=re.escape(f"known: {', '.join(registry.PATHS)}")):
        registry.path(UNKNOWN)
    with pytest.raises(KeyError, match=re.escape(f"known: {', '.join(registry.MECHANISMS)}")):
        registry.mechanism(UNKNOWN)


def test_the_schema_refuses_an_unregistered_path_naming_the_known_ones():
    row = {"path": UNKNOWN}
    known = f"is not one of {list(registry.PATHS)[:1]}"[:-1]  # "is not one of ['kinsn'"
    assert any(f == "path" and known in m for f, m in schema.validate_row(row))


def test_a_harness_that_cannot_run_owes_a_row_per_registry_path(tmp_path):
    run = bench_all.Run(run_dir=tmp_path, raw_dir=tmp_path, quick=True, common=COMMON,
                        build_dir=tmp_path / "no-build")
    not_built = bench_all.run_gbench(run)  # no binary in that build dir
    assert [r["path"] for r in not_built] == list(registry.paths_of("gbench"))
    assert all(r["status"] == "error" and "not built" in r["reason"] for r in not_built)
    no_module = kbench.unavailable_rows(COMMON, "no module support")
    assert [r["path"] for r in no_module] == list(registry.paths_of("kbench"))


def _literal_lists(tree):
    """(line, strings) of every tuple, list and set literal of strings."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            yield node.lineno, [e.value for e in node.elts
                                if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def test_no_source_lists_paths_or_mechanisms_by_hand():
    """The registry is the one list: a literal naming three or more paths
    (or mechanisms) in the suite's Python is a copy that will drift.
    Tests may name the paths a case is about."""
    copies = []
    for pattern in ("results/**/*.py", "plots/**/*.py", "ci/**/*.py"):
        for source in REPO.glob(pattern):
            if source.name.startswith("test_") or source.name == "conftest.py":
                continue
            for line, strings in _literal_lists(ast.parse(source.read_text(encoding="utf-8"))):
                for names in (registry.PATHS, registry.MECHANISMS):
                    if len(set(strings) & set(names)) >= 3:
                        copies.append(f"{source.relative_to(REPO)}:{line}: {strings}")
    assert copies == []


def test_kbench_normalizer_emits_exactly_its_registry_paths():
    log = (REPO / "results" / "fixtures" / "kbench-qemu-guest.log").read_text()
    out = kbench.report_rows(kbench.guest_parts(log)["report"], COMMON)
    assert {r["path"] for r in out} == set(registry.paths_of("kbench"))


def readme_path_table() -> dict[str, str]:
    """{path id: what it needs} from the README's table of access paths ("same"
    repeats the row above; backticks dropped, "≤" written "<=")."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Access paths", 1)[1]
    table = section[section.index("\n|"):].split("\n\n", 1)[0]
    needs, above = {}, None
    for line in table.splitlines():
        m = re.match(r"^\| (`[a-z-]+`(?:, `[a-z-]+`)*) \|.*\| ([^|]+) \|$", line)
        if m:
            cell = m.group(2).strip()
            above = above if cell == "same" else cell.replace("`", "").replace("≤", "<=")
            needs.update(dict.fromkeys(re.findall(r"`([a-z-]+)`", m.group(1)), above))
    return needs


def test_readme_documents_every_path_with_the_registry_privilege():
    documented = readme_path_table()
    sampler = registry.paths_in_figure(registry.SAMPLER_FIGURE)
    measured = [p for p in registry.PATHS if p not in sampler]
    assert sorted(documented) == sorted(measured), "README's path table and the registry differ"
    for path_id, needs in documented.items():
        assert needs == registry.path(path_id).privilege, path_id
