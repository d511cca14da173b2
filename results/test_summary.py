"""The terminal summary (results/summary.py, issue 32): the latency table
with the harnesses side by side, and the whole summary of a fixture run."""

import re

from results import rows, runfile
from results.summary import format_latency_table, format_summary

COMMON = rows.common("r", "2026-11-22T00:06:45Z", {})
FROZEN = "power/energy-psys/ on CPU 0: did not change in 100 ms (97 reads): a dead counter"


def measured(path, op, samples, *, target=None, cpu=0, target_cpu=None, harness="gbench",
             metric="latency", stand_in=None, role=rows.MEASURED, target_state=None, ipi=None):
    return rows.measured_row(COMMON, harness=harness, path=path, op=op, target=target, cpu=cpu,
                             target_cpu=target_cpu, metric=metric, unit=rows.METRIC_UNITS[metric],
                             samples=samples, stand_in=stand_in, role=role,
                             target_state=target_state, ipi=ipi)


def unavailable(path, op, reason, *, target=None, cpu=0, target_cpu=0, status="unavailable"):
    return rows.not_ok_row(COMMON, harness="gbench", path=path, op=op, target=target, cpu=cpu,
                           target_cpu=target_cpu, metric="latency", unit="ns", reason=reason,
                           status=status)


def body(table):
    """The table lines between the header rule and the first blank or
    closing line."""
    lines = table.splitlines()[3:]
    end = next((i for i, line in enumerate(lines)
                if not line or line.startswith(("agreement:", "Schema 1"))), len(lines))
    return lines[:end]


def test_only_latency_rows_are_in_the_latency_table():
    table = format_latency_table([
        measured("uinsn", "nop", [0.3]),
        measured("sampler", "perf", [999.0], target="msr/tsc/ @ 1000 Hz", metric="rate_hz",
                 harness="sampler"),
        measured("sampler", "perf", [1.0], target="msr/tsc/ @ 1000 Hz", metric="jitter_us",
                 harness="sampler", role=rows.NULL)])
    assert [line.split()[0] for line in body(table)] == ["uinsn"]


def test_units_are_scaled_and_cells_filled():
    table = format_latency_table([
        measured("uinsn", "nop", [0.24, 0.25, 0.26]),
        measured("sys-read", "pread", [400.0, 410.0, 650.0], target="/proc/raplbench/value",
                 target_cpu=0),
        measured("perf", "read", [3500.0, 4000.0, 4500.0], target="msr/tsc/", target_cpu=1),
    ])
    lines = body(table)
    assert [line.split()[0] for line in lines] == ["uinsn", "sys-read", "perf"]
    assert "0.250 ns (0.240–0.260 ns)" in lines[0]
    assert "0→0" in lines[1] and "410 ns" in lines[1]
    assert "0→1" in lines[2] and "4.00 µs (3.50–4.50 µs)" in lines[2]
    assert "\n[" not in table  # no footnotes


def test_sorted_by_path_order_then_op_target_cpus():
    table = format_latency_table([
        measured("perf", "read", [1.0], target="b", target_cpu=1),
        measured("perf", "read", [1.0], target="b", target_cpu=0),
        measured("perf", "group-read", [1.0], target="b", target_cpu=0),
        measured("msr-dev", "pread", [1.0], target="0x611", target_cpu=0),
        measured("kinsn", "nop", [1.0], harness="kbench"),
    ])
    order = [line.split()[:4] for line in body(table)]
    assert order == [["kinsn", "nop", "—", "0"], ["msr-dev", "pread", "0x611", "0→0"],
                     ["perf", "group-read", "b", "0→0"], ["perf", "read", "b", "0→0"],
                     ["perf", "read", "b", "0→1"]]


def test_the_harnesses_share_a_line_with_their_ratio_and_verdict():
    same = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    table = format_latency_table([
        measured("perf", "read", same, target="b", target_cpu=0),
        measured("perf", "read", [x * 1.01 for x in same], target="b", target_cpu=0,
                 harness="criterion"),
        measured("perf", "read", same, target="b", target_cpu=1),
        measured("perf", "read", [x * 2 for x in same], target="b", target_cpu=1,
                 harness="criterion"),
        measured("uinsn", "rdtsc", [8.0])])
    header = table.splitlines()[1].split()
    assert header[4:9] == ["gbench", "(95%", "CI)", "criterion", "(95%"]
    lines = body(table)
    assert len(lines) == 3 and lines[0].startswith("uinsn")
    assert lines[1].split()[-2:] == ["1.01", "agree"] and "101 ns" in lines[1]
    assert lines[2].split()[-2:] == ["2.00", "differ"]


