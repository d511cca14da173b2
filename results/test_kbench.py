"""kbench report -> rows, on a stored guest log of the QEMU boot test
(fixtures/kbench-qemu-guest.log: real output of kbench/qemu/test under
TCG emulation, so its timings mean nothing; only the format matters)."""

from pathlib import Path

import pytest

from results import kbench, rows, schema

LOG = Path(__file__).with_name("fixtures") / "kbench-qemu-guest.log"
COMMON = rows.common("test-run", "2026-11-22T00:00:00Z", {
    "hostname": None, "cpu_vendor": None, "cpu_family": None, "cpu_model": None,
    "cpu_stepping": None, "cpu_model_name": None, "microcode": None, "kernel": None,
    "hypervisor": "qemu-tcg", "smt": None, "governor": None, "boost": None,
    "tsc_khz": None, "mitigations": None})


@pytest.fixture
def parts():
    return kbench.guest_parts(LOG.read_text())


def test_guest_log_splits_into_its_parts(parts):
    assert list(parts) == ["machine", "checks", "report", "unload", "done"]


def test_report_rows_validate_and_pair_cycles_with_ns(parts):
    out = kbench.report_rows(parts["report"], COMMON)
    for r in out:
        assert schema.validate_row(r) == [], r
    nop = {r["metric"]: r for r in out if r["op"] == "nop"}
    assert set(nop) == {"latency", "cycles"}
    tsc_khz = kbench.report_tsc_khz(parts["report"])
    assert nop["latency"]["samples"][0] == pytest.approx(nop["cycles"]["samples"][0] * 1e6 / tsc_khz)
    assert nop["cycles"]["n"] == 10
    msr = next(r for r in out if r["op"] == "rdmsr:0x611")
    assert (msr["path"], msr["target"], msr["cpu"], msr["target_cpu"]) == ("kinsn", "0x611", 0, 0)
    proc = next(r for r in out if r["path"] == "proc-read" and r["metric"] == "latency")
    assert (proc["op"], proc["target"], proc["cpu"]) == ("read", "/proc/kbench/stamp", 0)


def test_faulting_msr_is_unavailable_not_a_number(parts):
    # the report of rdmsr 0x641 as a CPU without that MSR gives it
    head, _, rest = parts["report"].partition("=== op /proc/kbench/rdmsr_0x641\n")
    body, sep, tail = rest.partition("=== op ")
    faulting = "\n".join(line for line in body.splitlines() if not line.startswith("batch "))
    faulting = faulting.replace("status: ok", "status: unsupported")
    out = kbench.report_rows(head + "=== op /proc/kbench/rdmsr_0x641\n" + faulting + "\n" + sep + tail,
                             COMMON)
    msr = [r for r in out if r["op"] == "rdmsr:0x641"]
    assert len(msr) == 1 and msr[0]["status"] == "unavailable"
    assert "0x641 faults" in msr[0]["reason"]
    assert schema.validate_row(msr[0]) == []


def test_truncated_report_is_an_error(parts):
    with pytest.raises(ValueError, match="truncated"):
        kbench.report_rows(parts["report"][: len(parts["report"]) // 2], COMMON)


def test_machine_of_the_guest_comes_from_its_dump(parts):
    m = kbench.machine_from_dump(parts["machine"], tsc_khz_hint=2599978, hypervisor="qemu-tcg")
    assert m["cpu_vendor"] == "GenuineIntel"
    assert m["kernel"].endswith("-amd64")
    assert m["hypervisor"] == "qemu-tcg"
    assert m["tsc_khz"] == 2599978
    assert schema.validate_machine(m) == []


def test_unavailable_rows_cover_every_kbench_path():
    out = kbench.unavailable_rows(COMMON, "no module support")
    assert {r["path"] for r in out} == set(kbench.PATHS)
    assert all(r["status"] == "unavailable" and r["reason"] == "no module support" for r in out)
