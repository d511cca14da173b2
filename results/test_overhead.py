"""The overhead experiment's background sampler: it is ready once the
sampler says it samples, whatever it said before (a dead counter is named
first, and sampling goes on), and a sampler that never starts is an error
that quotes what it said."""

import stat
import sys

import pytest

from results import overhead, sampler


def fake_sampler(tmp_path, monkeypatch, body: str):
    """A stand-in raplbench-sample: a Python script with `body`."""
    script = tmp_path / "raplbench-sample"
    script.write_text(f"#!{sys.executable}\nimport sys, signal, time\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sampler, "BINARY", script)


def test_ready_after_the_banner_even_when_dead_counters_come_first(tmp_path, monkeypatch):
    fake_sampler(tmp_path, monkeypatch, """
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))  # before the banner: stop() may follow at once
print("raplbench-sample: powercap counter intel-rapl:0/package-0 is frozen: ...", file=sys.stderr, flush=True)
print("raplbench-sample: sampling powercap (intel-rapl:0) at 1000 Hz on CPU 0", file=sys.stderr, flush=True)
time.sleep(60)
""")
    background = overhead.BackgroundSampler("powercap", tmp_path / "out.csv")
    assert background.proc.poll() is None  # still sampling
    background.stop()
    assert background.proc.returncode == 130


def test_a_sampler_that_never_starts_is_an_error_quoting_it(tmp_path, monkeypatch):
    fake_sampler(tmp_path, monkeypatch, """
print("raplbench-sample: counter X is frozen", file=sys.stderr)
print("raplbench-sample: --require-live: 1 counter(s) not live (see above)", file=sys.stderr)
sys.exit(2)
""")
    with pytest.raises(RuntimeError) as failed:
        overhead.BackgroundSampler("perf", tmp_path / "out.csv")
    assert str(failed.value) == (
        "raplbench-sample --mechanism perf did not start sampling: raplbench-sample: counter X "
        "is frozen raplbench-sample: --require-live: 1 counter(s) not live (see above)")
