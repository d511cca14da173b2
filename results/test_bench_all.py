"""Smoke test: a QUICK bench-all run on this machine (about 30 s once built),
results must validate and cover every path of the Google Benchmark harness.
Needs the build (make test builds first)."""

import json
import random
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from results import (bench_all, child, criterion, gbench, kbench, overhead, registry, sampler,
                     schedule, schema, tools)
from results import rows as rowlib
from results.test_child import gone

pytestmark = pytest.mark.serial  # runs bench-all on this machine (conftest.py)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    code = bench_all.main(["--quick", "--runs-dir", str(runs)])
    run_dir = (runs / "latest").resolve()
    return code, run_dir


def test_quick_run_succeeds_and_validates(quick_run):
    code, run_dir = quick_run
    assert code == 0
    jsonl = run_dir / "results.jsonl"
    assert list(schema.iter_file_errors(jsonl)) == []
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    table = pq.read_table(run_dir / "results.parquet")
    assert table.num_rows == len(rows) and set(table.column_names) == {k for r in rows for k in r}
    assert (run_dir / "raw" / "gbench.json").exists()
    assert json.loads((run_dir / "machine.json").read_text())["kernel"]


def test_the_parquet_table_has_a_column_per_field_null_where_a_row_lacks_it(tmp_path):
    rows = [{"b": "x", "a": 1, "timestamp": "2026-11-27T14:35:34Z"},
            {"a": 2, "c": {"k": 1.5}, "timestamp": "2026-11-27T14:35:35Z"}, {"b": "y"}]
    jsonl = tmp_path / "results.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = bench_all.parquet_table(jsonl)
    assert table.column_names == ["b", "a", "timestamp", "c"]  # first seen
    assert table.column("a").to_pylist() == [1, 2, None]
    assert table.schema.field("a").type == pa.int64()  # not made a double by its gap
    assert table.column("c").to_pylist() == [None, {"k": 1.5}, None]
    assert table.schema.field("timestamp").type == pa.string()  # as written
    assert table.column("timestamp").to_pylist()[:2] == [r["timestamp"] for r in rows[:2]]
    (tmp_path / "empty.jsonl").write_text("")
    assert bench_all.parquet_table(tmp_path / "empty.jsonl").num_rows == 0