def test_a_second_row_of_one_harness_and_key_gets_a_line_of_its_own():
    """No row is hidden: two rows the table cannot tell apart are both shown."""
    table = format_latency_table([measured("uinsn", "rdtsc", [8.0]),
                                  measured("uinsn", "rdtsc", [9.0])])
    assert len(body(table)) == 2


def test_footnotes_for_stand_ins_and_reasons_are_shared():
    stand_in = "/dev/cpu/N/cpuid stands in for /dev/cpu/N/msr"
    table = format_latency_table([
        measured("msr-dev", "pread", [900.0], target="cpuid:0x1", target_cpu=0,
                 stand_in=stand_in),
        measured("msr-dev", "pread", [4000.0], target="cpuid:0x1", target_cpu=1,
                 stand_in=stand_in),
        unavailable("powercap", "pread", "no powercap zones", target="energy_uj"),
        unavailable("powercap", "read", "no powercap zones", target="energy_uj"),
        unavailable("perf", "read", "perf_event_open: EACCES", status="error"),
    ])
    lines = body(table)
    # powercap comes before msr-dev in the schema's path order
    assert [line.split()[0] for line in lines] == ["powercap", "powercap", "msr-dev", "msr-dev",
                                                  "perf"]
    assert [line.split()[-1] for line in lines] == ["[1]", "[1]", "[2]", "[2]", "[3]"]
    assert table.endswith("\n[1] unavailable: no powercap zones\n"
                          "[2] stand-in: " + stand_in + "\n"
                          "[3] error: perf_event_open: EACCES\n")


def test_not_ok_stand_in_gets_both_footnotes():
    row = unavailable("msr-dev", "pread", "/dev/cpu/0/cpuid missing: load the cpuid module")
    row["stand_in"] = "/dev/cpu/N/cpuid stands in for /dev/cpu/N/msr"
    table = format_latency_table([row])
    assert body(table)[0].endswith("[1][2]")
    assert "[1] stand-in: " in table and "[2] unavailable: " in table


def test_frozen_counter_is_footnoted_like_a_stand_in_and_keeps_its_figure():
    frozen = measured("perf", "read", [8189.0], target="power/energy-psys/", target_cpu=0)
    frozen.update(liveness="frozen", liveness_note=FROZEN)
    unit = measured("perf", "read", [500.0], target="power/energy-foo/", target_cpu=0)
    unit.update(liveness="no-unit", liveness_note="power/energy-foo/: unit 'Watts'")
    live = measured("perf", "group-read", [600.0], target="power/energy-pkg/", target_cpu=0)
    live.update(liveness="live")
    table = format_latency_table([frozen, unit, live])
    lines = body(table)
    # group-read (live: no note), read energy-foo, read energy-psys
    assert not lines[0].endswith("]")
    assert lines[1].endswith("[1]") and "8.19 µs" in lines[2] and lines[2].endswith("[2]")
    assert table.endswith("[1] no energy unit: power/energy-foo/: unit 'Watts'\n"
                          f"[2] frozen counter: {FROZEN}\n")


def test_schema_1_rows_get_one_line_not_a_note_each():
    old = [{k: v for k, v in measured("perf", "read", [400.0 + i], target="power/energy-pkg/",
                                      target_cpu=0).items() if not k.startswith("liveness")}
           for i in range(3)]
    table = format_latency_table(old)
    assert all(not line.endswith("]") for line in body(table))
    assert table.count("verdict unknown") == 1
    assert "verdict unknown" not in format_latency_table([measured("uinsn", "nop", [0.3])])


def test_the_summary_of_a_run_says_no_line_twice_and_numbers_each_note_once(tmp_path):
    """The whole summary of the stored fixture runs: latency table,
    experiment tables, one list of footnotes, the findings."""
    from plots.fixtures import AMD, INTEL, KVM_FROZEN, KVM_VICTIM  # noqa: PLC0415
    for run_dir in (INTEL, AMD, KVM_FROZEN, KVM_VICTIM):
        all_rows = runfile.load(run_dir / "results.jsonl").rows
        text = format_summary(all_rows, run_dir)
        assert "could not be made" not in text, text
        lines = [line for line in text.splitlines() if line.strip() and not set(line) <= {"-", " "}]
        repeated = {line for line in lines if lines.count(line) > 1}
        assert not repeated, repeated
        notes = re.findall(r"^\[(\d+)\] ", text, flags=re.M)
        assert notes == [str(i) for i in range(1, len(notes) + 1)]
        marked = re.sub(r"^\[\d+\] ", "", text, flags=re.M)  # the footnotes' own numbers
        used = {int(n) for m in re.findall(r"\[(\d+(?:,\d+)*)\]", marked) for n in m.split(",")}
        assert used == set(range(1, len(notes) + 1))
        assert text.rstrip().splitlines()[-1].startswith("  - ")  # the findings close it
