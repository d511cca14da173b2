"""What a sampler costs an idle machine (results/idle_cost.py): the parsers
of /proc/interrupts, /proc/softirqs, /proc/stat and the cpuidle tree on
fixture copies of real layouts (this KVM guest's /proc, a bare-metal Intel
box's POLL/C1/C6, this guest's haltpoll, a VM without states); a window's
values from two snapshots; the rows of a cell (paired differences, the
no-cpuidle and failed paths, every registered mechanism); and one short
real run."""

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from results import idle_cost, idle_counters, registry, rows, sampler, schema
from results.test_ksample_module import REASON, FakeModule

pytestmark = pytest.mark.serial  # measures an idle machine (conftest.py)

FIXTURES = Path(__file__).with_name("fixtures") / "idle"
PROC = FIXTURES / "proc"
INTEL, HALTPOLL, NO_CPUIDLE = (FIXTURES / n for n in ("sys-intel", "sys-kvm-haltpoll",
                                                     "sys-no-cpuidle"))
MACHINE = {field: None for field in schema.SCHEMA["$defs"]["machine"]["required"]}
COMMON = rows.common("20261124T000000Z-abcdef", "2026-11-24T00:00:00Z", MACHINE)


def valid(rows_):
    for row in rows_:
        assert schema.validate_row(row) == [], row
    return rows_


# --- parsers ----------------------------------------------------------------------------------

def test_interrupts_sum_every_per_cpu_line_and_leave_out_err_and_mis():
    got = idle_counters.totals(idle_counters.parse_per_cpu((PROC / "interrupts").read_text()))
    assert got["LOC"] == 385429 + 175109
    assert got["CAL"] == 611547 + 181067
    assert got["36"] == 83785  # a device line: its description holds "1-edge", not a count
    assert "ERR" not in got and "MIS" not in got
    assert len(got) == 33  # 19 device lines, 14 per-CPU system lines


def test_interrupts_on_more_cpus_than_columns_of_text():
    text = ("           CPU0       CPU1       CPU2\n"
            "  0:         10          0          5   IO-APIC   2-edge      timer\n"
            "LOC:          1          2          3   Local timer interrupts\n"
            "ERR:          7\n")
    assert idle_counters.totals(idle_counters.parse_per_cpu(text)) == {"0": 15, "LOC": 6}
    assert idle_counters.totals(idle_counters.parse_per_cpu("")) == {}


def test_per_cpu_counts_and_where_wakeups_land():
    text = ("           CPU0       CPU2\n"
            "LOC:          1          2   Local timer interrupts\n"
            "ERR:          7\n")
    per_cpu = idle_counters.parse_per_cpu(text)
    assert per_cpu == {"LOC": {0: 1, 2: 2}}
    soft = idle_counters.parse_per_cpu("   CPU0 CPU2\n HRTIMER: 10 20\n")
    assert idle_counters.by_cpu(per_cpu, soft) == {"0": 11, "2": 22}
    real = idle_counters.parse_per_cpu((PROC / "softirqs").read_text())
    assert real["HRTIMER"] == {0: 251786, 1: 65681}


def test_softirqs_sum_over_cpus():
    got = idle_counters.totals(idle_counters.parse_per_cpu((PROC / "softirqs").read_text()))
    assert got["HRTIMER"] == 251786 + 65681
    assert list(got) == ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET",
                         "SCHED", "HRTIMER", "RCU"]


def test_stat_cpu_line_and_online_cpus():
    total, ncpu = idle_counters.parse_stat((PROC / "stat").read_text())
    assert ncpu == 2
    assert total == {"user": 36491, "nice": 0, "system": 9665, "idle": 87978, "iowait": 445,
                     "irq": 0, "softirq": 108, "steal": 22, "guest": 0, "guest_nice": 0}
    old, n = idle_counters.parse_stat("cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 5\n")  # an older kernel
    assert old == {"user": 1, "nice": 2, "system": 3, "idle": 4} and n == 1


def test_cpuidle_states_of_a_bare_metal_intel_box():
    assert idle_counters.online_cpus(INTEL) == [0, 1]
    got = idle_counters.read_cpuidle_states(INTEL, 0)
    assert [s["name"] for s in got] == ["POLL", "C1", "C6"]
    assert got[2] == {"name": "C6", "time_us": 58192231, "usage": 40211, "disabled": False}
    assert idle_counters.deepest(got) == 2
    assert idle_counters.deepest([{**s, "disabled": s["name"] == "C6"} for s in got]) == 1


