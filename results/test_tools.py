"""The tools people run (issue 36): the registry loads and every entry is
whole; a user's --tool is parsed or refused with the reason; what a tool
lacks is named with its fix; a tool sampling beside the workload is ready
on its first energy line, and one that reads no energy, exits early or
hangs fails with the tail of its output, leaving nothing running; the
overhead experiment measures a tool on another CPU, and a tool that fails
becomes error rows while the run goes on."""

import os
import sys
import time
from pathlib import Path

import pytest

from results import child, overhead, rows, schema, tools

MACHINE = {field: None for field in schema.SCHEMA["$defs"]["machine"]["required"]}
COMMON = rows.common("20261127T000000Z-abcdef", "2026-11-27T00:00:00Z", MACHINE)


def test_the_registry_loads_and_fills_each_command_at_its_period():
    known = tools.load()
    assert "perf-stat" in known and set(tools.QUICK_TOOLS) <= set(known)
    for t in known.values():
        argv = t.argv("msr/tsc/")
        assert not any("{" in a for a in argv), argv
        assert t.period_ms >= tools.PERIOD_MS and t.route in ("perf", "msr", "powercap")
    assert known["perf-stat"].argv("msr/tsc/")[-3:] == ["1", "-e", "msr/tsc/"]
    assert known["turbostat"].argv()[-1] == "0.001"  # seconds


def test_a_broken_registry_entry_is_named(tmp_path):
    bad = tmp_path / "tools.json"
    bad.write_text('{"tools": {"x": {"title": "t", "command": ["x", "--every", "1"]}}}')
    with pytest.raises(ValueError, match="tool 'x'.*period_ms"):
        tools.load(bad)


def test_a_users_tool_is_parsed_or_refused_with_the_reason():
    t = tools.user_tool("mine=my-meter --every '{period_ms} ms' -q")
    assert t.user and t.argv() == ["my-meter", "--every", "1 ms", "-q"]
    assert t.energy is None and t.route == "its own"
    for spec, why in [("mine", "NAME="), ("mine=", "NAME="), ("Mine=x {period_ms}", "lower case"),
                      ("mine=x --fast", "no {period_ms}"), ("mine=x '{period_ms}", "quotation")]:
        with pytest.raises(ValueError, match=why):
            tools.user_tool(spec)
    # its name names its rows and raw files: a mechanism's, a registry
    # tool's or another --tool's is refused
    assert [t.name for t in tools.user_tools(["a=x {period_ms}", "b=y {period_s}"])] == ["a", "b"]
    for specs in (["perf=x {period_ms}"], ["perf-stat=x {period_ms}"],
                  ["a=x {period_ms}", "a=y {period_ms}"]):
        with pytest.raises(ValueError, match="is taken"):
            tools.user_tools(specs)


def test_perf_stat_on_the_stand_in_says_what_the_stand_in_changes(monkeypatch):
    monkeypatch.setattr(tools, "version", lambda t: "6.1")
    monkeypatch.setattr(tools.shutil, "which", lambda b: "/usr/bin/" + b)
    runnable, _ = tools.plan(True, (), "msr/tsc/", "stand-in: no 'power' PMU")
    (perf,) = runnable
    assert perf.stand_in.startswith("stand-in: no 'power' PMU; with -a, perf opens the per-CPU")
    runnable, _ = tools.plan(True, (), "power/energy-pkg/", None)
    assert runnable[0].stand_in is None and runnable[0].argv[-1] == "power/energy-pkg/"


def test_what_a_tool_lacks_is_named_with_its_fix(monkeypatch):
    known = tools.load()
    monkeypatch.setattr(tools.shutil, "which", lambda b: None)
    assert tools.why_not(known["turbostat"], "msr/tsc/") == (
        "turbostat is not installed (as root: apt-get install linux-cpupower)")
    monkeypatch.setattr(tools.shutil, "which", lambda b: "/usr/bin/" + b)
    monkeypatch.setitem(tools.NEEDS, "msr-device", (lambda: False, "no msr device"))
    assert tools.why_not(known["turbostat"], "msr/tsc/") == "no msr device"
    assert "no energy event" in tools.why_not(known["perf-stat"], None)
    assert tools.why_not(known["perf-stat"], "msr/tsc/") is None


def fake_tool(tmp_path, body: str, energy=r"^J \d+$") -> tools.Tool:
    script = tmp_path / "meter"
    script.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    script.chmod(0o755)
    return tools.Tool(name="meter", title="a fake meter", command=(str(script), "{period_ms}"),
                      min_period_ms=1, route="powercap", energy=energy)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_a_tool_is_ready_on_its_first_energy_line_and_stops_on_sigint(tmp_path):
    t = fake_tool(tmp_path, "print('starting', flush=True)\ntime.sleep(0.05)\n"
                            "while True:\n    print('J 42', flush=True)\n    time.sleep(0.001)")
    bg = tools.Background(t, t.argv(), 0, tmp_path / "log")
    assert "J 42" in bg.tail()
    time.sleep(0.1)
    cpu_ms_per_s = bg.stop()
    assert 0 < cpu_ms_per_s < 1000 and bg.proc.returncode is not None


