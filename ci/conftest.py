"""Shared helpers of the gate's tests: synthetic runs written with
results/rows.py from a seeded numpy RNG, so that each scenario has a known
answer. Nothing here reads the local results/ directory.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from ci import gate
from results import rows, stats

MACHINE = {
    "hostname": "runner-1", "cpu_vendor": "GenuineIntel", "cpu_family": 6, "cpu_model": 167,
    "cpu_stepping": 1, "cpu_model_name": "Intel(R) Xeon(R) Processor", "microcode": "0x1",
    "kernel": "6.18.44", "hypervisor": "kvm", "smt": False, "governor": None, "boost": None,
    "tsc_khz": 2599998, "mitigations": {"spectre_v2": "Mitigation: Retpolines"},
}


def common(run_id="20261122T000000Z-000001", **machine_changes):
    return rows.common(run_id, "2026-11-22T00:00:00Z", {**MACHINE, **machine_changes})


def lognormal(seed, median, sigma, n=20):
    """n samples around `median` with a multiplicative spread `sigma`."""
    return np.random.default_rng(seed).lognormal(np.log(median), sigma, n).tolist()


def latency(c, samples, path="perf", op="read", target="msr/tsc/", cpu=0, target_cpu=0,
            metric="latency", harness="gbench", stand_in=None):
    return rows.measured_row(c, harness=harness, path=path, op=op, target=target, cpu=cpu,
                             target_cpu=target_cpu, metric=metric,
                             unit=rows.METRIC_UNITS[metric], samples=samples,
                             stand_in=stand_in)


def unavailable(c, path="msr-dev", op="pread", target="0x611", cpu=0, target_cpu=0,
                harness="gbench", reason="/dev/cpu/0/msr missing: load the msr module"):
    return rows.not_ok_row(c, harness=harness, path=path, op=op, target=target, cpu=cpu,
                           target_cpu=target_cpu, metric="latency", unit="ns", reason=reason)


def reference(c):
    row = rows.not_ok_row(c, harness="reference", path="msr-dev", op="rdmsr:0x611",
                          target="0x611", cpu=None, target_cpu=None, metric="latency",
                          unit="ns", reason="x")
    row.update(status="ok", reason=None, median=560.0,
               source="Diamond & Stoico 2026, Table 3, Intel i7-8809G")
    return row


def scaled(row, factor):
    """The row with every sample multiplied by factor (summary recomputed)."""
    if row["status"] != "ok" or row["harness"] == "reference":
        return dict(row)
    samples = [x * factor for x in row["samples"]]
    return {**row, "samples": samples, **stats.summarize(samples)}


def write_run(directory: Path, run_rows) -> Path:
    """A run directory holding results.jsonl, as make bench-all writes it."""
    directory.mkdir(parents=True)
    rows.write_jsonl(run_rows, directory / "results.jsonl")
    return directory


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch):
    """A test run inside GitHub Actions must not write to the job's summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def builtin(tmp_path) -> Path:
    """An empty config file: the defaults of ci/gate.toml ([defaults], [machine],
    [liveness]) and none of its other settings."""
    path = tmp_path / "builtin.toml"
    path.write_text("")
    return path


# ---- whole gates through main() -------------------------------------------------------

