"""kbench report -> rows, on a stored guest log of the QEMU boot test
(fixtures/kbench-qemu-guest.log: real output of kbench/qemu/test under
TCG emulation, so its timings mean nothing; only the format matters)."""

import json
import os
import tempfile
from pathlib import Path

import pytest

from results import kbench, rows, schema

pytestmark = pytest.mark.serial  # runs kbench's report on this machine (conftest.py)

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
    assert list(parts) == ["machine", "checks", "report", "stress", "unload", "done"]


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


def _with_nop_report(parts, edit):
    """The report with the nop operation's lines passed through `edit`."""
    head, _, rest = parts["report"].partition("=== op /proc/kbench/nop\n")
    body, sep, tail = rest.partition("=== op ")
    return head + "=== op /proc/kbench/nop\n" + edit(body) + sep + tail


def test_a_report_whose_batches_were_all_cut_is_an_error_row(parts):
    def all_cut(body):
        lines = [line for line in body.splitlines() if not line.startswith("batch ")]
        return "\n".join(line.replace("status: ok", "status: cut") for line in lines) + \
            "\nbatches_cut: 10\n"
    nop = [r for r in kbench.report_rows(_with_nop_report(parts, all_cut), COMMON)
           if r["op"] == "nop"]
    assert len(nop) == 1 and nop[0]["status"] == "error"
    assert "every batch (10 of 10) ran past the module's 1 ms interrupts-off deadline" in \
        nop[0]["reason"]
    assert schema.validate_row(nop[0]) == []


def test_the_batches_left_after_some_were_cut_are_the_samples(parts):
    def three_cut(body):
        lines = body.splitlines()
        kept = [line for line in lines if not line.startswith(("batch 7", "batch 8", "batch 9"))]
        return "\n".join(kept) + "\nbatches_cut: 3\n"
    nop = {r["metric"]: r for r in kbench.report_rows(_with_nop_report(parts, three_cut), COMMON)
           if r["op"] == "nop"}
    assert nop["cycles"]["status"] == "ok" and nop["cycles"]["n"] == 7


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


# ---- liveness of the energy MSRs (issue 11) ----------------------------------

def _msr_report(*liveness_lines, op="rdmsr:0x611", status="ok"):
    """A one-operation report as the module prints it, with the given
    liveness lines between "unroll:" and "status:"."""
    batches = ["batch 0: 100.000", "batch 1: 101.500"] if status == "ok" else []
    return "\n".join([f"=== op /proc/kbench/{op.replace(':', '_')}",
                      "# kbench 1: TSC cycles per operation, loop overhead removed",
                      f"op: {op}", "cpu: 0", "tsc_khz: 2000000", "iterations: 10",
                      "iterations_requested: 10", "batches: 2", "unroll: 1 9",
                      *liveness_lines, f"status: {status}", *batches, "=== end", ""])


def _verdicts(text):
    out = kbench.report_rows(text, COMMON)
    for r in out:
        assert schema.validate_row(r) == [], r
    return {(r["metric"], r["liveness"], r["liveness_note"]) for r in out}


@pytest.mark.parametrize("lines, verdict, note", [
    (["liveness: live", "liveness_probe: 3 reads in 2 ms, value 0x1a2b then 0x1a40"],
     "live", None),
    (["liveness: frozen", "liveness_probe: 101 reads in 103 ms, value 0x0"],
     "frozen", "MSR 0x611 on CPU 0: did not change in 103 ms (101 reads, value 0x0): "
               "a dead counter, it yields no energy"),
    (["liveness: no-unit", "liveness_probe: unit MSR 0x606 reads 0x0"],
     "no-unit", "MSR 0x611 on CPU 0: energy unit MSR 0x606 reads 0x0: not RAPL, no energy unit"),
    (["liveness: no-unit", "liveness_probe: unit MSR 0x606 reads 0xa0003"],
     "no-unit", "MSR 0x611 on CPU 0: energy unit MSR 0x606 reads 0xa0003: its energy status "
                "unit (bits 12:8) is 0, 1 J per count: not RAPL"),
    (["liveness: no-unit", "liveness_probe: unit MSR 0x606 faults"],
     "no-unit", "MSR 0x611 on CPU 0: energy unit MSR 0x606 cannot be read (rdmsr faults): "
                "no energy unit"),
    (["liveness: frozen", "liveness_probe: something new"],
     "frozen", "MSR 0x611 on CPU 0: frozen: something new"),
    ([], None, None),  # not an energy counter, or a module from before the probe
])
def test_energy_msr_rows_carry_the_report_verdict(lines, verdict, note):
    assert _verdicts(_msr_report(*lines)) == {("latency", verdict, note),
                                              ("cycles", verdict, note)}


