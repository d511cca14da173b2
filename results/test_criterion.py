"""Criterion output -> rows, on real files of a QUICK run of rbench's
`paths` bench (fixtures/criterion/: the plan it timed, here the run's plan
too, and two benchmarks' files; the other ten benchmarks of the plan are
left out on purpose, which exercises the "no samples" error)."""

import json
from pathlib import Path

import pytest

from results import criterion, plan, rows, schema

FIX = Path(__file__).with_name("fixtures") / "criterion"
PLAN_FILE = FIX / "raplbench-plan.json"
FID = "perf/read/msr/tsc/@0->0"
COMMON = rows.common("test-run", "2026-11-22T00:00:00Z", {
    k: None for k in ("hostname", "cpu_vendor", "cpu_family", "cpu_model", "cpu_stepping",
                      "cpu_model_name", "microcode", "kernel", "hypervisor", "smt", "governor",
                      "boost", "tsc_khz", "mitigations")})


@pytest.fixture
def out():
    return criterion.normalize(plan.load(PLAN_FILE, "criterion"), criterion.load_timed(PLAN_FILE),
                               criterion.load_samples(FIX / "home"), COMMON)


def one_row(samples, timed=None, **change):
    """The rows of the plan's row FID alone, changed by `change`."""
    row = dict(next(r for r in plan.load(PLAN_FILE, "criterion") if r["id"] == FID), **change)
    return criterion.normalize([row], timed or ({FID: row}, {}), samples, COMMON)


def test_one_valid_row_per_plan_row(out):
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


def test_an_unavailable_plan_row_keeps_its_reason():
    [r] = one_row({}, status="unavailable", reason="built without eBPF: no BTF")
    assert (r["status"], r["reason"]) == ("unavailable", "built without eBPF: no BTF")


def test_what_criterion_did_not_time_says_why():
    row = next(r for r in plan.load(PLAN_FILE, "criterion") if r["id"] == FID)
    samples = criterion.load_samples(FIX / "home")
    for status in ("unavailable", "error"):
        [r] = one_row(samples, ({FID: row}, {FID: {"status": status, "reason": "read failed"}}))
        assert (r["status"], r["reason"], r["samples"]) == (status, "read failed", [])
    [r] = one_row(samples, ({FID: dict(row, status="unavailable", reason="no PMU")}, {}))
    assert (r["status"], r["reason"]) == ("unavailable", "no PMU")


def test_a_row_only_one_plan_lists_is_an_error():
    rows_ = plan.load(PLAN_FILE, "criterion")
    timed = ({r["id"]: r for r in rows_[1:]}, {})
    out = criterion.normalize(rows_[:-1], timed, criterion.load_samples(FIX / "home"), COMMON)
    assert len(out) == len(rows_)
    assert out[0]["status"] == "error" and "Criterion's in-process plan does not" in out[0]["reason"]
    assert out[-1]["status"] == "error" and "the run's plan does not" in out[-1]["reason"]
    assert (out[-1]["path"], out[-1]["target"]) == (rows_[-1]["path"], rows_[-1]["target"])
    assert all(schema.validate_row(r) == [] for r in out)


def test_the_run_plans_verdict_is_the_rows():
    """Criterion's in-process plan may probe another verdict: the row is
    the run's plan's, as ubench's."""
    note = "intel-rapl:0/energy_uj: did not change in 100 ms (98 reads): a dead counter"
    samples = criterion.load_samples(FIX / "home")
    [r] = one_row(samples, stand_in=None, target="power/energy-pkg/", liveness="frozen",
                  liveness_note=note)
    assert (r["status"], r["liveness"], r["liveness_note"]) == ("ok", "frozen", note)
    assert schema.validate_row(r) == []


@pytest.mark.parametrize("not_timed", [None, [], {"x": {"status": "ok", "reason": "?"}}])
def test_a_timed_plan_without_its_not_timed_is_refused(tmp_path, not_timed):
    doc = json.loads(PLAN_FILE.read_text())
    doc["not_timed"] = not_timed
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="p.json: no \"not_timed\""):
        criterion.load_timed(tmp_path / "p.json")


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
    fid = FID
    _write_round(tmp_path, "round-00", fid, [10, 20, 30], [1000, 2000, 3000])   # 100 ns
    _write_round(tmp_path, "round-10", fid, [10, 20], [3000, 3000])             # 200 ns
    _write_round(tmp_path, "round-02", fid, [5, 10, 15], [1500, 1500, 1500])    # 150 ns
    (tmp_path / "raplbench-plan.json").write_text("{}")                        # not a round
    samples = criterion.load_samples(tmp_path)
    assert samples == {fid: {"iters": [60, 30, 30], "times": [6000, 4500, 6000]}}
    [out] = one_row(samples)
    assert out["samples"] == pytest.approx([100, 150, 200])
    assert out["iterations"] == 60  # the first round's block
    assert out["n"] == 3 and schema.validate_row(out) == []


def test_a_malformed_round_makes_the_row_an_error(tmp_path):
    fid = FID
    _write_round(tmp_path, "round-00", fid, [10], [1000])
    _write_round(tmp_path, "round-01", fid, [10, 20], [1000])
    [out] = one_row(criterion.load_samples(tmp_path))
    assert out["status"] == "error" and "malformed" in out["reason"]


def test_legs_give_their_rounds_in_leg_order(tmp_path):
    """bench-all's turns (results/bench_all.py, run_latency): each leg of
    rbench has its own home, leg-NN/; a row's blocks are every leg's rounds,
    legs in number order (leg-10 after leg-02)."""
    fid = FID
    _write_round(tmp_path, f"{criterion.leg_dir(10)}/round-01", fid, [10], [3000])  # 300 ns
    _write_round(tmp_path, f"{criterion.leg_dir(2)}/round-01", fid, [10], [2000])   # 200 ns
    _write_round(tmp_path, f"{criterion.leg_dir(1)}/round-01", fid, [10], [1000])   # 100 ns
    _write_round(tmp_path, f"{criterion.leg_dir(1)}/round-02", fid, [10], [1500])   # 150 ns
    samples = criterion.load_samples(tmp_path)
    assert samples == {fid: {"iters": [10, 10, 10, 10], "times": [1000, 1500, 2000, 3000]}}
    [out] = one_row(samples)
    assert out["samples"] == pytest.approx([100, 150, 200, 300]) and out["n"] == 4


def test_a_malformed_round_in_one_leg_makes_the_row_an_error(tmp_path):
    """Not a row short of that leg's blocks."""
    fid = FID
    _write_round(tmp_path, f"{criterion.leg_dir(1)}/round-01", fid, [10], [1000])
    _write_round(tmp_path, f"{criterion.leg_dir(2)}/round-01", fid, [10, 20], [1000])
    [out] = one_row(criterion.load_samples(tmp_path))
    assert out["status"] == "error" and "malformed" in out["reason"]
