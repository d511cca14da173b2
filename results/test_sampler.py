"""The sampler step: raplbench-sample --report in PAIRS windows per
mechanism (a full run 10 windows of 1 s, QUICK 10 of 0.1 s), its rows read
back as written, and the three kinds of its rows (sampler, null sampler,
above null) told apart by their target."""

import json
import stat
import sys

from results import sampler


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