def test_cpuidle_states_of_this_guest_and_of_a_vm_without_any():
    assert [s["name"] for s in idle_counters.read_cpuidle_states(HALTPOLL, 1)] == [
        "POLL", "haltpoll idle"]
    assert idle_counters.online_cpus(NO_CPUIDLE) == [0, 1]
    assert idle_counters.read_cpuidle_states(NO_CPUIDLE, 0) == []
    assert idle_counters.no_cpuidle_reason() == (
        "no cpuidle states under /sys/devices/system/cpu/cpu0/cpuidle: this kernel exposes no "
        "C-states (a VM's idle is the hypervisor's); wakeups and CPU time stand in")


@pytest.mark.parametrize("visit", [False, True])
def test_snapshot_of_fixture_roots(visit):
    before = os.sched_getaffinity(0)
    snap = idle_counters.snapshot(PROC, INTEL, visit=visit)
    assert os.sched_getaffinity(0) == before  # restored after the visits
    assert snap["ncpu"] == 2 and snap["interrupts"]["LOC"] == 560538
    assert snap["wakeups_by_cpu"]["1"] > 175109  # CPU1's LOC and more
    assert set(snap["cpuidle"]) == {"0", "1"}
    assert snap["cpuidle"]["1"]["states"][2]["time_us"] == 60012877
    assert idle_counters.snapshot(PROC, NO_CPUIDLE, visit=visit)["cpuidle"] == {}


# --- windows ----------------------------------------------------------------------------------

