"""Criterion output -> rows, on real files of a QUICK run of rbench's
`paths` bench (fixtures/criterion/: its manifest and two benchmarks' files;
the other ten benchmarks of the manifest are left out on purpose, which
exercises the "no samples" error)."""

import json
from pathlib import Path

import pytest

from results import criterion, rows, schema
from results import manifest as manifest_mod

FIX = Path(__file__).with_name("fixtures") / "criterion"
COMMON = rows.common("test-run", "2026-11-22T00:00:00Z", {
    k: None for k in ("hostname", "cpu_vendor", "cpu_family", "cpu_model", "cpu_stepping",
                      "cpu_model_name", "microcode", "kernel", "hypervisor", "smt", "governor",
                      "boost", "tsc_khz", "mitigations")})


@pytest.fixture
def out():
    return criterion.normalize(manifest_mod.load(FIX / "raplbench-manifest.json"),
                               criterion.load_samples(FIX / "home"), COMMON)


def test_one_valid_row_per_manifest_row(out):
    assert len(out) == 12
    for r in out:
        assert schema.validate_row(r) == [], r
        assert r["harness"] == "criterion"


def test_samples_are_ns_per_iteration(out):
    perf = next(r for r in out if r["path"] == "perf" and r["op"] == "read" and r["cpu"] == 0)
    sample = json.loads((FIX / "home/perf/read/msr_tsc_@0-_0/new/sample.json").read_text())
    assert perf["status"] == "ok"
    assert perf["samples"] == pytest.approx([t / i for t, i in zip(sample["times"], sample["iters"])])
    assert perf["iterations"] == int(sample["iters"][0])
    assert perf["target"] == "msr/tsc/" and perf["target_cpu"] == 0
    assert perf["stand_in"].startswith("no 'power' PMU")


def test_benchmark_without_samples_is_an_error_not_a_number(out):
    missing = next(r for r in out if r["path"] == "msr-dev" and r["cpu"] == 1)
    assert missing["status"] == "error"
    assert "left no Criterion samples" in missing["reason"]
    assert missing["samples"] == []


def test_unavailable_manifest_row_keeps_its_reason():
    manifest = [{"bench": None, "path": "ebpf-lookup", "op": "lookup", "target": None,
                 "cpu": None, "target_cpu": None, "stand_in": None, "metric": "latency",
                 "unit": "ns", "status": "unavailable", "reason": "built without eBPF: no BTF"}]
    [r] = criterion.normalize(manifest, {}, COMMON)
    assert (r["status"], r["reason"]) == ("unavailable", "built without eBPF: no BTF")


def test_liveness_is_copied_from_the_manifest_and_absent_is_null():
    manifest = manifest_mod.load(FIX / "raplbench-manifest.json")
    # a manifest from before the probe has no verdict: the loader makes it null
    assert all(m["liveness"] is None for m in manifest)
    samples = criterion.load_samples(FIX / "home")
    assert all(r["liveness"] is None and r["liveness_note"] is None
               for r in criterion.normalize(manifest, samples, COMMON))
    note = "intel-rapl:0/energy_uj: did not change in 100 ms (98 reads): a dead counter"
    for m in manifest:
        m.update(liveness=None, liveness_note=None)
    manifest[0].update(stand_in=None, target="/sys/class/powercap/intel-rapl:0/energy_uj",
                       liveness="frozen", liveness_note=note)
    out = criterion.normalize(manifest, samples, COMMON)
    assert (out[0]["liveness"], out[0]["liveness_note"]) == ("frozen", note)
    assert all(schema.validate_row(r) == [] for r in out)


def _write_round(home, round_dir, full_id, iters, times):
    bench = home / round_dir / "perf" / "read" / "msr_tsc_@0-_0" / "new"
    bench.mkdir(parents=True)
    (bench / "benchmark.json").write_text(json.dumps({"full_id": full_id}))
    (bench / "sample.json").write_text(json.dumps({"sampling_mode": "Linear",
                                                   "iters": iters, "times": times}))


