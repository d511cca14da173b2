"""The sampler step: raplbench-sample --report in PAIRS windows per
mechanism (a full run 10 windows of 1 s, QUICK 10 of 0.1 s), its rows read
back as written, and the three kinds of its rows (sampler, null sampler,
above null) told apart by their target; the kernel mechanism run with the
ksample module loaded around it (fakes of kbench/load, rmmod and
/proc/modules: results/test_ksample_module.py)."""

import json
import stat
import sys

import pytest

from results import ksample_module, registry, rows, sampler, schema
from results.test_ksample_module import REASON, FakeModule

MACHINE = {field: None for field in schema.SCHEMA["$defs"]["machine"]["required"]}
COMMON = rows.common("20261123T000000Z-abcdef", "2026-11-23T00:00:00Z", MACHINE)


def test_a_run_is_pairs_windows_of_1_s_or_0_1_s_under_quick():
    assert sampler.PAIRS == 10
    assert sampler.duration_s(quick=False) == 10.0
    assert sampler.duration_s(quick=True) == 1.0
    assert sampler.duration_s(quick=True) / sampler.PAIRS == 0.1


def fake_sampler(tmp_path, monkeypatch, body: str):
    """A stand-in raplbench-sample: a Python script with `body`, its
    arguments in `args` (the option after each option name in `opt`)."""
    script = tmp_path / "raplbench-sample"
    script.write_text(f"#!{sys.executable}\nimport json, sys\nargs = sys.argv[1:]\n"
                      f"opt = lambda name: args[args.index(name) + 1]\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sampler, "BINARY", script)


def row(target, metric="rate_hz", status="ok", stand_in=None, op="perf"):
    return {"op": op, "target": target, "metric": metric, "status": status,
            "stand_in": stand_in}


def test_self_report_asks_for_pairs_and_takes_the_rows_as_written(tmp_path, monkeypatch):
    fake_sampler(tmp_path, monkeypatch, """
rows = [{"target": t, "args": args} for t in
        ("msr/tsc/ @ 1000 Hz", "null: bare timerfd loop @ 1000 Hz", "above null: msr/tsc/ @ 1000 Hz")]
open(opt("--report"), "w").write("".join(json.dumps(r) + "\\n" for r in rows))
print("raplbench-sample: sampling perf (msr/tsc/) at 1000 Hz on CPU 0", file=sys.stderr)
print("raplbench-sample: perf above null, 10 pairs: CPU +1.00 us per sample", file=sys.stderr)
""")
    got, why, said = sampler.self_report("perf", tmp_path, "run-1", tmp_path / "machine.json",
                                         sampler.duration_s(quick=True))
    assert why is None
    assert [sampler.role(r) for r in got] == [sampler.SAMPLER, sampler.NULL, sampler.ABOVE_NULL]
    args = got[0]["args"]
    assert args[args.index("--pairs") + 1] == "10"
    assert args[args.index("--duration") + 1] == "1.0"
    assert args[args.index("--mechanism") + 1] == "perf"
    assert said[-1] == "perf above null, 10 pairs: CPU +1.00 us per sample"
    assert (tmp_path / "sampler-perf.log").read_text().startswith(str(sampler.BINARY))


def test_a_sampler_that_cannot_run_says_why(tmp_path, monkeypatch):
    fake_sampler(tmp_path, monkeypatch, """
print("raplbench-sample: /dev/cpu/0/msr missing: load the msr module", file=sys.stderr)
sys.exit(2)
""")
    got, why, said = sampler.self_report("msr", tmp_path, "run-1", tmp_path / "machine.json", 1.0)
    assert (got, why, said) == ([], "/dev/cpu/0/msr missing: load the msr module", [])


def test_role_tells_the_sampler_its_null_and_above_null_apart():
    assert sampler.role(row("msr/tsc/ @ 1000 Hz")) == sampler.SAMPLER
    assert sampler.role(row(None)) == sampler.SAMPLER  # an unavailable mechanism
    assert sampler.role(row("null: bare bpf_timer program @ 1000 Hz")) == sampler.NULL
    assert sampler.role(row("above null: msr/tsc/ @ 1000 Hz")) == sampler.ABOVE_NULL
    # a target that merely contains the words is the sampler's
    assert sampler.role(row("/sys/x/null: y @ 1000 Hz")) == sampler.SAMPLER


def test_stand_ins_come_from_the_samplers_own_rate_rows():
    rows = [
        row("msr/tsc/ @ 1000 Hz", stand_in="no power PMU"),
        row("null: bare timerfd loop @ 1000 Hz"),
        row("above null: msr/tsc/ @ 1000 Hz", stand_in="no power PMU"),
        # the sampler could not run here: its rows above the null loop (were
        # there any) must not make it count as sampling
        row(None, op="msr", status="unavailable"),
        row("above null: cpuid:0x0 @ 1000 Hz", op="msr", stand_in="no msr module"),
        row("null: bare timerfd loop @ 1000 Hz", op="powercap"),
    ]
    assert sampler.stand_ins(rows) == {"perf": "no power PMU"}


# ---- the kernel mechanism: the ksample module around its run -----------------------------

REPORT_THE_MODULE = """
loaded = any(l.startswith("ksample ") for l in open(MODULES))
rows = [{"op": opt("--mechanism"), "target": "rdmsr 0x611 @ 1000 Hz", "module_loaded": loaded}]
open(opt("--report"), "w").write("".join(json.dumps(r) + "\\n" for r in rows))
"""


def fake_kernel_sampler(tmp_path, monkeypatch, fake: FakeModule, body=REPORT_THE_MODULE):
    fake_sampler(tmp_path, monkeypatch, f"MODULES = {str(fake.modules)!r}\n{body}")


def test_the_kernel_mechanism_runs_with_the_module_loaded_and_removes_it(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)
    fake_kernel_sampler(tmp_path, monkeypatch, fake)
    got = sampler.run_one(ksample_module.MECHANISM, COMMON, tmp_path, tmp_path / "m.json", True)
    assert [(r["op"], r["module_loaded"]) for r in got] == [("kernel", True)]
    assert fake.calls() == ["load ksample", "rmmod ksample"] and not fake.state()


def test_other_mechanisms_never_load_the_module(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)
    fake_kernel_sampler(tmp_path, monkeypatch, fake)
    got = sampler.run_one("perf", COMMON, tmp_path, tmp_path / "m.json", True)
    assert [(r["op"], r["module_loaded"]) for r in got] == [("perf", False)]
    assert fake.calls() == []


def test_where_the_module_cannot_load_the_row_is_unavailable_with_the_reason(tmp_path,
                                                                               monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch, load="unavailable")
    fake_kernel_sampler(tmp_path, monkeypatch, fake, body="raise SystemExit('must not run')")
    (row,) = sampler.run_one("kernel", COMMON, tmp_path, tmp_path / "m.json", True)
    assert (row["status"], row["op"], row["metric"]) == ("unavailable", "kernel", "rate_hz")
    assert row["reason"] == f"the ksample module cannot be loaded here: {REASON}"
    assert schema.validate_row(row) == []
    assert not (tmp_path / "sampler-kernel.log").exists()  # the sampler never ran
    assert "unavailable: " + REASON in (tmp_path / "ksample.log").read_text()


def test_a_module_that_fails_to_build_gives_an_error_row(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch, load="broken")
    fake_kernel_sampler(tmp_path, monkeypatch, fake)
    (row,) = sampler.run_one("kernel", COMMON, tmp_path, tmp_path / "m.json", True)
    assert row["status"] == "error" and "exited with status 2" in row["reason"]


def test_a_kernel_sampler_that_fails_says_why_and_the_module_goes(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)
    fake_kernel_sampler(tmp_path, monkeypatch, fake, body="""
print("raplbench-sample: /proc/ksample/control: start 1000: No such device (ENXIO)", file=sys.stderr)
sys.exit(2)
""")
    (row,) = sampler.run_one("kernel", COMMON, tmp_path, tmp_path / "m.json", True)
    assert row["status"] == "unavailable" and row["reason"].startswith("/proc/ksample/control")
    assert fake.calls()[-1] == "rmmod ksample" and not fake.state()


def test_an_interrupted_kernel_run_still_removes_the_module(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)

    def interrupted(*args, **kwargs):
        assert fake.state()
        raise KeyboardInterrupt
    monkeypatch.setattr(sampler, "self_report", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sampler.run_one("kernel", COMMON, tmp_path, tmp_path / "m.json", True)
    assert fake.calls() == ["load ksample", "rmmod ksample"] and not fake.state()


def test_run_all_gives_every_registered_mechanism_rows(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch, load="unavailable")
    fake_kernel_sampler(tmp_path, monkeypatch, fake)
    got = sampler.run_all(COMMON, tmp_path, tmp_path / "m.json", True)
    assert [r["op"] for r in got] == list(registry.MECHANISMS)
    kernel = got[-1]
    assert kernel["op"] == "kernel" and kernel["status"] == "unavailable"