def snap(t_s, loc, hrtimer, idle_ticks, c6_us=None, poll_us=0, c1_us=0, c6_disabled=False):
    """A synthetic snapshot at t_s seconds: 2 CPUs; cpuidle states only when
    c6_us is given (the same on each CPU)."""
    cpuidle = {} if c6_us is None else {
        str(c): {"t_ns": int(t_s * 1e9), "states": [
            {"name": "POLL", "time_us": poll_us, "usage": 0},
            {"name": "C1", "time_us": c1_us, "usage": 0},
            {"name": "C6", "time_us": c6_us, "usage": 0, "disabled": c6_disabled}]}
        for c in (0, 1)}
    return {"t_ns": int(t_s * 1e9), "read_ns": 1000, "interrupts": {"LOC": loc, "ERR": 0},
            "wakeups_by_cpu": {"0": (loc + hrtimer) // 2, "1": (loc + hrtimer) // 2},
            "softirqs": {"HRTIMER": hrtimer}, "ncpu": 2, "cpuidle": cpuidle,
            "stat": {"user": 0, "nice": 0, "system": 0, "idle": idle_ticks, "iowait": 0,
                     "irq": 0, "softirq": 0, "steal": 0}}


def test_a_window_with_cpuidle_states():
    a = snap(10.0, loc=1000, hrtimer=500, idle_ticks=0, c6_us=0, c1_us=0)
    # 2 s; each CPU: 1.8 s in C6, 0.1 s in C1, so 0.1 s busy
    b = snap(12.0, loc=5000, hrtimer=2500, idle_ticks=0, c6_us=1_800_000, c1_us=100_000)
    w = idle_counters.window(a, b, clk_tck=100)
    assert w["wall_s"] == 2.0 and w["interrupts"] == {"LOC": 4000, "ERR": 0}
    assert w["wakeups_per_s"] == (4000 + 2000) / 2
    assert w["busy_pct"] == pytest.approx(10.0)  # 0.2 s of CPU in 2 s: 10 % of one CPU
    assert w["deep_idle_pct"] == pytest.approx(90.0)  # 3.6 s of C6 in 4 s of CPU time
    assert (w["idle_source"], w["deep_state"]) == ("cpuidle residency", "C6")
    assert w["cpuidle"]["0"]["states"][2] == {"name": "C6", "time_us": 1_800_000, "usage": 0}
    assert w["wakeups_per_s_by_cpu"] == {"0": 1500.0, "1": 1500.0}


def test_a_disabled_deepest_state_is_not_the_deep_state():
    a = snap(0.0, loc=0, hrtimer=0, idle_ticks=0, c6_us=0, c6_disabled=True)
    b = snap(1.0, loc=0, hrtimer=0, idle_ticks=0, c6_us=0, c1_us=900_000, c6_disabled=True)
    w = idle_counters.window(a, b, clk_tck=100)
    assert w["deep_state"] == "C1" and w["deep_idle_pct"] == pytest.approx(90.0)


def test_a_window_without_cpuidle_states_takes_idle_from_proc_stat():
    a = snap(0.0, loc=0, hrtimer=0, idle_ticks=1000)
    b = snap(1.0, loc=300, hrtimer=0, idle_ticks=1150)  # 1.5 s idle of 2 CPU-seconds
    w = idle_counters.window(a, b, clk_tck=100)
    assert w["busy_pct"] == pytest.approx(50.0)
    assert w["deep_idle_pct"] is None and w["deep_state"] is None
    assert w["idle_source"] == "/proc/stat idle + iowait"


# --- the sampler in the background (results/sampler.py's Background, tested there) -----------

def fake_sampler(tmp_path, monkeypatch, body: str):
    script = tmp_path / "raplbench-sample"
    script.write_text(f"#!{sys.executable}\nimport sys, signal, time\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sampler, "BINARY", script)


def bare_windows(monkeypatch):
    """measure_window without /proc: every window the same."""
    def measure(settle, seconds, proc_root, sys_root, clk_tck):
        return {"wakeups_per_s": 500.0, "busy_pct": 1.0, "deep_idle_pct": 99.0}
    monkeypatch.setattr(idle_cost, "measure_window", measure)


def test_a_pair_runs_the_sampler_at_the_cells_frequency_without_output(tmp_path, monkeypatch):
    """The cell takes the label and CPU of the sampler's banner."""
    fake_sampler(tmp_path, monkeypatch, """
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
with open(sys.argv[0] + ".args", "w") as f:
    f.write(" ".join(sys.argv[1:]))
print("raplbench-sample: counter power/energy-psys/ is frozen", file=sys.stderr, flush=True)
print("raplbench-sample: sampling perf (msr/tsc/) at 100 Hz on CPU 1", file=sys.stderr, flush=True)
time.sleep(60)
""")
    bare_windows(monkeypatch)
    cell = idle_cost.Cell("perf", 100, window_s=0.5)
    idle_cost.one_pair(cell, sampler_first=True, settle=0.1)
    assert cell.failed is None and len(cell.pairs) == 1
    assert (cell.label, cell.cpu) == ("msr/tsc/", 1)
    args = (tmp_path / "raplbench-sample.args").read_text()
    assert args == "--mechanism perf --frequency 100 --duration 60.6"


@pytest.mark.parametrize("body,failed", [
    ("""
print("raplbench-sample: no 'power' PMU: cannot open perf events", file=sys.stderr)
sys.exit(2)
""", "no 'power' PMU: cannot open perf events"),
    ("""
print("raplbench-sample: sampling perf (msr/tsc/) at 100 Hz on CPU 1", file=sys.stderr, flush=True)
print("raplbench-sample: read failed: EIO", file=sys.stderr, flush=True)
sys.exit(1)
""", "exited (status 1) before it was stopped: read failed: EIO"),
    ("""
signal.signal(signal.SIGINT, lambda *_: sys.exit(1))
print("raplbench-sample: sampling perf (msr/tsc/) at 100 Hz on CPU 1", file=sys.stderr, flush=True)
time.sleep(60)
""", "exited with status 1: no message"),
])
def test_a_sampler_that_fails_ends_the_cell_with_its_reason(tmp_path, monkeypatch, body, failed):
    """Could not start, died in its window, or stopped with a failure: the
    cell stops taking pairs; its rows give the sampler's last line."""
    fake_sampler(tmp_path, monkeypatch, body)

    def measure(settle, seconds, proc_root, sys_root, clk_tck):
        time.sleep(0.2)  # a sampler that dies has died by the window's end
        return {"wakeups_per_s": 500.0, "busy_pct": 1.0, "deep_idle_pct": 99.0}
    monkeypatch.setattr(idle_cost, "measure_window", measure)
    cell = idle_cost.Cell("perf", 100, window_s=0.1)
    idle_cost.one_pair(cell, sampler_first=True, settle=0.0)
    assert cell.failed == failed and cell.pairs == []


# --- pairs and rows ---------------------------------------------------------------------------

def win(wakeups, busy, deep):
    return {"wakeups_per_s": wakeups, "busy_pct": busy, "deep_idle_pct": deep,
            "idle_source": "cpuidle residency" if deep is not None else "/proc/stat idle + iowait",
            "deep_state": "C6" if deep is not None else None}


def test_cell_rows_one_sample_per_pair():
    cell = idle_cost.Cell("perf", 1000, 0.75, label="msr/tsc/", cpu=0, pairs=[
        (win(3000 + i, 2.5, 97.0), win(1000 + 2 * i, 0.5, 99.5)) for i in range(6)])
    got = valid(idle_cost.cell_rows(COMMON, cell, "a stand-in"))
    assert [r["metric"] for r in got] == ["wakeups_per_s", "busy_pct", "deep_idle_pct"]
    assert [r["unit"] for r in got] == ["/s", "%", "%"]
    wake, busy, deep = got
    assert wake["samples"] == [2000.0 - i for i in range(6)] and wake["n"] == 6
    assert busy["median"] == pytest.approx(2.0) and deep["median"] == pytest.approx(-2.5)
    for r in got:
        assert (r["harness"], r["path"], r["op"], r["cpu"], r["target_cpu"]) == (
            "idle", "sampler", "perf", 0, None)
        assert r["target"] == "msr/tsc/ @ 1000 Hz" and r["stand_in"] == "a stand-in"
        assert r["liveness"] is None
        assert r["parameters"]["rate_hz"] == 1000 and r["parameters"]["window_s"] == 0.75
    assert wake["parameters"]["baseline_median"] == 1005.0
    assert deep["parameters"]["deep_state"] == "C6"


def test_in_kernel_mechanisms_have_no_sampler_cpu():
    cell = idle_cost.Cell("ebpf", 10, label="msr/tsc/", cpu=0,
                          pairs=[(win(30, 0.1, 99.0), win(10, 0.1, 99.0))])
    assert {r["cpu"] for r in valid(idle_cost.cell_rows(COMMON, cell, None))} == {None}


def test_without_cpuidle_deep_idle_is_unavailable_and_says_so():
    cell = idle_cost.Cell("msr", 100, label="cpuid:0x0", cpu=0,
                          pairs=[(win(300, 0.3, None), win(200, 0.1, None))] * 2)
    wake, busy, deep = valid(idle_cost.cell_rows(COMMON, cell, None, NO_CPUIDLE))
    assert wake["status"] == busy["status"] == "ok"
    assert busy["parameters"]["idle_source"] == "/proc/stat idle + iowait"
    assert deep["status"] == "unavailable" and deep["target"] == "cpuid:0x0 @ 100 Hz"
    assert deep["reason"] == idle_counters.no_cpuidle_reason(NO_CPUIDLE)


def test_a_cell_whose_sampler_failed_has_error_rows():
    cell = idle_cost.Cell("perf", 10000, failed="exited (status 1) before it was stopped: EIO")
    got = valid(idle_cost.cell_rows(COMMON, cell, None))
    assert {r["status"] for r in got} == {"error"}
    assert got[0]["reason"] == ("raplbench-sample --mechanism perf --frequency 10000: "
                                "exited (status 1) before it was stopped: EIO")


def fake_windows(monkeypatch):
    """one_pair without a sampler: the sampler window's wakeups are the
    baseline's + the frequency; records the order of the windows."""
    calls = []

    class FakeBackground:
        def __init__(self, mechanism, *, frequency, duration_s):
            hz = frequency
            if mechanism == "msr" and hz == 10000:
                raise sampler.SamplerFailed(
                    f"raplbench-sample --mechanism msr --frequency {hz} did not start sampling: "
                    "raplbench-sample: cannot keep up", "cannot keep up")
            self.mechanism, self.hz, self.label, self.cpu = mechanism, hz, "L", 0
            calls.append(("start", mechanism, hz))

        def stop(self, require_clean_exit=False):
            assert require_clean_exit
            calls.append(("stop", self.mechanism, self.hz))

    def measure(settle, seconds, proc_root, sys_root, clk_tck):
        running = len([c for c in calls if c[0] == "start"]) > len(
            [c for c in calls if c[0] == "stop"])
        calls.append(("window", running))
        base = {"wall_s": seconds, "ncpu": 2, "interrupts": {}, "softirqs": {}, "stat": {},
                "cpuidle": {}, "idle_source": "cpuidle residency", "deep_state": "C6"}
        hz = calls[-2][2] if running else 0
        return {**base, "wakeups_per_s": 500.0 + hz, "busy_pct": 1.0 + hz / 1000,
                "deep_idle_pct": 99.0 - hz / 1000}

    monkeypatch.setattr(sampler, "Background", FakeBackground)
    monkeypatch.setattr(idle_cost, "measure_window", measure)
    return calls


def test_pairs_alternate_and_rounds_cover_every_cell(monkeypatch):
    calls = fake_windows(monkeypatch)
    cells = [idle_cost.Cell(m, hz, window_s=0.1) for m in ("perf", "ebpf") for hz in (10, 1000)]
    idle_cost.experiment(cells, 4, 0.0, "seed")
    for c in cells:
        assert len(c.pairs) == 4
        assert [p[0]["wakeups_per_s"] - p[1]["wakeups_per_s"] for p in c.pairs] == [c.hz] * 4
    windows = [running for kind, running, *_ in calls if kind == "window"]
    # each round: every cell once; round 0 bare first (AB), round 1 sampler first (BA), ...
    per_round = len(cells) * 2
    for i in range(4):
        got = windows[i * per_round:(i + 1) * per_round]
        assert got == ([False, True] if i % 2 == 0 else [True, False]) * len(cells)


def test_run_gives_every_registered_mechanism_rows_and_keeps_the_raw_windows(tmp_path,
                                                                              monkeypatch):
    FakeModule(tmp_path, monkeypatch, load="unavailable")
    fake_windows(monkeypatch)
    monkeypatch.setattr(idle_cost, "pairs", lambda quick: 2)
    monkeypatch.setattr(idle_cost, "SETTLE_S", 0.0)
    built = tmp_path / "raplbench-sample"
    built.write_text("")  # exists: "built"; Background is faked
    monkeypatch.setattr(sampler, "BINARY", built)
    got = valid(idle_cost.run(COMMON, tmp_path, False, {"perf": None, "msr": "a stand-in"}))
    ok = {(r["op"], r["parameters"]["rate_hz"]) for r in got if r["status"] == "ok"}
    assert ok == {("perf", hz) for hz in idle_cost.FREQUENCIES} | {
        ("msr", hz) for hz in (10, 100, 1000)}
    errors = [r for r in got if r["status"] == "error"]
    assert {r["op"] for r in errors} == {"msr"} and len(errors) == 3
    assert errors[0]["reason"] == ("raplbench-sample --mechanism msr --frequency 10000: "
                                   "cannot keep up")
    unavailable = {r["op"]: r for r in got if r["status"] == "unavailable"}
    assert set(unavailable) == set(registry.MECHANISMS) - {"perf", "msr"}
    assert unavailable["kernel"]["reason"] == f"the ksample module cannot be loaded here: {REASON}"
    assert unavailable["ebpf"]["reason"] == "the sampler cannot sample here (see its sampler row)"
    raw = json.loads((tmp_path / idle_cost.RAW_NAME).read_text())
    perf10 = next(c for c in raw["cells"] if c["mechanism"] == "perf" and c["rate_hz"] == 10)
    assert perf10["window_s"] == idle_cost.window_s(False, 10)
    assert {r["parameters"]["window_s"] for r in got if r["status"] == "ok"} == {
        idle_cost.window_s(False, hz) for hz in idle_cost.FREQUENCIES}
    assert [p["sampler"]["wakeups_per_s"] - p["bare"]["wakeups_per_s"]
            for p in perf10["pairs"]] == [10.0, 10.0]


def test_quick_runs_1_khz_only():
    assert idle_cost.frequencies(True) == (1000,)
    assert idle_cost.frequencies(False) == (10, 100, 1000, 10000)


def test_without_the_sampler_binary_every_mechanism_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(sampler, "BINARY", tmp_path / "missing")
    got = valid(idle_cost.run(COMMON, tmp_path, True, {"perf": None}))
    assert [r["op"] for r in got[::3]] == list(registry.MECHANISMS)
    assert all("not built" in r["reason"] for r in got)


# --- one short real run -----------------------------------------------------------------------

def test_a_short_real_run():
    """One pair... two pairs of 0.2 s windows at 1000 Hz: ebpf where it can
    run (root), else the powercap stand-in; the rows validate, and the
    ebpf sampler's wakeups rise above the baseline (a bpf_timer tick is a
    local timer interrupt and an HRTIMER softirq)."""
    if not sampler.BINARY.exists():
        pytest.skip(f"{sampler.BINARY} not built: run make build")
    mechanism = "ebpf" if os.geteuid() == 0 else "powercap"
    cell = idle_cost.Cell(mechanism, 1000, window_s=0.2)
    idle_cost.experiment([cell], 2, 0.05, "seed")
    if cell.failed is not None:
        pytest.skip(f"raplbench-sample --mechanism {mechanism} cannot run here: {cell.failed}")
    got = valid(idle_cost.cell_rows(COMMON, cell, None))
    wake = got[0]
    assert wake["status"] == "ok" and wake["n"] == 2
    assert wake["target"].endswith(" @ 1000 Hz")
    if mechanism == "ebpf":
        assert wake["median"] > 500, wake["samples"]