def test_rounds_give_one_block_per_round_in_round_order(tmp_path):
    """rbench's rounds (rbench/src/schedule.rs): a row's sample per round is
    the round's ns per iteration, as a Google Benchmark repetition is its
    block's; rounds sort by number (round-10 after round-02)."""
    fid = "perf/read/msr/tsc/@0->0"
    _write_round(tmp_path, "round-00", fid, [10, 20, 30], [1000, 2000, 3000])   # 100 ns
    _write_round(tmp_path, "round-10", fid, [10, 20], [3000, 3000])             # 200 ns
    _write_round(tmp_path, "round-02", fid, [5, 10, 15], [1500, 1500, 1500])    # 150 ns
    (tmp_path / "raplbench-manifest.json").write_text("{}")                    # not a round
    samples = criterion.load_samples(tmp_path)
    assert samples == {fid: {"iters": [60, 30, 30], "times": [6000, 4500, 6000]}}
    m = manifest_mod.load(FIX / "raplbench-manifest.json")
    row = next(r for r in m if r["bench"] == fid)
    [out] = criterion.normalize([row], samples, COMMON)
    assert out["samples"] == pytest.approx([100, 150, 200])
    assert out["iterations"] == 60  # the first round's block
    assert out["n"] == 3 and schema.validate_row(out) == []


def test_a_malformed_round_makes_the_row_an_error(tmp_path):
    fid = "perf/read/msr/tsc/@0->0"
    _write_round(tmp_path, "round-00", fid, [10], [1000])
    _write_round(tmp_path, "round-01", fid, [10, 20], [1000])
    m = manifest_mod.load(FIX / "raplbench-manifest.json")
    row = next(r for r in m if r["bench"] == fid)
    [out] = criterion.normalize([row], criterion.load_samples(tmp_path), COMMON)
    assert out["status"] == "error" and "malformed" in out["reason"]


def test_legs_give_their_rounds_in_leg_order(tmp_path):
    """bench-all's turns (results/bench_all.py, run_latency): each leg of
    rbench has its own home, leg-NN/; a row's blocks are every leg's rounds,
    legs in number order (leg-10 after leg-02)."""
    fid = "perf/read/msr/tsc/@0->0"
    _write_round(tmp_path, f"{criterion.leg_dir(10)}/round-01", fid, [10], [3000])  # 300 ns
    _write_round(tmp_path, f"{criterion.leg_dir(2)}/round-01", fid, [10], [2000])   # 200 ns
    _write_round(tmp_path, f"{criterion.leg_dir(1)}/round-01", fid, [10], [1000])   # 100 ns
    _write_round(tmp_path, f"{criterion.leg_dir(1)}/round-02", fid, [10], [1500])   # 150 ns
    samples = criterion.load_samples(tmp_path)
    assert samples == {fid: {"iters": [10, 10, 10, 10], "times": [1000, 1500, 2000, 3000]}}
    row = next(r for r in manifest_mod.load(FIX / "raplbench-manifest.json") if r["bench"] == fid)
    [out] = criterion.normalize([row], samples, COMMON)
    assert out["samples"] == pytest.approx([100, 150, 200, 300]) and out["n"] == 4


def test_a_malformed_round_in_one_leg_makes_the_row_an_error(tmp_path):
    """Not a row short of that leg's blocks."""
    fid = "perf/read/msr/tsc/@0->0"
    _write_round(tmp_path, f"{criterion.leg_dir(1)}/round-01", fid, [10], [1000])
    _write_round(tmp_path, f"{criterion.leg_dir(2)}/round-01", fid, [10, 20], [1000])
    row = next(r for r in manifest_mod.load(FIX / "raplbench-manifest.json") if r["bench"] == fid)
    [out] = criterion.normalize([row], criterion.load_samples(tmp_path), COMMON)
    assert out["status"] == "error" and "malformed" in out["reason"]