def test_unknown_verdict_is_a_malformed_report():
    with pytest.raises(ValueError, match="unknown liveness verdict 'zombie'"):
        kbench.report_rows(_msr_report("liveness: zombie"), COMMON)


def test_faulting_energy_msr_is_unavailable_without_a_verdict():
    assert _verdicts(_msr_report(status="unsupported")) == {("latency", None, None)}


def test_guest_log_energy_ops_have_a_verdict_and_the_rest_none(parts):
    out = kbench.report_rows(parts["report"], COMMON)
    energy = {"rdmsr:0x611", "rdmsr:0x639", "rdmsr:0x641", "rdmsr:0x619", "rdmsr:0x64d"}
    for r in out:
        if r["op"] in energy and r["status"] == "ok":
            assert r["liveness"] in kbench.VERDICTS, r
            assert (r["liveness_note"] is None) == (r["liveness"] == "live"), r
            assert r["liveness_note"] is None or r["liveness_note"].startswith(
                f"MSR {r['target']} on CPU 0: ")
        else:
            assert (r["liveness"], r["liveness_note"]) == (None, None), r


def test_a_report_from_before_the_probe_reads_as_no_verdict(parts):
    old = "\n".join(line for line in parts["report"].splitlines()
                    if not line.startswith("liveness"))
    out = kbench.report_rows(old, COMMON)
    assert out and all(r["liveness"] is None and r["liveness_note"] is None for r in out)


def test_native_report_file_converts_with_its_verdicts(tmp_path, parts):
    # the path kbench/run takes (make bench-all): --report on this machine
    report = tmp_path / "kbench.txt"
    report.write_text(parts["report"])
    out_file = tmp_path / "results.jsonl"
    assert kbench.main(["--report", str(report), "--run-id", "t", "--out", str(out_file)]) == 0
    assert list(schema.iter_file_errors(out_file)) == []
    got = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert {r["liveness"] for r in got if r["op"] == "rdmsr:0x611"} <= set(kbench.VERDICTS)
    assert {r["liveness"] for r in got if r["op"] == "rdmsr:0x606"} == {None}


@pytest.mark.parametrize("name", ["../../escaped", "/proc/../../escaped", "/", ""])
def test_a_dumped_file_name_cannot_leave_the_temporary_tree(tmp_path, name):
    """Issue 14: `=== file ../../x` in a guest log wrote outside the
    temporary directory. A guest log is input, not trusted."""
    text = f"=== file {name}\nowned\n=== file /proc/version\nLinux version 6.1.0\n"
    cwd = os.getcwd()
    os.chdir(tmp_path)  # where a relative escape would land
    try:
        with pytest.raises(ValueError, match="is not a path under /"):
            kbench.machine_from_dump(text)
    finally:
        os.chdir(cwd)
    assert not list(tmp_path.rglob("escaped"))
    assert not Path(tempfile.gettempdir(), "escaped").exists()


def test_a_guest_log_with_an_escaping_file_name_exits_2(tmp_path, capsys):
    log = tmp_path / "guest.log"
    log.write_text("=== begin machine\n=== file ../../x\nowned\n=== begin report\n")
    assert kbench.main(["--guest-log", str(log), "--out", str(tmp_path / "rows.jsonl")]) == 2
    assert "machine dump: file '../../x' is not a path under /" in capsys.readouterr().err
    assert not (tmp_path / "rows.jsonl").exists()


def test_guest_sampler_rows_take_the_guests_machine_and_skip_console_noise():
    window = {"kind": "sampler", "pair": 0, "wall_ns": 10**8, "samples": 100,
              "samples_since_start": 100, "cpu_ns": 10**5, "missed_ticks": 0,
              "interval_error_p50_ns": 2000.0, "first_error": None}
    loop = {"target": "0x611", "cpu": 0, "target_cpu": 0, "stand_in": None, "liveness": None,
            "liveness_note": None}
    report = {"mechanism": "kernel", "frequency_hz": 1000, "sampler": loop, "null": loop,
              "windows": [window]}
    parts = {"report": "op ...", "sampler-rows-1000": "\n" + json.dumps(report) + "\n"
             "[   12.3] ksample: a kernel message on the console\n",
             "sampler-rows-10000": json.dumps({**report, "frequency_hz": 10000}) + "\n"}
    out = kbench.guest_sampler_rows(parts, COMMON)
    assert [r["target"] for r in out] == ["0x611 @ 1000 Hz"] * 4 + ["0x611 @ 10000 Hz"] * 4
    for r in out:
        assert (r["run_id"], r["timestamp"]) == ("test-run", "2026-11-22T00:00:00Z")
        assert r["machine"]["hypervisor"] == "qemu-tcg"
    with pytest.raises(ValueError, match="sampler-rows-1000, line 1: not a JSON report"):
        kbench.guest_sampler_rows({"sampler-rows-1000": '{"torn": '}, COMMON)
