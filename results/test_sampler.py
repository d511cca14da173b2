"""The sampler step: raplbench-sample --report in PAIRS windows per
mechanism, the rows built from its raw windows (the sampler, the null
sampler, above null), the kernel mechanism run with the ksample module
loaded around it (results/test_ksample_module.py's fakes). And Background
(fake samplers): ready on its banner; an error quoting it when it never
starts, dies before it is stopped, or (when asked) stops with a failure;
killed when it neither starts nor stops; --cpu only for a sampling thread."""

import json
import os
import stat
import sys
import time

import pytest

from results import ksample_module, registry, rows, sampler, schema
from results.test_ksample_module import REASON, FakeModule

pytestmark = pytest.mark.serial  # runs the samplers and judges their rates (conftest.py)

MACHINE = {field: None for field in schema.SCHEMA["$defs"]["machine"]["required"]}
COMMON = rows.common("20261123T000000Z-abcdef", "2026-11-23T00:00:00Z", MACHINE)


def test_a_run_is_pairs_windows_of_0_5_s_or_0_05_s_under_quick():
    assert sampler.PAIRS == 10
    assert sampler.duration_s(quick=False) == 5.0
    assert sampler.duration_s(quick=True) == 0.5
    assert sampler.duration_s(quick=True) / sampler.PAIRS == 0.05


