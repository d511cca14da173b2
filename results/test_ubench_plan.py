"""ubench times exactly the plan's rows: rbench's raplbench-plan plans a
machine (this one, and fixture trees standing in for others, through the
hooks of results/fixture_hooks.json), ubench reads that plan and lists,
without measuring (--benchmark_list_tests), one benchmark per runnable
gbench row of the plan, in order, each named by the row's id: the name
results/gbench.py joins its figures to the row by. Needs the build (make
test builds first)."""

import json
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

from results import gbench, registry
from results.bench_all import FIXTURE_HOOKS as HOOKS
from results.bench_all import REPO
from results.latency_steps import PLANNER

pytestmark = pytest.mark.serial  # runs ubench on this machine (conftest.py)

UBENCH = REPO / "build" / "raplbench-ubench"
TESTDATA = REPO / "ubench" / "testdata"
TWO_PACKAGES = TESTDATA / "two-packages" / "sys"
# RAPL MSRs of both vendors with plausible values: unit (ESU 14), then energy counters
MSRS = {0x606: 0xA0E03, 0x611: 123456, 0x639: 2345, 0x641: 345, 0x619: 45, 0x64D: 5,
        0xC0010299: 0xA1003, 0xC001029A: 1234, 0xC001029B: 56789}


def msr_tree(root: Path, cpus=4) -> Path:
    """A /dev/cpu stand-in: <root>/<N>/msr sparse files holding MSRS."""
    for cpu in range(cpus):
        (root / str(cpu)).mkdir(parents=True)
        with open(root / str(cpu) / "msr", "wb") as f:
            for address, value in MSRS.items():
                f.seek(address)
                f.write(struct.pack("<Q", value))
    return root


def scenario_env(name: str, tmp: Path) -> dict:
    """The hooks of one scenario; every hook unset means this machine."""
    empty = tmp / "empty"
    empty.mkdir()
    if name == "this machine":
        return {}
    if name == "two packages":
        return {"RAPLBENCH_POWERCAP_ROOT": str(TWO_PACKAGES / "class" / "powercap"),
                "RAPLBENCH_PMU_ROOT": str(TWO_PACKAGES / "bus" / "event_source" / "devices"),
                "RAPLBENCH_CPU_ROOT": str(TWO_PACKAGES / "devices" / "system" / "cpu"),
                "RAPLBENCH_DEV_CPU_ROOT": str(msr_tree(tmp / "dev-cpu"))}
    if name == "laptop zones, no devices":
        sys_root = TESTDATA / "sys"
        return {"RAPLBENCH_POWERCAP_ROOT": str(sys_root / "class" / "powercap"),
                "RAPLBENCH_PMU_ROOT": str(sys_root / "bus" / "event_source" / "devices"),
                "RAPLBENCH_DEV_CPU_ROOT": str(empty)}
    if name == "nothing at all":
        return {hook: str(empty) for hook in HOOKS if hook != "RAPLBENCH_CPU_ROOT"}
    raise ValueError(name)


SCENARIOS = ("this machine", "two packages", "laptop zones, no devices", "nothing at all")


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """{scenario: (the plan's rows, the names of ubench's benchmarks)}."""
    for binary in (PLANNER, UBENCH):
        if not binary.exists():
            pytest.skip(f"{binary} not built (make build)")
    got = {}
    for name in SCENARIOS:
        tmp = tmp_path_factory.mktemp(re.sub(r"\W+", "-", name))
        env = {k: v for k, v in os.environ.items() if k not in HOOKS} | scenario_env(name, tmp)
        plan = tmp / "plan.json"
        subprocess.run([str(PLANNER), str(plan)], env=env, check=True, timeout=120)
        listed = subprocess.run([str(UBENCH), f"--raplbench_plan={plan}",
                                 "--benchmark_list_tests"], check=True, capture_output=True,
                                text=True, timeout=120).stdout
        got[name] = (json.loads(plan.read_text())["rows"], listed.splitlines())
    return got


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_ubench_times_exactly_the_plans_runnable_gbench_rows_under_their_ids(planned, scenario):
    plan, names = planned[scenario]
    owed = [row["id"] for row in plan if "gbench" in row["harnesses"] and row["status"] == "ok"]
    assert [gbench.row_id(name) for name in names] == owed


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_plan_owes_each_harness_its_registry_paths_in_order(planned, scenario):
    plan, _ = planned[scenario]
    # the registry's order is the order of tables and figures
    for harness in ("gbench", "criterion"):
        paths = [row["path"] for row in plan if harness in row["harnesses"]]
        assert tuple(dict.fromkeys(paths)) == registry.paths_of(harness)
