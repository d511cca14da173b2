"""The two latency harnesses as bench-all steps: legs, turns, failures."""

import json
from pathlib import Path

import pytest

from results import criterion, gbench, latency_steps
from results.schedule import QUICK
from results.test_registry import COMMON

pytestmark = pytest.mark.serial  # runs the latency harnesses (conftest.py)


def test_the_latency_harnesses_take_turns_in_abba_order():
    """The turns that replaced running one harness after the other: a slow
    stretch of the VM now falls on both (results/README.md, "Agreement
    between the harnesses")."""
    assert latency_steps.leg_order(["g", "c"], 4) == [(1, "g"), (1, "c"), (2, "c"), (2, "g"),
                                                      (3, "g"), (3, "c"), (4, "c"), (4, "g")]
    assert latency_steps.leg_order(["c"], 1) == [(1, "c")]


def fake_legs(monkeypatch, outcomes):
    """LATENCY_LEGS whose legs record (leg, name, blocks) in the list
    returned and give outcomes[(name, leg)] (None: ran; a text: failed;
    an exception: raised), and whose rows are one row per leg run; the
    plan (outcomes[("plan", 0)]) is made as it says, and recorded too; so is
    the Criterion benchmark's executable (outcomes[("binary", 0)]: why not)."""
    seen = []

    def make_plan(run):
        seen.append((0, "plan", 0))
        return outcomes.get(("plan", 0))
    monkeypatch.setattr(latency_steps, "make_plan", make_plan)

    def criterion_binary(run):
        seen.append((0, "binary", 0))
        why = outcomes.get(("binary", 0))
        return (None, why) if why else ("paths-0123", None)
    monkeypatch.setattr(latency_steps, "criterion_binary", criterion_binary)

    def leg_of(name):
        def run_leg(run, leg, blocks, binary=None):
            assert binary == ("paths-0123" if name == "criterion" else None)
            seen.append((leg, name, blocks))
            outcome = outcomes.get((name, leg))
            if isinstance(outcome, Exception):
                raise outcome
            return outcome
        return run_leg

    def rows_of(name):
        return lambda run, legs: [{"harness": name, "legs": legs,
                                   "ran": sum(1 for _, n, _ in seen if n == name)}]
    monkeypatch.setattr(latency_steps, "LATENCY_LEGS",
                        {name: (leg_of(name), rows_of(name)) for name in ("gbench", "criterion")})
    return seen


def test_the_two_harnesses_alternate_legs_and_share_the_blocks(monkeypatch, tmp_path):
    seen = fake_legs(monkeypatch, {})
    run = latency_steps.Run(run_dir=tmp_path, raw_dir=tmp_path, quick=True, common=COMMON,
                        build_dir=tmp_path)
    got = latency_steps.run_latency(run, ["criterion", "gbench"])
    legs = QUICK.legs
    assert seen == [(0, "plan", 0), (0, "binary", 0)] + [
        (leg, name, blocks) for (leg, name), blocks in zip(
        latency_steps.leg_order(["criterion", "gbench"], legs),
        [b for b in QUICK.leg_blocks() for _ in range(2)])]
    assert got == {"criterion": [{"harness": "criterion", "legs": legs, "ran": legs}],
                   "gbench": [{"harness": "gbench", "legs": legs, "ran": legs}]}
    seen.clear()
    alone = latency_steps.run_latency(run, ["gbench"])  # alone: every block in one go
    assert seen == [(0, "plan", 0), (1, "gbench", QUICK.blocks)]
    seen.clear()
    latency_steps.run_latency(run, ["criterion"])  # its rows are the plan's too
    assert seen == [(0, "plan", 0), (0, "binary", 0), (1, "criterion", QUICK.blocks)]
    assert alone == {"gbench": [{"harness": "gbench", "legs": 1, "ran": 1}]}


def test_a_harness_whose_leg_fails_stops_and_the_other_goes_on(monkeypatch, tmp_path):
    seen = fake_legs(monkeypatch, {("gbench", 2): "raplbench-ubench exited with status 1",
                                   ("criterion", 3): KeyError("full_id")})
    run = latency_steps.Run(run_dir=tmp_path, raw_dir=tmp_path, quick=True, common=COMMON,
                        build_dir=tmp_path)
    got = latency_steps.run_latency(run, ["gbench", "criterion"])
    assert [leg for leg, name, _ in seen if name == "gbench"] == [1, 2]
    assert [leg for leg, name, _ in seen if name == "criterion"] == [1, 2, 3]
    assert {r["path"] for r in got["gbench"]} == set(gbench.PATHS)
    assert all(r["status"] == "error" and r["reason"] == "raplbench-ubench exited with status 1"
               for r in got["gbench"])
    assert {r["path"] for r in got["criterion"]} == set(criterion.PATHS)
    assert all(r["reason"].startswith("the criterion step crashed (KeyError: 'full_id')")
               for r in got["criterion"])
    assert "KeyError: 'full_id'" in (tmp_path / "criterion-crash.log").read_text()


def test_a_criterion_benchmark_cargo_cannot_name_fails_its_rows_and_gbench_goes_on(
        monkeypatch, tmp_path):
    why = "cargo bench --no-run exited with status 101"
    seen = fake_legs(monkeypatch, {("binary", 0): why})
    run = latency_steps.Run(run_dir=tmp_path, raw_dir=tmp_path, quick=True, common=COMMON,
                            build_dir=tmp_path)
    got = latency_steps.run_latency(run, ["criterion", "gbench"])
    assert [name for _, name, _ in seen if name != "gbench"] == ["plan", "binary"]
    assert [leg for leg, name, _ in seen if name == "gbench"] == list(range(1, QUICK.legs + 1))
    assert all(r["status"] == "error" and r["reason"] == why for r in got["criterion"])