def run_main(capsys, baseline, current, *extra):
    code = gate.main(["--baseline", str(baseline), "--current", str(current), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def verdict_of(run_dir: Path) -> dict:
    return json.loads((run_dir / gate.VERDICT_NAME).read_text())


def row_of(verdict: dict, **key) -> dict:
    (found,) = [r for r in verdict["rows"] if all(r[k] == v for k, v in key.items())]
    return found

def pair(tmp_path, baseline_rows, current_rows):
    return (write_run(tmp_path / "baseline", baseline_rows),
            write_run(tmp_path / "current", current_rows))

# ---- runs shaped like a QUICK bench-all run ------------------------------------------

def multi_path_run(c):
    """A run shaped like a QUICK bench-all: 10 samples a row, latency, cycles
    and rate rows, same-CPU and cross-CPU reads, rows that are unavailable."""
    def s(seed, median, sigma=0.05):
        return lognormal(seed, median, sigma, n=10)
    return [
        latency(c, s(1, 0.04), path="uinsn", op="nop", target=None, cpu=0, target_cpu=None),
        latency(c, s(2, 5800), path="uinsn", op="cpuid:0x1", target=None, cpu=0, target_cpu=None),
        latency(c, s(3, 340), path="powercap", op="pread",
                target="/sys/class/net/lo/statistics/rx_bytes", target_cpu=None,
                stand_in="no powercap zone: a live sysfs counter stands in"),
        latency(c, s(4, 6100), path="msr-dev", op="pread", target="cpuid:0x0"),
        latency(c, s(5, 55000, 0.15), path="msr-dev", op="pread", target="cpuid:0x0", cpu=1),
        latency(c, s(6, 218)),
        latency(c, s(7, 17000, 0.08), cpu=1),
        latency(c, s(8, 270), path="ebpf-lookup", op="lookup"),
        latency(c, s(9, 120), path="kinsn", op="rdmsr:0x611", target="0x611",
                metric="cycles", harness="kbench"),
        latency(c, s(10, 999, 0.001), path="ebpf-mmap", op="tick", target="bpf_timer",
                cpu=None, target_cpu=0, metric="rate_hz"),
        unavailable(c),
        reference(c),
    ]

def sampler_and_overhead_rows(c, seed=20, drift=1.0, jitter_drift=1.0):
    """What the sampler's self-report and the overhead experiment add to a
    QUICK run: 10 windows per sampler row, 12 pairs per overhead row. `drift`
    moves the whole run as a VM does between two runs (every window of the
    run at once, which the windows' own spread cannot show)."""
    rng = np.random.default_rng(seed)

    def windows(median, sigma, k=10):
        return (median * drift * rng.lognormal(0, sigma, k)).tolist()
    target = "msr/tsc/ @ 1000 Hz"
    null = "bare timerfd loop @ 1000 Hz"
    out = []
    for t, cpu_us in ((target, 20.0), (null, 15.0)):
        out += [
            latency(c, windows(1000, 0.001), path="sampler", op="perf", target=t, cpu=None,
                    target_cpu=None, metric="rate_hz", harness="sampler"),
            latency(c, (np.array(windows(3.5, 0.15)) * jitter_drift).tolist(), path="sampler",
                    op="perf", target=t, cpu=None, target_cpu=None, metric="jitter_us",
                    harness="sampler"),
            latency(c, windows(15.0, 0.2), path="sampler", op="perf", target=t, cpu=None,
                    target_cpu=None, metric="cpu_us_per_sample", harness="sampler")]
    out = [{**r, "role": rows.NULL} if r["target"] == null else r for r in out]
    out.append({**latency(c, (rng.normal(5.0, 0.8, 10)).tolist(), path="sampler", op="perf",
                          target=target, cpu=None, target_cpu=None,
                          metric="cpu_us_per_sample", harness="sampler"),
                "role": rows.ABOVE_NULL})
    out.append(latency(c, rng.normal(2.0, 6.0, 12).tolist(), path="sampler", op="perf",
                       target="stress-ng ..., fixed work pinned to CPU 1: wall time", cpu=1,
                       target_cpu=None, metric="overhead_pct", harness="hyperfine"))
    return out

# ---- interleaved rounds (ci/ab) -------------------------------------------------------

# How much a drifting VM moves a whole run, round by round (the A/A runs here
# moved x0.74 to x1.29), and the common-mode factor of each side's run.
ROUND_DRIFT = [(1.00, 1.02), (1.25, 1.21), (0.80, 0.83), (1.05, 1.29), (0.95, 0.90),
               (1.10, 1.12)]

def rounds_of(tmp_path, slow_row=None, factor=1.25, drift=ROUND_DRIFT):
    """Six interleaved rounds of multi_path_run: both sides drift together
    within a round and apart between rounds; `slow_row` (an index of
    multi_path_run) is `factor` times slower in every current round."""
    baselines, currents = [], []
    for i, (drift_b, drift_c) in enumerate(drift):
        b_rows = multi_path_run(common(f"20261122T00000{i}Z-00000b"))
        c_rows = multi_path_run(common(f"20261122T00000{i}Z-00000c"))
        rng = np.random.default_rng(100 + i)
        c_rows = [scaled(r, drift_c * rng.lognormal(0, 0.02) *
                         (factor if k == slow_row else 1.0)) for k, r in enumerate(c_rows)]
        b_rows = [scaled(r, drift_b) for r in b_rows]
        baselines.append(write_run(tmp_path / f"b{i}", b_rows))
        currents.append(write_run(tmp_path / f"c{i}", c_rows))
    return baselines, currents