def fake_sampler(tmp_path, monkeypatch, body: str):
    """A stand-in raplbench-sample running `body`, its arguments in `args` (`opt(name)`)."""
    script = tmp_path / "raplbench-sample"
    script.write_text(f"#!{sys.executable}\nimport json, sys\nargs = sys.argv[1:]\n"
                      f"opt = lambda name: args[args.index(name) + 1]\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sampler, "BINARY", script)


def row(target, metric="rate_hz", status="ok", stand_in=None, op="perf", role=rows.MEASURED):
    return {"op": op, "target": target, "metric": metric, "status": status, "stand_in": stand_in,
            "role": role}


def window(kind, pair, samples=100, cpu_ns=100_000, wall_ns=100_000_000, error_ns=2000.0,
           missed=0, first_error=None):
    """One window as raplbench-sample --report writes it."""
    return {"kind": kind, "pair": pair, "wall_ns": wall_ns, "samples": samples,
            "samples_since_start": samples, "cpu_ns": cpu_ns, "missed_ticks": missed,
            "interval_error_p50_ns": error_ns if samples > 1 else None, "dropped": 0,
            "read_errors": 0 if first_error is None else 1, "stale": 0, "incomplete": 0,
            "wrap_gaps": 0, "first_error": first_error}


def report(windows, mechanism="perf", stand_in=None):
    """A --report document: the sampler reads msr/tsc/ on CPU 0, frozen."""
    return {"tool": "raplbench-sample", "mechanism": mechanism, "frequency_hz": 1000,
            "trigger": None,
            "sampler": {"target": "msr/tsc/", "cpu": 0, "target_cpu": 0, "stand_in": stand_in,
                        "liveness": "frozen", "liveness_note": "msr/tsc/ did not change"},
            "null": {"target": "bare timerfd loop", "cpu": 0, "target_cpu": None,
                     "stand_in": None, "liveness": None, "liveness_note": None},
            "windows": windows}


def abba(pairs, **sampler):
    """`pairs` pairs AB BA ...: null 1 µs a sample, the sampler 2 µs (or `sampler`)."""
    out = []
    for i in range(pairs):
        s, n = window("sampler", i, **{"cpu_ns": 200_000, **sampler}), window("null", i)
        out += [s, n] if i % 2 == 0 else [n, s]
    return out


def test_the_rows_of_a_report_are_the_samplers_the_nulls_and_above_null():
    got = sampler.report_rows(COMMON, report(abba(4)))
    target = "msr/tsc/ @ 1000 Hz"
    metrics = list(sampler.METRICS)
    assert [(r["metric"], r["target"]) for r in got] == (
        [(m, target) for m in metrics]
        + [(m, "bare timerfd loop @ 1000 Hz") for m in metrics]
        + [(m, target) for m in ("rate_hz", "cpu_us_per_sample")])
    assert [r["role"] for r in got] == [rows.MEASURED] * 4 + [rows.NULL] * 4 + [
        rows.ABOVE_NULL] * 2
    for r in got:
        assert schema.validate_row(r) == [], r
        assert (r["harness"], r["path"], r["op"], r["status"], r["n"]) == (
            "sampler", "sampler", "perf", "ok", 4), r
        assert r["unit"] == rows.METRIC_UNITS[r["metric"]]
    by = {(r["role"], r["metric"]): r for r in got}
    # 100 samples in 0.1 s; 200 µs of CPU over 100 samples; 2000 ns median error
    assert by[rows.MEASURED, "rate_hz"]["samples"] == [1000.0] * 4
    assert by[rows.MEASURED, "cpu_us_per_sample"]["samples"] == [2.0] * 4
    assert by[rows.MEASURED, "jitter_us"]["samples"] == [2.0] * 4
    assert by[rows.NULL, "cpu_us_per_sample"]["samples"] == [1.0] * 4
    assert by[rows.ABOVE_NULL, "cpu_us_per_sample"]["samples"] == [1.0] * 4
    assert by[rows.ABOVE_NULL, "rate_hz"]["samples"] == [0.0] * 4
    # the sampler's verdict on its rows and above null; the null loop none
    assert by[rows.ABOVE_NULL, "rate_hz"]["liveness"] == "frozen"
    assert by[rows.NULL, "rate_hz"]["liveness"] is None
    assert by[rows.NULL, "rate_hz"]["target_cpu"] is None


def test_a_mechanism_whose_cpu_the_kernel_spends_unseen_has_no_cpu_figure():
    """perf-ring (issue 35): the kernel takes each sample in the timer
    interrupt, in no thread's schedstat: its CPU per tick rows (sampler,
    null, above null) are unavailable with the registry's reason, its rates
    are measured."""
    doc = report(abba(4), mechanism="perf-ring")
    doc["trigger"] = ("a cpu-clock member sampling each package's group of counters "
                      "(counter-leads); the kernel refused timer-leads: EINVAL")
    got = sampler.report_rows(COMMON, doc)
    # the design that ran, and what the kernel refused, on every measured row
    assert {r["parameters"]["trigger"] for r in got if r["status"] == "ok"} == {doc["trigger"]}
    cpu = [r for r in got if r["metric"] == "cpu_us_per_sample"]
    assert [(r["role"], r["status"]) for r in cpu] == [
        (rows.MEASURED, "unavailable"), (rows.NULL, "unavailable"),
        (rows.ABOVE_NULL, "unavailable")]
    assert cpu[0]["reason"].startswith("perf-ring's CPU per tick is not measured: the kernel "
                                       "takes each sample in the timer interrupt")
    assert all(r["status"] == "ok" for r in got if r["metric"] == "rate_hz")
    # a mechanism whose threads do the work keeps its CPU figures
    assert all(r["status"] == "ok" for r in sampler.report_rows(COMMON, report(abba(4)))
               if r["metric"] == "cpu_us_per_sample")


def test_each_pair_is_its_sampler_window_minus_its_own_null_window():
    windows = abba(3)
    windows[0]["samples"] = windows[0]["samples_since_start"] = 90  # pair 0's sampler
    windows.append(window("null", 3))  # stopped: pair 3 never ran its sampler window
    got = sampler.report_rows(COMMON, report(windows))
    (rate,) = [r for r in got if r["role"] == rows.ABOVE_NULL and r["metric"] == "rate_hz"]
    assert rate["samples"] == [-100.0, 0.0, 0.0]
    assert [r["n"] for r in got if r["role"] == rows.NULL] == [4] * 4


def test_a_window_without_a_value_gives_no_sample_and_no_value_at_all_an_error_row():
    failed = window("sampler", 0, samples=0, first_error="read failed: EIO")
    got = sampler.report_rows(COMMON, report([failed]))
    assert len(got) == 4  # no null window: the sampler's rows alone
    by = {r["metric"]: r for r in got}
    assert by["rate_hz"]["samples"] == [0.0] and by["missed_ticks"]["status"] == "ok"
    for metric in ("jitter_us", "cpu_us_per_sample"):
        assert (by[metric]["status"], by[metric]["reason"]) == ("error", "read failed: EIO")
        assert schema.validate_row(by[metric]) == []
    lonely = sampler.report_rows(COMMON, report([window("sampler", 0), window("null", 1)]))
    above = [r for r in lonely if r["role"] == rows.ABOVE_NULL]
    assert [(r["status"], r["reason"]) for r in above] == [("error", sampler.NO_PAIR)] * 2


def test_self_report_asks_for_pairs_and_builds_the_rows_of_its_report(tmp_path, monkeypatch):
    fake_sampler(tmp_path, monkeypatch, f"""
open(opt("--report"), "w").write(json.dumps({report(abba(2))!r}) + "\\n")
print("raplbench-sample: sampling perf (msr/tsc/) at 1000 Hz on CPU 0", file=sys.stderr)
print("raplbench-sample: " + " ".join(args), file=sys.stderr)
print("raplbench-sample: perf above null, 10 pairs: CPU +1.00 us per sample", file=sys.stderr)
""")
    got, why, said = sampler.self_report("perf", tmp_path, COMMON, sampler.duration_s(quick=True))
    assert why is None
    assert len(got) == 10 and all(r["run_id"] == COMMON["run_id"] for r in got)
    args = said[1].split()
    assert args[args.index("--pairs") + 1] == "10"
    assert args[args.index("--duration") + 1] == str(sampler.duration_s(quick=True))
    assert args[args.index("--mechanism") + 1] == "perf"
    assert args[args.index("--report") + 1] == str(tmp_path / "sampler-perf.json")
    assert said[-1] == "perf above null, 10 pairs: CPU +1.00 us per sample"
    assert (tmp_path / "sampler-perf.log").read_text().startswith(str(sampler.BINARY))


def test_a_sampler_that_cannot_run_says_why(tmp_path, monkeypatch):
    fake_sampler(tmp_path, monkeypatch, """
print("raplbench-sample: /dev/cpu/0/msr missing: load the msr module", file=sys.stderr)
sys.exit(2)
""")
    got, why, said = sampler.self_report("msr", tmp_path, COMMON, 1.0)
    assert (got, why, said) == ([], "/dev/cpu/0/msr missing: load the msr module", [])


def test_stand_ins_come_from_the_samplers_own_rate_rows():
    sampler_rows = [
        row("msr/tsc/ @ 1000 Hz", stand_in="no power PMU"),
        row("bare timerfd loop @ 1000 Hz", role=rows.NULL),
        row("msr/tsc/ @ 1000 Hz", stand_in="no power PMU", role=rows.ABOVE_NULL),
        # the sampler could not run here: its rows above the null loop (were
        # there any) must not make it count as sampling
        row(None, op="msr", status="unavailable"),
        row("cpuid:0x0 @ 1000 Hz", op="msr", stand_in="no msr module", role=rows.ABOVE_NULL),
        row("bare timerfd loop @ 1000 Hz", op="powercap", role=rows.NULL),
    ]
    assert sampler.stand_ins(sampler_rows) == {"perf": "no power PMU"}


# ---- the kernel mechanism: the ksample module around its run -----------------------------

REPORT_THE_MODULE = f"""
loaded = any(l.startswith("ksample ") for l in open(MODULES))
doc = {report([window("sampler", 0)])!r}
doc["mechanism"], doc["sampler"]["target"] = opt("--mechanism"), f"loaded={{loaded}}"
open(opt("--report"), "w").write(json.dumps(doc))
"""


def fake_kernel_sampler(tmp_path, monkeypatch, fake: FakeModule, body=REPORT_THE_MODULE):
    fake_sampler(tmp_path, monkeypatch, f"MODULES = {str(fake.modules)!r}\n{body}")


def test_the_kernel_mechanism_runs_with_the_module_loaded_and_removes_it(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)
    fake_kernel_sampler(tmp_path, monkeypatch, fake)
    got = sampler.run_one(ksample_module.MECHANISM, COMMON, tmp_path, True)
    assert {(r["op"], r["target"]) for r in got} == {("kernel", "loaded=True @ 1000 Hz")}
    assert fake.calls() == ["load ksample", "rmmod ksample"] and not fake.state()


def test_other_mechanisms_never_load_the_module(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)
    fake_kernel_sampler(tmp_path, monkeypatch, fake)
    got = sampler.run_one("perf", COMMON, tmp_path, True)
    assert {(r["op"], r["target"]) for r in got} == {("perf", "loaded=False @ 1000 Hz")}
    assert fake.calls() == []


def test_where_the_module_cannot_load_the_row_is_unavailable_with_the_reason(tmp_path,
                                                                               monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch, load="unavailable")
    fake_kernel_sampler(tmp_path, monkeypatch, fake, body="raise SystemExit('must not run')")
    (row,) = sampler.run_one("kernel", COMMON, tmp_path, True)
    assert (row["status"], row["op"], row["metric"]) == ("unavailable", "kernel", "rate_hz")
    assert row["reason"] == f"the ksample module cannot be loaded here: {REASON}"
    assert schema.validate_row(row) == []
    assert not (tmp_path / "sampler-kernel.log").exists()  # the sampler never ran
    assert "unavailable: " + REASON in (tmp_path / "ksample.log").read_text()


def test_a_module_that_fails_to_build_gives_an_error_row(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch, load="broken")
    fake_kernel_sampler(tmp_path, monkeypatch, fake)
    (row,) = sampler.run_one("kernel", COMMON, tmp_path, True)
    assert row["status"] == "error" and "exited with status 2" in row["reason"]


def test_a_kernel_sampler_that_fails_says_why_and_the_module_goes(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)
    fake_kernel_sampler(tmp_path, monkeypatch, fake, body="""
print("raplbench-sample: /proc/ksample/control: start 1000: No such device (ENXIO)", file=sys.stderr)
sys.exit(2)
""")
    (row,) = sampler.run_one("kernel", COMMON, tmp_path, True)
    assert row["status"] == "unavailable" and row["reason"].startswith("/proc/ksample/control")
    assert fake.calls()[-1] == "rmmod ksample" and not fake.state()


def test_an_interrupted_kernel_run_still_removes_the_module(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch)

    def interrupted(*args, **kwargs):
        assert fake.state()
        raise KeyboardInterrupt
    monkeypatch.setattr(sampler, "self_report", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sampler.run_one("kernel", COMMON, tmp_path, True)
    assert fake.calls() == ["load ksample", "rmmod ksample"] and not fake.state()


def test_run_all_gives_every_registered_mechanism_rows(tmp_path, monkeypatch):
    fake = FakeModule(tmp_path, monkeypatch, load="unavailable")
    fake_kernel_sampler(tmp_path, monkeypatch, fake)
    got = sampler.run_all(COMMON, tmp_path, True)
    assert list(dict.fromkeys(r["op"] for r in got)) == list(registry.MECHANISMS)
    kernel = [r for r in got if r["op"] == "kernel"]
    assert kernel and all(r["status"] == "unavailable" for r in kernel)


# --- raplbench-sample in the background (the overhead and idle-cost steps) --------------------

@pytest.mark.parametrize("line,expected", [
    ("raplbench-sample: sampling powercap (/sys/class/net/lo/statistics/rx_bytes) at 1000 Hz\n",
     ("/sys/class/net/lo/statistics/rx_bytes", None)),
    ("raplbench-sample: sampling msr (cpuid:0x0) at 10 Hz on CPU 0", ("cpuid:0x0", 0)),
    ("raplbench-sample: sampling perf (power/energy-pkg/,power/energy-ram/) at 10000 Hz on CPU 3",
     ("power/energy-pkg/,power/energy-ram/", 3)),
    ("raplbench-sample: sampling ebpf (msr/tsc/) at 1000 Hz on CPU 0 "
     "(bpf_timer (CPU-pinned, absolute deadlines))", ("msr/tsc/", 0)),
    ("raplbench-sample: sampling kernel (package-0,package-1) at 100 Hz on CPU 0,8",
     ("package-0,package-1", None)),
    ("raplbench-sample: counter X is frozen", None),
])
def test_the_banner_names_the_target_and_the_cpu(line, expected):
    assert sampler.parse_banner(line) == expected


def background_script(tmp_path, monkeypatch, body: str):
    """A stand-in raplbench-sample for Background: a Python script with `body`."""
    script = tmp_path / "raplbench-sample"
    script.write_text(f"#!{sys.executable}\nimport os, signal, sys, time\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sampler, "BINARY", script)


def test_background_is_ready_on_its_banner_even_when_dead_counters_come_first(tmp_path,
                                                                                monkeypatch):
    background_script(tmp_path, monkeypatch, """
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))  # before the banner: stop() may follow at once
print("raplbench-sample: counter power/energy-psys/ is frozen", file=sys.stderr, flush=True)
print("raplbench-sample: sampling perf (msr/tsc/) at 100 Hz on CPU 1", file=sys.stderr, flush=True)
time.sleep(60)
""")
    bg = sampler.Background("perf", frequency=100, duration_s=5)
    assert (bg.label, bg.cpu) == ("msr/tsc/", 1) and bg.proc.poll() is None  # still sampling
    assert bg.proc.args[1:] == ["--mechanism", "perf", "--frequency", "100", "--duration", "5"]
    assert bg.stop() == 130 and bg.proc.returncode == 130


def test_a_banner_it_cannot_parse_still_means_ready(tmp_path, monkeypatch):
    background_script(tmp_path, monkeypatch, """
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
print("raplbench-sample: sampling perf at 1000 Hz", file=sys.stderr, flush=True)
time.sleep(60)
""")
    bg = sampler.Background("perf", output=tmp_path / "out.csv")
    assert (bg.label, bg.cpu) == (None, None)
    assert bg.proc.args[1:] == ["--mechanism", "perf", "--output", str(tmp_path / "out.csv"),
                                "--duration", "3600"]
    assert bg.stop(require_clean_exit=True) == 130


def test_a_sampler_that_never_starts_is_an_error_quoting_it(tmp_path, monkeypatch):
    background_script(tmp_path, monkeypatch, """
print("raplbench-sample: counter X is frozen", file=sys.stderr)
print("raplbench-sample: --require-live: 1 counter(s) not live (see above)", file=sys.stderr)
sys.exit(2)
""")
    with pytest.raises(sampler.SamplerFailed) as failed:
        sampler.Background("perf", frequency=1000)
    # str(): the command and all it said (the overhead experiment's error);
    # reason: its last line (the idle-cost step's error rows)
    assert str(failed.value) == (
        "raplbench-sample --mechanism perf --frequency 1000 did not start sampling: "
        "raplbench-sample: counter X is frozen "
        "raplbench-sample: --require-live: 1 counter(s) not live (see above)")
    assert failed.value.reason == "--require-live: 1 counter(s) not live (see above)"
    assert isinstance(failed.value, RuntimeError)  # what bench_all's overhead step catches


def test_a_sampler_that_exits_silently_says_its_status(tmp_path, monkeypatch):
    background_script(tmp_path, monkeypatch, "sys.exit(2)")
    with pytest.raises(sampler.SamplerFailed) as failed:
        sampler.Background("perf")
    assert failed.value.reason == "exited with status 2, no message"
    assert str(failed.value) == ("raplbench-sample --mechanism perf did not start sampling: "
                                 "exited with status 2, no message")


def test_a_sampler_that_neither_starts_nor_exits_is_killed(tmp_path, monkeypatch):
    background_script(tmp_path, monkeypatch, "time.sleep(60)")
    with pytest.raises(sampler.SamplerFailed,
                       match=r"^raplbench-sample --mechanism perf did not start sampling "
                             r"within 0.3 s; killed$") as failed:
        sampler.Background("perf", start_timeout_s=0.3)
    assert failed.value.reason == "did not start sampling within 0.3 s; killed"


def test_a_sampler_that_died_before_it_was_stopped_is_an_error(tmp_path, monkeypatch):
    """A sampler that died after its banner would show as no cost."""
    background_script(tmp_path, monkeypatch, """
print("raplbench-sample: sampling perf (msr/tsc/) at 100 Hz on CPU 1", file=sys.stderr, flush=True)
print("raplbench-sample: read failed: EIO", file=sys.stderr, flush=True)
sys.exit(1)
""")
    bg = sampler.Background("perf", frequency=100)
    bg.proc.wait()
    with pytest.raises(sampler.SamplerFailed) as failed:
        bg.stop()
    assert str(failed.value) == ("raplbench-sample --mechanism perf --frequency 100 exited "
                                 "(status 1) before it was stopped: "
                                 "raplbench-sample: read failed: EIO")
    assert failed.value.reason == "exited (status 1) before it was stopped: read failed: EIO"


def test_unchecked_a_dead_sampler_gives_its_status(tmp_path, monkeypatch):
    background_script(tmp_path, monkeypatch, """
print("raplbench-sample: sampling perf (msr/tsc/) at 100 Hz on CPU 1", file=sys.stderr, flush=True)
sys.exit(1)
""")
    bg = sampler.Background("perf")
    bg.proc.wait()
    assert bg.stop(check=False) == 1


@pytest.mark.parametrize("status,clean", [(0, True), (130, True), (sampler.EXIT_LOST, True),
                                          (1, False)])
def test_a_clean_exit_is_required_only_when_asked(tmp_path, monkeypatch, status, clean):
    """The idle-cost step asks (a failed sampler's cost is no finding); the
    overhead experiment does not."""
    background_script(tmp_path, monkeypatch, f"""
def stop(*_):
    print("raplbench-sample: flush failed", file=sys.stderr, flush=True)
    sys.exit({status})
signal.signal(signal.SIGINT, stop)
print("raplbench-sample: sampling perf (msr/tsc/) at 100 Hz on CPU 1", file=sys.stderr, flush=True)
time.sleep(60)
""")
    assert sampler.Background("perf").stop() == status
    bg = sampler.Background("perf", frequency=100)
    if clean:
        assert bg.stop(require_clean_exit=True) == status
        return
    with pytest.raises(sampler.SamplerFailed) as failed:
        bg.stop(require_clean_exit=True)
    assert failed.value.reason == f"exited with status {status}: flush failed"


def test_a_sampler_that_ignores_sigint_is_killed_not_left_running(tmp_path, monkeypatch):
    """Issue 14: a TimeoutExpired left the child running behind the run."""
    background_script(tmp_path, monkeypatch, """
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("raplbench-sample: sampling perf (msr/tsc/) at 1000 Hz on CPU 0", file=sys.stderr, flush=True)
time.sleep(60)
""")
    bg = sampler.Background("perf", stop_timeout_s=0.5)
    with pytest.raises(sampler.SamplerFailed, match="did not stop within 0.5 s of SIGINT; killed"):
        bg.stop(check=False)
    assert bg.proc.returncode == -9  # SIGKILL: not running any more


def test_stderr_is_drained_while_it_samples(tmp_path, monkeypatch):
    """A sampler that says much after its banner never blocks on a full pipe."""
    background_script(tmp_path, monkeypatch, """
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
print("raplbench-sample: sampling perf (msr/tsc/) at 1000 Hz on CPU 0", file=sys.stderr, flush=True)
for i in range(20000):
    print(f"raplbench-sample: tick {i} late", file=sys.stderr)
sys.stderr.flush()
open(sys.argv[0] + ".done", "w").close()
time.sleep(60)
""")
    bg = sampler.Background("perf")
    done = tmp_path / "raplbench-sample.done"
    for _ in range(200):
        if done.exists():
            break
        time.sleep(0.05)
    assert done.exists()
    assert bg.stop() == 130 and len(bg.tail) == 20000


@pytest.mark.parametrize("mechanism", registry.MECHANISMS)
def test_only_a_user_space_sampling_thread_is_placed_with_cpu(tmp_path, monkeypatch, mechanism):
    """The in-kernel mechanisms tick in the kernel (raplbench-sample refuses
    --cpu): their drain thread is placed by the process's affinity."""
    background_script(tmp_path, monkeypatch, """
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
print("raplbench-sample: sampling", sys.argv[1:], sorted(os.sched_getaffinity(0)),
      file=sys.stderr, flush=True)
time.sleep(60)
""")
    cpu = max(os.sched_getaffinity(0))
    bg = sampler.Background(mechanism, output=tmp_path / "out.csv", cpu=cpu)
    args = bg.proc.args
    bg.stop()
    placed_by_option = not registry.mechanism(mechanism).in_kernel
    assert ("--cpu" in args) is placed_by_option
    if placed_by_option:
        assert args[args.index("--cpu") + 1] == str(cpu)
