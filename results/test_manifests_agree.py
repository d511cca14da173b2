"""The C++ and the Rust harness owe the same rows: planned on the same
machine (this one, and fixture trees standing in for others), their
manifests must list the same rows with the same texts, word for word.

Both harnesses plan without measuring (ubench --raplbench_plan_only, rbench
RAPLBENCH_PLAN_ONLY=1) and read fixtures through the same test hooks
(RAPLBENCH_POWERCAP_ROOT, RAPLBENCH_PMU_ROOT, RAPLBENCH_CPU_ROOT,
RAPLBENCH_DEV_CPU_ROOT). Each compares every field a result row takes from
its manifest row (not the benchmark ids, which differ by design). This is
what keeps the stand-in and unavailability texts of ubench/ and rbench/
together. Needs the build (make test builds first).
"""

import json
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest

from results import manifest, registry
from results.bench_all import FIXTURE_HOOKS as HOOKS
from results.bench_all import REPO, cargo

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


def plan_ubench(env: dict, out: Path) -> list[dict]:
    if not UBENCH.exists():
        pytest.skip(f"{UBENCH} not built (make build)")
    subprocess.run([str(UBENCH), "--raplbench_plan_only", f"--raplbench_manifest={out}"],
                   env=env, check=True, capture_output=True, timeout=120)
    return manifest.load(out, "gbench")


def plan_rbench(env: dict, out: Path) -> list[dict]:
    env = dict(env, RAPLBENCH_PLAN_ONLY="1", RAPLBENCH_MANIFEST=str(out))
    subprocess.run([cargo(), "bench", "--quiet", "-p", "rbench", "--bench", "paths"],
                   cwd=REPO, env=env, check=True, capture_output=True, timeout=600)
    return manifest.load(out, "criterion")


# "did not change in 103 ms (97 reads)": how long the liveness probe took and
# how often it read are measured, and differ from run to run
MEASURED = re.compile(r"in \d+ ms \(\d+ reads?\)")


def comparable(m: dict) -> dict:
    fields = manifest.row_fields(m) | {"status": m["status"], "reason": m["reason"],
                                       "has value": m["value"] is not None}
    if fields["liveness_note"]:
        fields["liveness_note"] = MEASURED.sub("in T ms (N reads)", fields["liveness_note"])
    return fields


@pytest.fixture(scope="module")
def manifests(tmp_path_factory):
    """{scenario: (ubench rows, rbench rows)}, each planned once."""
    planned = {}
    for name in SCENARIOS:
        tmp = tmp_path_factory.mktemp(re.sub(r"\W+", "-", name))
        env = {k: v for k, v in os.environ.items() if k not in HOOKS} | scenario_env(name, tmp)
        planned[name] = (plan_ubench(env, tmp / "gbench-manifest.json"),
                         plan_rbench(env, tmp / "criterion-manifest.json"))
    return planned


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_both_harnesses_plan_the_same_rows_in_the_same_words(manifests, scenario):
    ubench, rbench = manifests[scenario]
    # uinsn (and ubench's BPF tick-rate rows) are ubench's alone
    shared = set(registry.paths_of("criterion"))
    cpp = sorted((comparable(m) for m in ubench
                  if m["path"] in shared and m["metric"] == "latency"), key=json.dumps)
    rust = sorted((comparable(m) for m in rbench), key=json.dumps)
    assert cpp == rust


def path_order(rows: list[dict]) -> tuple[str, ...]:
    """The paths in the order their rows first appear."""
    return tuple(dict.fromkeys(m["path"] for m in rows))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_harness_owes_rows_for_exactly_its_registry_paths_in_its_order(manifests, scenario):
    ubench, rbench = manifests[scenario]
    # the registry's order is the order of tables and figures; the harnesses
    # keep it (ubench's RAPLBENCH_PATH numbers, rbench's paths! list)
    assert path_order(ubench) == registry.paths_of("gbench")
    assert path_order(rbench) == registry.paths_of("criterion")