def test_the_parquet_table_does_not_import_pandas(tmp_path):
    """pandas takes 0.3 s to import; a run never needs it."""
    jsonl = tmp_path / "results.jsonl"
    jsonl.write_text('{"a": 1, "s": [1.5, 2]}\n')
    code = ("import sys; from pathlib import Path; from results import bench_all; "
            f"bench_all.parquet_table(Path({str(jsonl)!r})); print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=bench_all.REPO, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("harness", ["gbench", "criterion"])
def test_every_path_is_ok_or_says_why(quick_run, harness):
    _, run_dir = quick_run
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    mine = [r for r in rows if r["harness"] == harness]
    assert {r["path"] for r in mine} == set(registry.paths_of(harness))
    for r in mine:
        if r["status"] == "ok":
            assert len(r["samples"]) >= 10, r
        else:
            assert r["status"] == "unavailable" and r["reason"], r
    # at least the instruction path runs everywhere
    assert all(r["status"] == "ok" for r in mine if r["path"] == "uinsn")


def test_gbench_log_names_its_library_and_explains_a_debug_warning(quick_run):
    """ubench links Google Benchmark built here with NDEBUG, or, where its
    source could not be fetched, Debian's libbenchmark, whose DEBUG warning
    the log then explains (README, "Google Benchmark")."""
    _, run_dir = quick_run
    log = (run_dir / "raw" / "gbench.log").read_text()
    assert "raplbench_gbench_library: " in log
    warning = "***WARNING*** Library was built as DEBUG"
    if warning in log:
        assert "raplbench_gbench_library: Debian's libbenchmark" in log
        assert 0 <= log.find("raplbench_gbench_debug_warning: ") < log.index(warning)
    else:
        assert "built here with NDEBUG" in log


def test_kbench_rows_say_why_they_are_missing_or_are_measured(quick_run):
    _, run_dir = quick_run
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    kbench = [r for r in rows if r["harness"] == "kbench"]
    assert {r["path"] for r in kbench} >= set(registry.paths_of("kbench"))
    assert all(r["status"] == "ok" or r["reason"] for r in kbench)


def test_agreement_report_is_written(quick_run):
    _, run_dir = quick_run
    text = (run_dir / "agreement.md").read_text()
    assert text.startswith("# Cross-harness agreement")
    assert "pairs agree within 10%" in text and "| 95% CI | verdict |" in text
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    harnesses = {"gbench", "criterion"}  # the victim step also writes perf read rows
    perf_by = {r["harness"] for r in rows
               if (r["path"], r["op"], r["status"]) == ("perf", "read", "ok")} & harnesses
    if perf_by != harnesses:
        # unprivileged with perf_event_paranoid >= 2 and no CAP_PERFMON: no perf row at all
        why = next((r["reason"] for r in rows if r["path"] == "perf" and r["status"] != "ok"
                    and r["harness"] in harnesses), "no perf read row")
        pytest.skip(f"perf read was not measured by both harnesses here: {why}")
    assert "| perf | read |" in text  # where both harnesses read perf, they are paired


def test_sampler_reports_itself_beside_its_null_timer(quick_run):
    _, run_dir = quick_run
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    mine = [r for r in rows if r["harness"] == "sampler"]
    assert {r["op"] for r in mine} == set(registry.MECHANISMS)
    for op in {r["op"] for r in mine if r["status"] == "ok"}:
        def metrics(role):
            return {r["metric"] for r in mine if r["op"] == op and r["role"] == role}
        every = {"rate_hz", "jitter_us", "missed_ticks", "cpu_us_per_sample"}
        assert metrics(rowlib.MEASURED) == metrics(rowlib.NULL) == every
        assert metrics(rowlib.ABOVE_NULL) == {"rate_hz", "cpu_us_per_sample"}
        # one sample per window, or per pair above the null sampler (a CPU
        # figure the registry says cannot be measured: none, and its reason)
        assert all(r["n"] == sampler.PAIRS for r in mine
                   if r["op"] == op and r["status"] == "ok"), op
        assert all(registry.mechanism(op).uncounted_cpu in r["reason"] for r in mine
                   if r["op"] == op and r["status"] != "ok"), op
    assert all(r["status"] == "ok" or r["reason"] for r in mine)


def test_overhead_experiment_has_a_row_per_mechanism_and_quick_tool(quick_run):
    _, run_dir = quick_run
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    mine = [r for r in rows if r["harness"] == "hyperfine"]
    assert {r["op"] for r in mine if r["path"] == "sampler"} == set(registry.MECHANISMS)
    # QUICK measures QUICK_TOOLS only: measured, or one row saying why not
    assert {r["op"] for r in mine if r["path"] == "tool"} == set(tools.QUICK_TOOLS)
    for r in mine:
        assert r["metric"] == "overhead_pct"
        assert r["status"] != "ok" or r["n"] >= overhead.min_pairs(quick=True), r
    assert (run_dir / "raw" / "hyperfine").is_dir()


# RAPLBENCH_KSAMPLE_ROOT: the sampler's alone, once missing from bench-all's
# own copy of the list (now results/fixture_hooks.json, which rbench reads)
@pytest.mark.parametrize("hook", ["RAPLBENCH_PMU_ROOT", "RAPLBENCH_KSAMPLE_ROOT"])
def test_a_fixture_hook_left_in_the_environment_refuses_the_run(monkeypatch, tmp_path, capsys, hook):
    monkeypatch.setenv(hook, str(tmp_path))
    with pytest.raises(SystemExit) as refused:
        bench_all.main(["--quick", "--runs-dir", str(tmp_path / "runs")])
    assert refused.value.code == 2
    assert f"{hook} set: the harnesses would measure a fixture tree" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
    assert bench_all.fixture_hooks({"RAPLBENCH_CPU_ROOT": ""}) == []



def test_the_latency_pair_runs_as_one_group_of_steps():
    """The turns that replaced running one harness after the other: a slow
    stretch of the VM now falls on both (results/README.md, "Agreement
    between the harnesses")."""
    groups = bench_all.step_groups(bench_all.HARNESSES, 3)
    assert groups[0][:2] == ([1, 2], ["gbench", "criterion"])
    assert groups[0][2] == "taking turns in 3 legs"
    assert [names for _, names, _ in groups[1:]] == [[n] for n, _, _ in bench_all.HARNESSES[2:]]
    alone = [h for h in bench_all.HARNESSES if h[0] != "criterion"]
    assert [names for _, names, _ in bench_all.step_groups(alone, 5)] == [[n] for n, _, _ in alone]


def test_the_latency_harnesses_trade_places_in_about_half_the_runs():
    rng = random.Random(1)
    orders = [[name for name, _, _ in bench_all.step_order(bench_all.HARNESSES, rng)]
              for _ in range(400)]
    gbench_first = sum(o.index("gbench") < o.index("criterion") for o in orders)
    assert 150 < gbench_first < 250
    for order in orders:  # only those two move
        others = [n for n in order if n not in bench_all.SWAPPED_STEPS]
        assert others == [n for n, _, _ in bench_all.HARNESSES if n not in bench_all.SWAPPED_STEPS]
        assert sorted(order) == sorted(n for n, _, _ in bench_all.HARNESSES)


def test_without_both_latency_harnesses_nothing_moves():
    only_gbench = [h for h in bench_all.HARNESSES if h[0] != "criterion"]
    rng = random.Random(2)
    assert all(bench_all.step_order(only_gbench, rng) == only_gbench for _ in range(20))


def test_every_row_records_where_its_step_ran():
    rows = bench_all.mark_step([{"parameters": None}, {"parameters": {"cpu_ops": 5}}], 3)
    assert rows == [{"parameters": {"step": 3}}, {"parameters": {"cpu_ops": 5, "step": 3}}]


def test_a_relative_runs_dir_reaches_every_step_as_an_absolute_path(monkeypatch, tmp_path):
    """The Criterion benchmark runs in rbench/: a relative CRITERION_HOME or
    manifest path once sent Criterion's output there and lost its rows."""
    seen = []
    monkeypatch.setattr(bench_all, "HARNESSES",
                        [("probe", "records its directories", lambda run: seen.append(run) or [])])
    monkeypatch.chdir(tmp_path)
    bench_all.main(["--quick", "--runs-dir", "runs", "--build-dir", "build"])  # no rows: refused
    assert seen and seen[0].raw_dir.is_absolute() and seen[0].build_dir.is_absolute()
    assert seen[0].raw_dir.parent.parent == tmp_path / "runs"


def test_the_overhead_step_takes_what_the_steps_before_it_saved(monkeypatch, tmp_path, capsys):
    """A step that prints its budget and what it spent; the overhead step's
    budget is its own plus what the quick steps before it left unspent."""
    budgets = {}
    def step(name):
        return name, name, lambda run: budgets.setdefault(name, run.step_budget_s) and []
    monkeypatch.setattr(bench_all, "HARNESSES", [step("sampler"), step("idle"), step("overhead")])
    bench_all.main(["--quick", "--runs-dir", str(tmp_path / "runs")])  # no rows: refused
    own = {name: schedule.step_budget_s(name, quick=True) for name in budgets}
    assert budgets["sampler"] == own["sampler"] and budgets["idle"] == own["idle"]
    assert own["overhead"] < budgets["overhead"] <= sum(own.values())
    assert budgets["overhead"] > sum(own.values()) - 5  # the two steps took no time
    out = capsys.readouterr().out
    assert f"[1/3] sampler (sampler; budget {own['sampler']:g} s)" in out
    assert f"of its {own['sampler']:g} s budget" in out
    assert f"of their {sum(own.values()):g} s budget" in out


def test_a_step_that_crashes_becomes_error_rows_and_the_others_are_kept(monkeypatch, tmp_path):
    """Issue 14: a step that raised (a KeyError in a normalizer, a
    self-report that did not parse, a child that hung) lost every row of the
    run. Now it stands for its paths as error rows, with its traceback kept."""
    def crashes(run):
        raise KeyError("median")
    monkeypatch.setattr(bench_all, "HARNESSES",
                        [("kbench", "the kernel module", bench_all.run_kbench),
                         ("criterion", "crashes", crashes)])
    assert bench_all.main(["--quick", "--runs-dir", str(tmp_path)]) == 0
    run_dir = (tmp_path / "latest").resolve()
    got = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    crashed = [r for r in got if r["harness"] == "criterion"]
    assert {r["path"] for r in crashed} == set(criterion.PATHS)
    for r in crashed:
        assert r["status"] == "error"
        assert r["reason"].startswith("the criterion step crashed (KeyError: 'median')")
    assert {r["path"] for r in got if r["harness"] == "kbench"} == set(kbench.PATHS)
    assert "KeyError: 'median'" in (run_dir / "raw" / "criterion-crash.log").read_text()


def test_a_step_whose_harness_hangs_becomes_error_rows_and_the_run_goes_on(monkeypatch, tmp_path):
    """Issue 14: a harness that hangs held bench-all forever. Now it is
    killed at RAPLBENCH_STEP_LIMIT_S (results/child.py), with what it
    started, and its paths become error rows saying so."""
    build = tmp_path / "build"
    build.mkdir()
    fake = build / "raplbench-ubench"
    fake.write_text(f"#!/bin/sh\nsleep 60 & echo $! > {tmp_path}/grandchild\nwait\n")
    fake.chmod(0o755)
    monkeypatch.setenv(child.LIMIT_ENV, "1")
    monkeypatch.setattr(bench_all, "HARNESSES",
                        [("gbench", "hangs", bench_all.run_gbench),
                         ("kbench", "the kernel module", bench_all.run_kbench)])
    runs = tmp_path / "runs"
    assert bench_all.main(["--quick", "--runs-dir", str(runs), "--build-dir", str(build)]) == 0
    run_dir = (runs / "latest").resolve()
    got = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    hung = [r for r in got if r["harness"] == "gbench"]
    assert {r["path"] for r in hung} == set(gbench.PATHS)
    for r in hung:
        assert r["status"] == "error"
        assert r["reason"] == ("the gbench step stopped: raplbench-ubench did not finish within "
                               "1 s (RAPLBENCH_STEP_LIMIT_S); it was killed with the processes "
                               "it started")
    assert {r["path"] for r in got if r["harness"] == "kbench"} == set(kbench.PATHS)
    assert gone(int((tmp_path / "grandchild").read_text()))


def test_the_report_of_this_run_draws_without_overlaps_and_its_tables_compile(
        quick_run, tmp_path, monkeypatch):
    """The report of the run this machine just made, as make bench-all draws
    it: no figure with overlapping labels or a label over its data, every LaTeX table within the text
    width of a one- and a two-column article (where TeX is installed). The
    stored fixtures are synthetic and of older formats; this holds the
    report to today's rows, whatever the machine has."""
    from plots import figures, label_overlap, report
    from plots.runs import load_references, load_runs
    from plots.test_latex import latex_problems, need_tex
    _, run_dir = quick_run
    overlaps = {}
    save = figures.save

    def checked_save(fig, path):
        overlaps[path.name] = (label_overlap.overlapping_texts(fig)
                               + label_overlap.texts_over_data(fig))
        return save(fig, path)
    monkeypatch.setattr(figures, "save", checked_save)
    out = tmp_path / "report"
    report.build(load_runs([str(run_dir)]), load_references(), out)
    assert overlaps, "the report drew no figure"
    assert {name: found for name, found in overlaps.items() if found} == {}
    need_tex()
    assert latex_problems(out, sorted(out.glob("*.tex")), run_dir.name) == []