def test_cargo_names_the_criterion_benchmark_it_built(tmp_path):
    """The executable the legs run, from cargo's own JSON messages (make build
    built it: nothing is compiled here)."""
    if not latency_steps.PLANNER.exists():
        pytest.skip("not built: run make build")
    run = latency_steps.Run(run_dir=tmp_path, raw_dir=tmp_path, quick=True, common=COMMON,
                            build_dir=tmp_path)
    binary, why = latency_steps.criterion_binary(run)
    assert why is None and Path(binary).is_file() and Path(binary).name.startswith("paths-")
    assert "--no-run --message-format=json" in (tmp_path / "criterion.log").read_text()


def test_a_failed_plan_makes_both_harnesses_rows_errors_saying_why(monkeypatch, tmp_path):
    """Both harnesses' rows are the plan's: without it neither runs."""
    seen = fake_legs(monkeypatch, {("plan", 0): "raplbench-plan exited with status 1"})
    run = latency_steps.Run(run_dir=tmp_path, raw_dir=tmp_path, quick=True, common=COMMON,
                        build_dir=tmp_path)
    got = latency_steps.run_latency(run, ["gbench", "criterion"])
    assert {name for _, name, _ in seen} == {"plan"}
    for name, module in (("gbench", gbench), ("criterion", criterion)):
        assert {r["path"] for r in got[name]} == set(module.PATHS)
        assert all(r["status"] == "error" and r["reason"] == (
            "no plan: raplbench-plan exited with status 1") for r in got[name])


def test_ubench_legs_are_handed_the_plan(monkeypatch, tmp_path):
    """Every leg of ubench times raw/plan.json, the plan made before the legs."""
    commands = []
    monkeypatch.setattr(latency_steps.child, "stream",
                        lambda cmd, log, **kw: commands.append(cmd) or 1)
    build = tmp_path / "build"
    build.mkdir()
    (build / "raplbench-ubench").touch()
    run = latency_steps.Run(run_dir=tmp_path, raw_dir=tmp_path, quick=True, common=COMMON,
                        build_dir=build)
    (tmp_path / "plan.json").write_text('{"rows": []}')
    assert latency_steps.gbench_leg(run, 1, 3) is not None  # the fake exits 1
    assert f"--raplbench_plan={tmp_path / 'plan.json'}" in commands[0]
    if latency_steps.PLANNER.exists():
        assert latency_steps.make_plan(run).startswith("raplbench-plan exited with status 1")
        assert commands[1] == [str(latency_steps.PLANNER), str(tmp_path / "plan.json")]


def test_the_rows_of_the_bpf_map_run_in_a_ubench_process_of_their_own(monkeypatch, tmp_path):
    """Issue 34: the BPF program ticks on every CPU once its first row runs,
    so its rows run after the others, in their own process; the filters
    split the plan's ids in two."""
    commands = []
    monkeypatch.setattr(latency_steps.child, "stream",
                        lambda cmd, log, **kw: commands.append(cmd) or 0)
    (tmp_path / "raplbench-ubench").touch()
    run = latency_steps.Run(run_dir=tmp_path, raw_dir=tmp_path, quick=True, common=COMMON,
                            build_dir=tmp_path)
    rows = [{"path": "perf", "open": {"perf": []}}, {"path": "ebpf-mmap", "open": {"bpf": {}}},
            {"path": "ebpf-lookup", "open": {"bpf": {}}}, {"path": "msr-dev", "open": None}]
    (tmp_path / "plan.json").write_text(json.dumps({"rows": rows}))
    assert latency_steps.gbench_leg(run, 2, 3) is None
    filters = [[a for a in cmd if a.startswith("--benchmark_filter")] for cmd in commands]
    assert filters == [["--benchmark_filter=-^(ebpf-lookup|ebpf-mmap)/"],
                       ["--benchmark_filter=^(ebpf-lookup|ebpf-mmap)/"]]
    outs = [[a for a in cmd if a.startswith("--benchmark_out=")] for cmd in commands]
    assert outs == [[f"--benchmark_out={tmp_path / 'gbench-leg2.json'}"],
                    [f"--benchmark_out={tmp_path / 'gbench-leg2-bpf.json'}"]]
    # a plan without them: one process, no filter
    (tmp_path / "plan.json").write_text(json.dumps({"rows": rows[:1]}))
    assert [out for out, _ in latency_steps.gbench_parts(run, 1)] == [tmp_path / "gbench-leg1.json"]


def test_the_plan_is_made_in_the_runs_mode(monkeypatch, tmp_path):
    """QUICK's plan times its cross-CPU rows idle and busy, a full run's in
    every state: raplbench-plan reads the mode from RAPLBENCH_QUICK."""
    if not latency_steps.PLANNER.exists():
        pytest.skip(f"{latency_steps.PLANNER} not built (make build)")
    envs = []
    monkeypatch.setattr(latency_steps.child, "stream",
                        lambda cmd, log, env, **kw: envs.append(env) or 1)
    monkeypatch.setenv("RAPLBENCH_QUICK", "1")
    for quick in (True, False):
        run = latency_steps.Run(run_dir=tmp_path, raw_dir=tmp_path, quick=quick, common=COMMON,
                                build_dir=tmp_path)
        latency_steps.make_plan(run)
    assert [e.get("RAPLBENCH_QUICK") for e in envs] == ["1", None]


def test_criterion_progress_shows_rounds_and_problems_not_every_block():
    assert latency_steps.is_criterion_progress("raplbench: round 3/10: 12 rows\n")
    assert latency_steps.is_criterion_progress("thread 'main' panicked at ...")
    assert not latency_steps.is_criterion_progress(
        "perf/read/msr/tsc/@0->0 time:   [753.65 ns 774.78 ns 792.81 ns]")
