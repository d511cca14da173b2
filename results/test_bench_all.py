"""Smoke test: a QUICK bench-all run on this machine (about 10 s), whose
results must validate and cover every path of the Google Benchmark harness.
Needs the build (make test builds first)."""

import json

import pytest

from results import bench_all, schema

GBENCH_PATHS = {"uinsn", "powercap", "msr-dev", "perf", "ebpf-lookup", "ebpf-mmap"}


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
    assert (run_dir / "results.parquet").stat().st_size > 0
    assert (run_dir / "raw" / "gbench.json").exists()
    assert json.loads((run_dir / "machine.json").read_text())["kernel"]


def test_every_gbench_path_is_ok_or_says_why(quick_run):
    _, run_dir = quick_run
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    gbench = [r for r in rows if r["harness"] == "gbench"]
    assert {r["path"] for r in gbench} == GBENCH_PATHS
    for r in gbench:
        if r["status"] == "ok":
            assert len(r["samples"]) >= 10, r
        else:
            assert r["status"] == "unavailable" and r["reason"], r
    # at least the instruction path runs everywhere
    assert all(r["status"] == "ok" for r in gbench if r["path"] == "uinsn")
