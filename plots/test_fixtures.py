"""The stored fixture runs: valid, reproducible, and covering what the
report must handle."""

from plots.fixtures import AMD, INTEL, KVM_FROZEN, SCHEMA1_INTEL, make_fixtures
from plots.runs import read_rows
from results.schema import iter_file_errors


def test_fixtures_validate():
    for run in (INTEL, AMD, KVM_FROZEN):
        assert list(iter_file_errors(run / "results.jsonl")) == []


def test_fixtures_are_the_generators_output(tmp_path):
    for path in make_fixtures.write(tmp_path):
        stored = make_fixtures.HERE / path.parent.name / path.name
        assert path.read_bytes() == stored.read_bytes(), (
            "fixtures changed: rerun .venv/bin/python -m plots.fixtures.make_fixtures")


def test_fixtures_cover_the_cases():
    intel, amd = read_rows(INTEL / "results.jsonl"), read_rows(AMD / "results.jsonl")
    assert intel[0]["machine"]["cpu_vendor"] == "GenuineIntel"
    assert amd[0]["machine"]["cpu_vendor"] == "AuthenticAMD"
    for rows in (intel, amd):
        kinds = {(r["harness"], r["metric"]) for r in rows}
        assert {("kbench", "latency"), ("kbench", "cycles"), ("gbench", "latency"),
                ("criterion", "latency"), ("sampler", "rate_hz"), ("sampler", "jitter_us"),
                ("sampler", "missed_ticks"), ("sampler", "cpu_us_per_sample")} <= kinds
        assert any(r["status"] == "unavailable" for r in rows)
        assert {r["op"] for r in rows if r["path"] == "sampler"} >= {"powercap", "perf", "ebpf",
                                                                       "timer"}
    assert any(r["stand_in"] for r in amd)
    assert any(r["harness"] == "hyperfine" and r["metric"] == "overhead_pct" for r in amd)
    assert any(r["path"] == "sampler" and r["status"] == "unavailable" for r in amd)


def test_fixtures_carry_liveness_verdicts_and_one_run_predates_them():
    intel, frozen = read_rows(INTEL / "results.jsonl"), read_rows(KVM_FROZEN / "results.jsonl")
    assert {r["liveness"] for r in intel} == {"live", None}
    dead = [r for r in frozen if r["liveness"] == "frozen"]
    assert {r["path"] for r in dead} == {"perf", "ebpf-lookup", "ebpf-mmap", "sampler"}
    assert all(r["liveness_note"] and r["stand_in"] is None for r in dead)
    old = read_rows(SCHEMA1_INTEL / "results.jsonl")
    assert all(r["schema_version"] == "1" and "liveness" not in r for r in old)
    assert list(iter_file_errors(SCHEMA1_INTEL / "results.jsonl")) == []
