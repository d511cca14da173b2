import pytest

from results import rows
from results.table import cpus, format_latency_table, sig3, shorten

COMMON = rows.common("r", "2026-11-22T00:06:45Z", {})


def measured(path, op, samples, *, target=None, cpu=0, target_cpu=None, harness="gbench",
             metric="latency", stand_in=None, role=rows.MEASURED):
    return rows.measured_row(COMMON, harness=harness, path=path, op=op, target=target, cpu=cpu,
                             target_cpu=target_cpu, metric=metric, unit=rows.METRIC_UNITS[metric],
                             samples=samples, stand_in=stand_in, role=role)


def unavailable(path, op, reason, *, target=None, cpu=0, target_cpu=0, status="unavailable"):
    return rows.not_ok_row(COMMON, harness="gbench", path=path, op=op, target=target, cpu=cpu,
                           target_cpu=target_cpu, metric="latency", unit="ns", reason=reason,
                           status=status)


def body(table):
    """The table lines between the header rule and the footnotes."""
    lines = table.splitlines()
    return lines[2:lines.index("")] if "" in lines else lines[2:]


@pytest.mark.parametrize("x, text", [
    (0.24014, "0.240"), (17.26, "17.3"), (560.4, "560"), (1234.0, "1230"),
    (0.000123456, "0.000123"), (0.0, "0"), (-2.5, "-2.50"), (999.6, "1000"),
])
def test_sig3(x, text):
    assert sig3(x) == text


def test_shorten_keeps_the_end():
    target = "/sys/class/powercap/intel-rapl:0/intel-rapl:0:1/energy_uj"
    short = shorten(target, 32)
    assert len(short) <= 32 and short.startswith("…") and target.endswith(short[1:])
    # issue 17: the cut falls at a boundary, never inside a word
    assert short == "…/intel-rapl:0:1/energy_uj"
    assert shorten("x" * 40, 32) == "…" + "x" * 31  # no boundary: cut at the width
    assert shorten("0x611") == "0x611"
    assert shorten(None) == "—"


def test_shorten_keeps_what_a_sampler_row_is():
    """The sampler's rows above its null loop share its target but for the
    prefix: a shortened target must not lose it."""
    lo = "/sys/class/net/lo/statistics/rx_bytes @ 1000 Hz"
    assert shorten(lo, 32) == "…/statistics/rx_bytes @ 1000 Hz"
    above = shorten("above null: " + lo, 32)
    assert len(above) == 32 and above == "above null: …/rx_bytes @ 1000 Hz"
    null = shorten("null: bare bpf_timer program @ 1000 Hz", 32)
    assert len(null) <= 32 and null == "null: …program @ 1000 Hz"
    assert shorten("above null: msr/tsc/ @ 1000 Hz", 32) == "above null: msr/tsc/ @ 1000 Hz"


def test_a_rows_role_is_shown_before_its_target():
    """The role is a field (schema 3); the table says it where the target is."""
    def row(role):
        return measured("sampler", "perf", [1.0], target="msr/tsc/ @ 1000 Hz", metric="rate_hz",
                        harness="sampler", role=role)
    lines = body(format_latency_table([row(rows.MEASURED), row(rows.NULL),
                                       row(rows.ABOVE_NULL)]))
    assert [line.split()[2] for line in lines] == ["above", "msr/tsc/", "null:"]
    assert "above null: msr/tsc/ @ 1000 Hz" in lines[0] and "null: msr/tsc/" in lines[2]


def test_units_are_scaled_and_cells_filled():
    table = format_latency_table([
        measured("uinsn", "nop", [0.24, 0.25, 0.26]),
        measured("sys-read", "pread", [400.0, 410.0, 650.0], target="/proc/raplbench/value", target_cpu=0),
        measured("perf", "read", [3500.0, 4000.0, 4500.0], target="msr/tsc/", target_cpu=1),
        measured("sampler", "timerfd", [999.1, 999.3], cpu=None, metric="rate_hz"),
    ])
    lines = body(table)
    assert [line.split()[0] for line in lines] == ["uinsn", "sys-read", "perf", "sampler"]
    assert "0.250 ns" in lines[0] and "0.240–0.260 ns" in lines[0]
    assert " 0 " in lines[0]  # cpu 0, no target cpu
    assert "0→0" in lines[1] and "410 ns" in lines[1]
    assert "0→1" in lines[2] and "4.00 µs" in lines[2] and "3.50–4.50 µs" in lines[2]
    assert "—" in lines[3].split()[2:4] and "999 Hz" in lines[3]  # no target, no cpu
    assert "\n\n" not in table  # no footnotes


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


def test_footnotes_for_stand_ins_and_reasons_are_shared():
    stand_in = "/dev/cpu/N/cpuid stands in for /dev/cpu/N/msr"
    table = format_latency_table([
        measured("msr-dev", "pread", [900.0], target="cpuid:0x1", target_cpu=0, stand_in=stand_in),
        measured("msr-dev", "pread", [4000.0], target="cpuid:0x1", target_cpu=1, stand_in=stand_in),
        unavailable("powercap", "pread", "no powercap zones", target="energy_uj"),
        unavailable("powercap", "read", "no powercap zones", target="energy_uj"),
        unavailable("perf", "read", "perf_event_open: EACCES", status="error"),
    ])
    lines = body(table)
    # powercap comes before msr-dev in the schema's path order
    assert [line.split()[0] for line in lines] == ["powercap", "powercap", "msr-dev", "msr-dev", "perf"]
    assert [line.split()[-1] for line in lines] == ["[1]", "[1]", "[2]", "[2]", "[3]"]
    assert all(line.split()[-4:-1] == ["—", "—", "—"] for line in lines[0:2] + lines[4:])
    assert table.endswith("\n[1] unavailable: no powercap zones\n"
                          "[2] stand-in: " + stand_in + "\n"
                          "[3] error: perf_event_open: EACCES\n")


def test_harness_column_tells_rows_apart():
    table = format_latency_table([measured("uinsn", "rdtsc", [8.0]),
                                  measured("uinsn", "rdtsc", [9.0], harness="criterion")])
    assert [line.split()[4] for line in body(table)] == ["criterion", "gbench"]


def test_no_rows_gives_just_the_header():
    assert format_latency_table([]).splitlines()[0].startswith("path")


def test_not_ok_stand_in_gets_both_footnotes():
    row = unavailable("msr-dev", "pread", "/dev/cpu/0/cpuid missing: load the cpuid module")
    row["stand_in"] = "/dev/cpu/N/cpuid stands in for /dev/cpu/N/msr"
    table = format_latency_table([row])
    assert body(table)[0].endswith("[1][2]")
    assert "[1] stand-in: " in table and "[2] unavailable: " in table


FROZEN = "power/energy-psys/ on CPU 0: did not change in 100 ms (97 reads): a dead counter"


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


def test_cpus_is_the_one_cpu_to_target_notation():
    assert cpus({"cpu": 0, "target_cpu": 0}) == "0→0"
    assert cpus({"cpu": 1, "target_cpu": 0}) == "1→0"
    assert cpus({"cpu": 0, "target_cpu": None}) == "0"
    assert cpus({"cpu": None, "target_cpu": 0}) == "?→0"
    assert cpus({"cpu": None, "target_cpu": None}) == "—"
    assert cpus({"cpu": None, "target_cpu": None}, none=None) is None  # the gate's labels
