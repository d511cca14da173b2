"""The overhead experiment: a sampler that dies while the workload runs
is an error quoting what it said (the background sampler itself is
tested in results/test_sampler.py); placements, keys, resolution and the
paired rounds. The kernel mechanism's module is loaded once for the whole
experiment and always removed; where it cannot load, its rows give the
load script's reason."""

import os
import shutil
import stat
import subprocess
import sys

import pytest

from results import overhead, registry, rows, sampler, schema
from results.test_ksample_module import REASON, FakeModule

pytestmark = pytest.mark.serial  # times a workload under the samplers (conftest.py)


def fake_sampler(tmp_path, monkeypatch, body: str):
    """A stand-in raplbench-sample: a Python script with `body`."""
    script = tmp_path / "raplbench-sample"
    script.write_text(f"#!{sys.executable}\nimport sys, signal, time\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sampler, "BINARY", script)


def test_a_sampler_that_dies_while_the_workload_runs_is_an_error(tmp_path, monkeypatch):
    """A sampler that died after its banner would show as about 0 % overhead:
    one_pair raises (a RuntimeError, which bench_all turns into error rows),
    quoting what it said. Its sampler was started pinned, writing the
    condition's CSV."""
    fake_sampler(tmp_path, monkeypatch, """
print("raplbench-sample: sampling perf (msr/tsc/) at 1000 Hz on CPU 1", file=sys.stderr, flush=True)
print("raplbench-sample: read failed: EIO", file=sys.stderr, flush=True)
sys.exit(1)
""")
    started = []
    real = sampler.Background

    def spy(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]

    def fake_time(command, out):
        if out.name.endswith("-sampled.json"):
            started[-1].proc.wait()  # it dies while the workload runs
        return 1.0, 1.0

    monkeypatch.setattr(sampler, "Background", spy)
    monkeypatch.setattr(overhead, "time_once", fake_time)
    cpu = max(os.sched_getaffinity(0))
    c = overhead.Condition("perf", overhead.Placement("other CPU", cpu, 0))
    with pytest.raises(RuntimeError, match=r"^raplbench-sample --mechanism perf exited \(status 1\) "
                                           r"before it was stopped: .*read failed: EIO$"):
        overhead.one_pair(c, ["true"], tmp_path, sampled_first=False)
    args = started[0].proc.args
    assert args[args.index("--output") + 1] == str(tmp_path / "overhead-perf-other.csv")
    assert args[args.index("--cpu") + 1] == str(cpu) and "--frequency" not in args
    assert c.wall == []


def test_placements_pin_the_workload_to_the_last_cpu():
    assert overhead.placements({0, 1, 2, 3}) == [overhead.Placement("same CPU", 3, 3),
                                                 overhead.Placement("other CPU", 0, 3)]
    assert overhead.placements({5}) == [overhead.Placement("same CPU", 5, 5)]


MACHINE = {field: None for field in schema.SCHEMA["$defs"]["machine"]["required"]}
COMMON = rows.common("20261123T000000Z-abcdef", "2026-11-23T00:00:00Z", MACHINE)


def condition(wall, cpu=None, where=overhead.Placement("same CPU", 1, 1)):
    return overhead.Condition("perf", where, wall=list(wall), cpu=list(cpu or wall),
                              bare=[(0.25, 0.24)] * len(wall))


def test_calibration_ignores_a_cold_first_run_and_scales_from_a_long_enough_one(monkeypatch):
    """A cold first stress-ng run took 8x its warm time, and the workload
    came out 15 ms instead of 50: the calibration warms up, times each count
    CALIBRATION_RUNS times and scales from the median of a run of at least
    half the target."""
    ran = []

    def fake_run(command, **kw):
        ops = int(command[command.index("--cpu-ops") + 1])
        ran.append(ops)
        # 0.4 ms per op warm; the very first run 8x slower, one run in 3 a spike
        clock[0] += (8 if len(ran) == 1 else 3 if len(ran) % 3 == 0 else 1) * 0.0004 * ops

    clock = [0.0]
    monkeypatch.setattr(overhead.child, "run", fake_run)
    monkeypatch.setattr(overhead.time, "monotonic", lambda: clock[0])
    ops = overhead.calibrate(0.05, 1)
    assert ops == 125  # 0.05 s at 0.4 ms an op
    assert ran[0] == 25 and ran.count(100) == overhead.CALIBRATION_RUNS


def test_keys_hold_no_calibrated_count():
    """Issue 13: the calibrated --cpu-ops changed every run's keys, so the
    gate found every overhead row missing. The count lives in parameters."""
    c = condition([1.0] * 20)
    keys = set()
    for ops in (297, 5778):
        for row in overhead.condition_rows(COMMON, c, ops, None, False, 1.0, 420.0):
            keys.add(tuple(row[k] for k in ("harness", "path", "op", "target", "cpu",
                                            "target_cpu", "metric")))
            assert row["parameters"]["cpu_ops"] == ops and str(ops) not in row["target"]
    assert len(keys) == 2  # wall time and CPU time, whatever the count


@pytest.mark.parametrize("quick,wall,resolved,note", [
    (False, [0.5 + 0.01 * i for i in range(30)], True, None),
    (False, [(-1) ** i * 3.0 for i in range(30)], False,
     "not resolved at this n: 30 pairs gave ±3.00 points, the target is ±0.5"),
    (False, [1.0] * 5, False, "not resolved at this n: 5 pairs gave no CI, the target is ±0.5"),
    (True, [1.0] * 12, False, "a QUICK run (12 pairs) is never an overhead finding"),
])
def test_resolution(quick, wall, resolved, note):
    row = overhead.condition_rows(COMMON, condition(wall), 100, None, quick, 1.0, 12.0)[0]
    assert row["resolution"]["resolved"] is resolved
    assert row["resolution"]["note"] == note
    assert row["resolution"]["target_half_width"] == overhead.TARGET_HALF_WIDTH
    assert schema.validate_row(row) == []


def test_rounds_stop_for_a_resolved_condition_and_at_the_budget(tmp_path, monkeypatch):
    """Paired rounds: every open condition gets one pair per round, in
    alternating order; one that resolved stops; the budget ends the rest."""
    FakeModule(tmp_path, monkeypatch, load="unavailable")
    clock = [0.0]
    calls = []
    msr_pairs = []

    class FakeSampler:
        def __init__(self, mechanism, *, output, cpu=None):
            calls.append(("start", mechanism, cpu))
            assert output.name == f"overhead-{mechanism}-{'same' if cpu == 1 else 'other'}.csv"
            self.mechanism = mechanism

        def stop(self):
            calls.append(("stop", self.mechanism))

    def fake_time(command, out):
        clock[0] += 1.0
        sampled = out.name.endswith("-sampled.json")
        mech = out.name.split("-")[0]
        # perf: a steady +1 % (resolves); msr: +-4 % alternating (never resolves)
        if not sampled:
            return 1.0, 1.0
        if mech == "perf":
            return 1.01, 1.0
        msr_pairs.append(out.name)
        return (1.04 if len(msr_pairs) % 2 else 0.96), 1.0

    monkeypatch.setattr(overhead, "calibrate", lambda target, cpu: 123)
    monkeypatch.setattr(overhead, "time_once", fake_time)
    monkeypatch.setattr(sampler, "Background", FakeSampler)
    monkeypatch.setattr(overhead.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(overhead.shutil, "which", lambda tool: "/usr/bin/" + tool)
    monkeypatch.setattr(overhead, "budget_s", lambda quick: 200.0)
    got = overhead.run(COMMON, tmp_path, False, {"perf": None, "msr": "a stand-in"},
                       allowed_cpus={0, 1})
    wall = {(r["op"], r["parameters"]["placement"]): r for r in got
            if r["status"] == "ok" and r["target"].endswith("wall time")}
    assert set(wall) == {("perf", "same CPU"), ("perf", "other CPU"),
                         ("msr", "same CPU"), ("msr", "other CPU")}
    for place in ("same CPU", "other CPU"):
        perf, msr = wall[("perf", place)], wall[("msr", place)]
        assert perf["resolution"]["resolved"] and perf["n"] == overhead.min_pairs(False)
        assert abs(perf["median"] - 1.0) < 1e-9
        assert not msr["resolution"]["resolved"] and msr["n"] > perf["n"]
        assert msr["stand_in"] == "a stand-in" and msr["cpu"] == (1 if place == "same CPU" else 0)
    assert ("start", "perf", 0) in calls and ("start", "msr", 1) in calls
    unavailable = {r["op"]: r for r in got if r["status"] == "unavailable"}
    assert set(unavailable) == set(registry.MECHANISMS) - {"perf", "msr"}
    assert unavailable["powercap"]["reason"] == (
        "the sampler cannot sample here (see its sampler row)")
    # the kernel mechanism did not sample here: the module's load says why
    assert unavailable["kernel"]["reason"] == f"the ksample module cannot be loaded here: {REASON}"


def fake_experiment(tmp_path, monkeypatch, fake: FakeModule, fail_on=None):
    """overhead.run without hyperfine, stress-ng or a sampler: every sampled
    run +1 %. Returns the calls: ("start", mechanism, cpu, module loaded?)
    and ("stop", mechanism); the sampler of `fail_on` dies."""
    calls = []

    class FakeSampler:
        def __init__(self, mechanism, *, output, cpu=None):
            calls.append(("start", mechanism, cpu, fake.state()))
            self.mechanism = mechanism

        def stop(self):
            calls.append(("stop", self.mechanism))
            if self.mechanism == fail_on:
                raise RuntimeError(f"raplbench-sample --mechanism {fail_on} exited (status 1)")

    def fake_time(command, out):
        return (1.01, 1.0) if out.name.endswith("-sampled.json") else (1.0, 1.0)

    monkeypatch.setattr(overhead, "calibrate", lambda target, cpu: 123)
    monkeypatch.setattr(overhead, "time_once", fake_time)
    monkeypatch.setattr(sampler, "Background", FakeSampler)
    monkeypatch.setattr(overhead.shutil, "which", lambda tool: "/usr/bin/" + tool)
    monkeypatch.setattr(overhead, "budget_s", lambda quick: 0.0)
    return calls


def test_the_kernel_mechanism_runs_with_the_module_loaded_once(tmp_path, monkeypatch):
    """Loaded once for the whole experiment (warm-up included), removed at
    its end, after the last sampler stopped; its drain thread placed like
    the other mechanisms' samplers."""
    fake = FakeModule(tmp_path, monkeypatch)
    calls = fake_experiment(tmp_path, monkeypatch, fake)
    got = overhead.run(COMMON, tmp_path, True, {"perf": None, "kernel": None},
                       allowed_cpus={0, 1})
    assert fake.calls() == ["load ksample", "rmmod ksample"] and not fake.state()
    kernel_starts = [c for c in calls if c[:2] == ("start", "kernel")]
    assert kernel_starts and all(loaded for *_, loaded in kernel_starts)
    assert {cpu for _, _, cpu, _ in kernel_starts} == {0, 1}
    measured = {(r["op"], r["parameters"]["placement"]) for r in got if r["status"] == "ok"}
    assert measured == {(m, p) for m in ("perf", "kernel") for p in ("same CPU", "other CPU")}
    assert all(schema.validate_row(r) == [] for r in got)


def test_where_the_module_cannot_load_the_kernel_rows_say_why(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch, load="unavailable")
    calls = fake_experiment(tmp_path, monkeypatch, fake)
    got = overhead.run(COMMON, tmp_path, True, {"perf": None, "kernel": None},
                       allowed_cpus={0, 1})
    assert not any(c[:2] == ("start", "kernel") for c in calls)
    (kernel,) = [r for r in got if r["op"] == "kernel"]
    assert kernel["status"] == "unavailable" and kernel["metric"] == "overhead_pct"
    assert kernel["reason"] == f"the ksample module cannot be loaded here: {REASON}"
    assert {r["op"] for r in got if r["status"] == "ok"} == {"perf"}
    assert fake.calls() == ["load ksample"]


def test_a_failed_experiment_still_removes_the_module(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)
    fake_experiment(tmp_path, monkeypatch, fake, fail_on="perf")
    with pytest.raises(RuntimeError, match="exited"):
        overhead.run(COMMON, tmp_path, True, {"perf": None, "kernel": None},
                     allowed_cpus={0, 1})
    assert fake.calls()[-1] == "rmmod ksample" and not fake.state()


def test_without_hyperfine_nothing_is_loaded(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)
    monkeypatch.setattr(overhead.shutil, "which", lambda tool: None)
    got = overhead.run(COMMON, tmp_path, True, {"kernel": None}, allowed_cpus={0, 1})
    assert [r["op"] for r in got] == list(sampler.MECHANISMS)
    assert all("hyperfine" in r["reason"] for r in got) and fake.calls() == []


def test_the_workload_starts_in_a_directory_it_cannot_write(tmp_path):
    """stress-ng aborted ("temp-path '.' must be readable and writeable") for
    a user whose working directory was a checkout of another user."""
    if shutil.which("stress-ng") is None:
        pytest.skip("stress-ng not installed")
    closed = tmp_path / "closed"
    closed.mkdir()
    closed.chmod(0o555)
    tmp_path.chmod(0o755)
    cmd = overhead.workload(25, min(os.sched_getaffinity(0)))
    if os.geteuid() == 0:  # root writes anywhere: run it as nobody
        if shutil.which("runuser") is None:
            pytest.skip("runuser (util-linux) not installed")
        cmd = ["runuser", "-u", "nobody", "--", *cmd]
    done = subprocess.run(cmd, cwd=closed, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_driver_keeps_off_the_workloads_cpu_while_it_times_and_comes_back():
    """The hyperfine runs inherit the driver's affinity: off the workload's
    CPU during the experiment, as before afterwards; alone on it, it stays."""
    before = os.sched_getaffinity(0)
    w = max(before)
    with overhead.kept_off(w):
        inside = os.sched_getaffinity(0)
    assert os.sched_getaffinity(0) == before
    assert inside == (before - {w} or before)
    with pytest.raises(RuntimeError), overhead.kept_off(w):
        raise RuntimeError("a failed pair")
    assert os.sched_getaffinity(0) == before
