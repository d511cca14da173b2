"""Tests of the Google Benchmark normalizer against a golden file.

fixtures/gbench-1.7.1.json is real Google Benchmark 1.7.1 output (a stub
program, --benchmark_repetitions=3) of the rows of the plan
fixtures/gbench-1.7.1.plan.json, each benchmark named by its row's id; the
golden fixtures/gbench-1.7.1.golden.jsonl is what normalize() makes of the
two with the fixed run id, timestamp and machine below. After an intended change of the
normalizer or of the schema, rewrite the golden and review the diff:

    .venv/bin/python -m results.test_gbench
"""

import copy
import json

import pytest

from results import gbench, plan, rows, schema
from results.conftest import FIXTURES

GB_JSON = FIXTURES / "gbench-1.7.1.json"
GOLDEN = FIXTURES / "gbench-1.7.1.golden.jsonl"
PLAN = plan.load(FIXTURES / "gbench-1.7.1.plan.json", gbench.HARNESS)

MACHINE = {
    "hostname": "vm", "cpu_vendor": "GenuineIntel", "cpu_family": 6, "cpu_model": 167,
    "cpu_stepping": 1, "cpu_model_name": "Intel(R) Xeon(R) Processor", "microcode": "0x1",
    "kernel": "6.18.44", "hypervisor": "kvm", "smt": False, "governor": None, "boost": None,
    "tsc_khz": 2599998, "mitigations": {"meltdown": "Not affected"},
}
COMMON = rows.common("20261122T000930Z-c0ffee", "2026-11-22T00:09:30Z", MACHINE)


def golden_rows():
    return [json.loads(line) for line in GOLDEN.read_text().splitlines()]


def regenerate_golden():
    rows.write_jsonl(gbench.normalize(gbench.load(GB_JSON), COMMON, PLAN), GOLDEN)
    print(f"wrote {GOLDEN}")


@pytest.fixture
def gb():
    return gbench.load(GB_JSON)


def test_normalize_matches_golden(gb):
    out = gbench.normalize(gb, COMMON, PLAN)
    assert out == golden_rows()
    assert all(list(row) == list(rows.FIELDS) for row in out)


def test_golden_rows_are_valid():
    for row in golden_rows():
        assert schema.validate_row(row) == []


def test_golden_covers_each_case():
    by_op = {(r["path"], r["metric"]): r for r in golden_rows()}
    perf = by_op["perf", "latency"]
    assert perf["status"] == "ok" and perf["n"] == 3 and perf["iterations"] > 1
    assert 1000 < perf["median"] < 10000  # real_time was in us: now ns
    assert perf["stand_in"].startswith("msr/tsc/")
    nop = by_op["uinsn", "latency"]
    assert nop["samples"] == [2.4014728815585779e-01, 2.4034458368980766e-01, 2.4024759061966081e-01]
    msr = by_op["msr-dev", "latency"]
    assert (msr["status"], msr["reason"]) == (
        "unavailable", "/dev/cpu/0/msr missing: load the msr module (modprobe msr)")
    lookup = by_op["ebpf-lookup", "latency"]
    assert lookup["status"] == "error" and "Operation not permitted" in lookup["reason"]
    powercap = by_op["powercap", "latency"]
    assert powercap["status"] == "unavailable" and powercap["samples"] == []
    sysread = by_op["sys-read", "latency"]
    assert sysread["reason"] == ("benchmark sys-read/pread//proc/raplbench/value@0->0 produced no repetitions "
                                 "(filtered out or crashed?)")


def test_repetitions_are_ordered_and_time_units_converted(gb):
    gb = copy.deepcopy(gb)
    runs = [b for b in gb["benchmarks"] if b["run_name"] == "perf/read/msr/tsc/@0->1"
            and b["run_type"] == "iteration"]
    for i, run in enumerate(runs):
        run["real_time"], run["time_unit"] = [3, 1, 2][i], "ms"
    gb["benchmarks"] = list(reversed(gb["benchmarks"]))
    perf = gbench.normalize(gb, COMMON, PLAN)[0]
    assert perf["samples"] == [3e6, 1e6, 2e6]  # repetition order, in ns


def test_without_its_metric_counter_a_row_is_real_time(gb):
    """uinsn's benchmarks report ns per instruction in the counter named by
    the metric; a benchmark without it gives its time per iteration."""
    for b in gb["benchmarks"]:
        b.pop("latency", None)
    nop = gbench.normalize(gb, COMMON, PLAN)[1]
    assert nop["path"] == "uinsn" and nop["samples"] == [
        r["real_time"] for r in gb["benchmarks"]
        if r["run_name"] == "uinsn/nop/@0" and r["run_type"] == "iteration"]


def test_a_rate_row_reads_its_counter_of_a_benchmark_of_fixed_iterations(gb):
    """Google Benchmark names a benchmark of fixed iterations
    "<name>/iterations:N"; the row is still joined by its id."""
    runs = [dict(b, run_name=b["run_name"] + "/iterations:1", rate_hz=999.5 + i)
            for i, b in enumerate(gb["benchmarks"])
            if b["run_name"] == "perf/read/msr/tsc/@0->1" and b["run_type"] == "iteration"]
    gb["benchmarks"] = runs
    tick = dict(PLAN[0], metric="rate_hz", unit="Hz")
    [row] = gbench.normalize(gb, COMMON, [tick])
    assert row["samples"] == [999.5, 1000.5, 1001.5]


def test_unavailable_plan_rows_keep_their_reason_and_need_no_benchmark():
    [row] = gbench.normalize({"benchmarks": []}, COMMON, [
        dict(PLAN[0], status="unavailable", reason="no PMU")])
    assert (row["status"], row["reason"], row["samples"]) == ("unavailable", "no PMU", [])


def test_tsc_khz_hint(gb):
    assert gbench.tsc_khz_hint(gb) == 2599998
    del gb["context"]["raplbench_tsc_khz"]
    assert gbench.tsc_khz_hint(gb) is None


if __name__ == "__main__":
    regenerate_golden()


def test_legs_merge_into_one_file_of_googles_shape(gb):
    """bench-all's turns (results/bench_all.py, run_latency) run ubench in
    legs; their repetitions become one Google Benchmark file, leg after leg,
    whose rows are those of one run with every repetition."""
    later = copy.deepcopy(gb)
    for b in later["benchmarks"]:
        if b.get("run_type") == "iteration":
            b["real_time"] *= 2  # the second leg: twice as slow
    merged = gbench.merge([gb, later])
    assert merged["context"] == gb["context"]
    assert all(b["run_type"] == "iteration" for b in merged["benchmarks"])  # no aggregates
    one, two = gbench.normalize(gb, COMMON, PLAN), gbench.normalize(later, COMMON, PLAN)
    both = gbench.normalize(merged, COMMON, PLAN)
    assert any(a["samples"] != b["samples"] for a, b in zip(one, two) if a["status"] == "ok")
    for a, b, ab in zip(one, two, both):
        if a["status"] != "ok":
            assert (ab["status"], ab["reason"]) == (a["status"], a["reason"])
            continue
        assert ab["samples"] == a["samples"] + b["samples"] and ab["n"] == 2 * a["n"]
    for name in {b["run_name"] for b in merged["benchmarks"]}:
        runs = [b for b in merged["benchmarks"] if b["run_name"] == name]
        assert [b["repetition_index"] for b in runs] == list(range(len(runs)))
        assert {b["repetitions"] for b in runs} == {len(runs)}
    with pytest.raises(ValueError, match="no Google Benchmark legs"):
        gbench.merge([])
