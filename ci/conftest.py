"""Shared helpers of the gate's tests: synthetic runs written with
results/rows.py from a seeded numpy RNG, so that each scenario has a known
answer. Nothing here reads the local results/ directory.
"""

from pathlib import Path

import numpy as np
import pytest

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
