"""Tests of the Google Benchmark normalizer against a golden file.

fixtures/gbench-1.7.1.json is real Google Benchmark 1.7.1 output (a stub
program with ubench's manifest, --benchmark_repetitions=3); the golden
fixtures/gbench-1.7.1.golden.jsonl is what normalize() makes of it with the
fixed run id, timestamp and machine below. After an intended change of the
normalizer or of the schema, rewrite the golden and review the diff:

    .venv/bin/python -m results.test_gbench
"""

import copy
import json

import pytest

from results import gbench, manifest, rows, schema
from results.conftest import FIXTURES

GB_JSON = FIXTURES / "gbench-1.7.1.json"
GOLDEN = FIXTURES / "gbench-1.7.1.golden.jsonl"

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
    rows.write_jsonl(gbench.normalize(gbench.load(GB_JSON), COMMON), GOLDEN)
    print(f"wrote {GOLDEN}")


@pytest.fixture
def gb():
    return gbench.load(GB_JSON)


def test_normalize_matches_golden(gb):
    out = gbench.normalize(gb, COMMON)
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
    assert by_op["uinsn", "cycles"]["unit"] == "cycles"
    msr = by_op["msr-dev", "latency"]
    assert (msr["status"], msr["reason"]) == (
        "unavailable", "/dev/cpu/0/msr missing: load the msr module (modprobe msr)")
    lookup = by_op["ebpf-lookup", "latency"]
    assert lookup["status"] == "error" and "Operation not permitted" in lookup["reason"]
    powercap = by_op["powercap", "latency"]
    assert powercap["status"] == "unavailable" and powercap["samples"] == []
    sysread = by_op["sys-read", "latency"]
    assert sysread["reason"] == ("benchmark sys-read/pread/cpu:0 produced no repetitions "
                                 "(filtered out or crashed?)")


def test_repetitions_are_ordered_and_time_units_converted(gb):
    gb = copy.deepcopy(gb)
    runs = [b for b in gb["benchmarks"] if b["run_name"] == "perf/read/cpu:0/target:1"
            and b["run_type"] == "iteration"]
    for i, run in enumerate(runs):
        run["real_time"], run["time_unit"] = [3, 1, 2][i], "ms"
    gb["benchmarks"] = list(reversed(gb["benchmarks"]))
    perf = gbench.normalize(gb, COMMON)[0]
    assert perf["samples"] == [3e6, 1e6, 2e6]  # repetition order, in ns


def test_missing_counter_is_an_error_row(gb):
    gb = copy.deepcopy(gb)
    for b in gb["benchmarks"]:
        b.pop("ns_per_op", None)
    nop = gbench.normalize(gb, COMMON)[1]
    assert nop["status"] == "error" and "ns_per_op" in nop["reason"]


def test_tsc_khz_hint(gb):
    assert gbench.tsc_khz_hint(gb) == 2599998
    del gb["context"]["raplbench_tsc_khz"]
    assert gbench.tsc_khz_hint(gb) is None


def test_missing_manifest_says_where_it_comes_from(gb):
    del gb["context"]["raplbench_manifest"]
    with pytest.raises(ValueError, match="origin.json: no manifest: .*--raplbench_manifest=FILE"):
        gbench.normalize(gb, COMMON, origin="origin.json")


def test_a_manifest_file_replaces_the_embedded_one(tmp_path, gb):
    embedded = gbench.embedded_manifest(gb)
    del gb["context"]["raplbench_manifest"]
    path = tmp_path / "gbench-manifest.json"
    path.write_text(json.dumps({"manifest_version": 1, "harness": "gbench", "rows": embedded}))
    assert gbench.normalize(gb, COMMON, manifest.load(path, "gbench")) == golden_rows()


def test_malformed_json_names_the_file(tmp_path):
    path = tmp_path / "gbench.json"
    path.write_text(GB_JSON.read_text()[:500])  # a run that died mid-write
    with pytest.raises(ValueError, match=f"{path}: not valid JSON"):
        gbench.load(path)
    path.write_text("[]")
    with pytest.raises(ValueError, match="not Google Benchmark JSON"):
        gbench.load(path)


def test_bad_manifest_string(gb):
    gb["context"]["raplbench_manifest"] = "{rows: oops"
    with pytest.raises(ValueError, match=r"\(raplbench_manifest\): not valid JSON"):
        gbench.normalize(gb, COMMON)


FROZEN_NOTE = ("power/energy-psys/ on CPU 0: did not change in 100 ms (97 reads): "
               "a dead counter, it yields no energy")


def test_liveness_is_copied_from_the_manifest(gb):
    manifest_rows = gbench.embedded_manifest(gb)
    for m in manifest_rows:  # as a manifest of schema 2 writes them, right after stand_in
        m.update(liveness=None, liveness_note=None)
    perf, msr = manifest_rows[0], manifest_rows[3]
    perf.update(stand_in=None, target="power/energy-psys/", liveness="frozen",
                liveness_note=FROZEN_NOTE)
    msr.update(liveness="live")
    gb["context"]["raplbench_manifest"] = json.dumps({"rows": manifest_rows})
    out = gbench.normalize(gb, COMMON)
    assert (out[0]["liveness"], out[0]["liveness_note"]) == ("frozen", FROZEN_NOTE)
    assert (out[3]["liveness"], out[3]["liveness_note"]) == ("live", None)
    assert all(r["liveness"] is None for i, r in enumerate(out) if i not in (0, 3))
    assert all(schema.validate_row(r) == [] for r in out)


def test_an_old_manifest_without_liveness_gives_null():
    assert all((r["liveness"], r["liveness_note"]) == (None, None) for r in golden_rows())
    text = gbench.load(GB_JSON)["context"]["raplbench_manifest"]
    assert all("liveness" not in m for m in json.loads(text)["rows"])


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
    one, two = gbench.normalize(gb, COMMON), gbench.normalize(later, COMMON)
    both = gbench.normalize(merged, COMMON)
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