@pytest.mark.parametrize("body,why", [
    ("print('no RAPL: using a TDP model', flush=True)\ntime.sleep(60)", "no energy reading"),
    ("print('cannot open', flush=True)\nsys.exit(3)", "exited with status 3"),
])
def test_a_tool_that_reads_no_energy_or_exits_fails_with_its_output(tmp_path, body, why):
    t = fake_tool(tmp_path, body)
    with pytest.raises(tools.ToolFailed, match=why) as e:
        tools.Background(t, t.argv(), 0, tmp_path / "log", start_timeout_s=0.5)
    assert "TDP model" in str(e.value) or "cannot open" in str(e.value)


def test_a_tool_that_floods_its_output_is_read_by_its_tail_and_quoted_short(tmp_path):
    """20 MB without a newline, then an energy line: found, and the error
    of a tool that never prints one quotes 200 characters of a line."""
    t = fake_tool(tmp_path, "sys.stdout.write('x' * 20_000_000)\nprint('\\nJ 7', flush=True)\n"
                            "time.sleep(60)")
    bg = tools.Background(t, t.argv(), 0, tmp_path / "log", start_timeout_s=20)
    assert bg.tail().endswith("J 7") and len(bg.tail()) < 1000
    bg.stop()
    t = fake_tool(tmp_path, "sys.stdout.write('x' * 10_000_000)\nsys.stdout.flush()\n"
                            "time.sleep(60)")
    with pytest.raises(tools.ToolFailed) as e:
        tools.Background(t, t.argv(), 0, tmp_path / "log", start_timeout_s=1)
    assert len(str(e.value)) < 1000


def test_a_tool_that_ignores_sigint_is_killed(tmp_path):
    t = fake_tool(tmp_path, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                            "print('J 1', flush=True)\ntime.sleep(60)")
    bg = tools.Background(t, t.argv(), 0, tmp_path / "log")
    monkey_stop = tools.STOP_TIMEOUT_S
    tools.STOP_TIMEOUT_S = 0.2
    try:
        bg.stop()
    finally:
        tools.STOP_TIMEOUT_S = monkey_stop
    assert not alive(bg.proc.pid)


def test_the_overhead_experiment_measures_a_tool_and_a_failing_one_becomes_error_rows(
        tmp_path, monkeypatch):
    good = fake_tool(tmp_path, "while True:\n    print('J 1', flush=True)\n    time.sleep(0.001)")
    (tmp_path / "b").mkdir()
    bad = fake_tool(tmp_path / "b", "print('J 1', flush=True)\nsys.exit(1)")
    bad = tools.Tool(**{**bad.__dict__, "name": "dies"})
    planned = [tools.Planned(good, tuple(good.argv()), "a stand-in", "1.0"),
               tools.Planned(bad, tuple(bad.argv()), None, None)]
    monkeypatch.setattr(overhead, "calibrate", lambda target, cpu: 10)
    monkeypatch.setattr(overhead, "time_once", lambda cmd, out: (time.sleep(0.01), (0.1, 0.1))[1])
    got = overhead.run(COMMON, tmp_path, True, {}, allowed_cpus={0, 1}, budget=5.0,
                       tool_plan=(planned, {"turbostat": "it needs /dev/cpu/0/msr"}))
    by = {(r["op"], r["status"]) for r in got if r["path"] == "tool"}
    assert by == {("meter", "ok"), ("dies", "error"), ("turbostat", "unavailable")}
    meter = [r for r in got if r["op"] == "meter"]
    assert {r["parameters"]["placement"] for r in meter} == {"other CPU"}
    assert meter[0]["stand_in"] == "a stand-in" and meter[0]["parameters"]["tool_version"] == "1.0"
    assert meter[0]["parameters"]["tool_cpu_ms_per_s"] > 0
    dies = next(r for r in got if r["op"] == "dies")
    assert "dies exited with status 1" in dies["reason"]
    assert all(schema.validate_row(r) == [] for r in got)


def test_a_running_tool_is_among_the_children_a_stop_signal_kills(tmp_path):
    """Ctrl-C of bench-all ends in child.kill_all: a tool sampling then
    must not outlive it (its whole process group)."""
    t = fake_tool(tmp_path, "import subprocess\nsubprocess.Popen(['sleep', '60'])\n"
                            "print('J 1', flush=True)\ntime.sleep(60)")
    bg = tools.Background(t, t.argv(), 0, tmp_path / "log")
    child.kill_all()
    bg.proc.wait(5)
    deadline = time.monotonic() + 5
    while tools.group_cpu_ns(bg.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in Path("/proc").glob("[0-9]*/stat") if _running_in(p, bg.proc.pid)]
    assert not left, left


def _running_in(stat: Path, pgid: int) -> bool:
    """Whether the process of `stat` is in group `pgid` and not a zombie
    (one its new parent has yet to reap)."""
    try:
        state, _, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        return int(pgrp) == pgid and state != "Z"
    except (OSError, ValueError):
        return False


def test_bench_all_refuses_a_bad_or_taken_tool_with_exit_2(capsys):
    from results import bench_all
    for spec in ("mine=x --fast", "ebpf=x {period_ms}"):
        with pytest.raises(SystemExit) as refused:
            bench_all.parse_args(["--tool", spec])
        assert refused.value.code == 2
    assert "is taken" in capsys.readouterr().err
    args = bench_all.parse_args(["--tool", "mine=x {period_ms}"])
    assert [t.name for t in args.user_tools] == ["mine"]
