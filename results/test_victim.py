"""The victim step: raplbench-interfere's document becomes rows that say
what one read costs the victim CPU above its no-neighbour windows, and a
route or mechanism that could not run still gets a row with the reason."""

import json
import stat
import sys

import pytest

from results import rows, schema, victim

COMMON = rows.common("20261124T000000Z-abcdef", "2026-11-24T00:00:00Z",
                     {k: None for k in ("hostname", "cpu_vendor", "cpu_family", "cpu_model",
                                        "cpu_stepping", "cpu_model_name", "microcode", "kernel",
                                        "hypervisor", "smt", "governor", "boost", "tsc_khz",
                                        "mitigations")})


def window(stolen_ms, wall_ms=250.0, p99=5000, mx=20000, reads=None, **extra):
    w = {"wall_ns": int(wall_ms * 1e6), "stolen_ns": int(stolen_ms * 1e6), "count": 10,
         "p50_ns": 4000, "p99_ns": p99, "max_ns": mx, "not_kept": 0, **extra}
    if reads is not None:
        w["reads"] = reads
        w["missed"] = 0
    return w


def route_experiment(**over):
    e = {"neighbour": {"kind": "route", "path": "msr-dev", "op": "pread",
                       "target": "cpuid:0x0", "cpu": 1, "target_cpu": 0,
                       "stand_in": "/dev/cpu/0/msr missing: load the msr module",
                       "liveness": None, "liveness_note": None},
         "rate_hz": None, "victim_cpu": 0, "placement": "victim-is-target",
         "status": "ok", "reason": None,
         "pairs": [{"order": "off-on" if i % 2 == 0 else "on-off",
                    "off": window(2.5 + i * 0.1),
                    "on": window(125.0 + i, p99=6000 + i, mx=30000, reads=25000)}
                   for i in range(6)]}
    e.update(over)
    return e


def test_stolen_per_read_is_the_difference_of_stolen_shares_over_the_reads():
    # 50% of 1 s stolen with 100k reads, 1% without: 4.9 us per read
    pair = {"on": window(500.0, wall_ms=1000.0, reads=100_000), "off": window(10.0, wall_ms=1000.0)}
    assert victim.stolen_per_read(pair) == pytest.approx(4900.0)
    # the off window's length does not matter, only its share
    pair["off"] = window(5.0, wall_ms=500.0)
    assert victim.stolen_per_read(pair) == pytest.approx(4900.0)


def test_a_window_without_reads_gives_no_sample():
    assert victim.stolen_per_read({"on": window(1.0, reads=0), "off": window(1.0)}) is None


def test_a_route_experiment_gives_three_valid_rows():
    got = victim.document_rows(COMMON, {"experiments": [route_experiment()]})
    assert [r["metric"] for r in got] == [victim.STOLEN, victim.P99, victim.MAX]
    for r in got:
        assert schema.validate_row(r) == [], r
        assert (r["harness"], r["path"], r["op"], r["cpu"], r["target_cpu"]) == (
            "victim", "msr-dev", "pread", 1, 0)
        assert r["target"] == "cpuid:0x0 @ flat out; victim CPU 0"
        assert r["stand_in"].startswith("/dev/cpu/0/msr missing")
        assert r["parameters"]["placement"] == "victim-is-target"
        assert r["parameters"]["reads_per_s"] == pytest.approx(100_000)
    stolen, p99, _ = got
    assert stolen["n"] == 6
    assert stolen["median"] == pytest.approx((122.5 + 0.9 * 2.5) * 1e6 / 25000)  # pairs: 122.5 + 0.9 i ms
    assert stolen["parameters"]["baseline_stolen_ns_per_s"] == pytest.approx(2.75e6 / 0.25,
                                                                          rel=0.01)
    assert "baseline_median" not in stolen["parameters"]  # not a per-read figure
    assert p99["samples"] == [6000 + i for i in range(6)]
    assert p99["parameters"]["baseline_median"] == 5000


def test_a_rate_shows_in_the_target():
    got = victim.document_rows(COMMON, {"experiments": [route_experiment(rate_hz=1000)]})
    assert got[0]["target"] == "cpuid:0x0 @ 1000 Hz; victim CPU 0"


def test_an_experiment_that_could_not_run_is_one_row_with_its_reason():
    e = route_experiment(status="unavailable", reason="only one CPU allowed", pairs=[])
    (row,) = victim.document_rows(COMMON, {"experiments": [e]})
    assert (row["status"], row["reason"], row["metric"]) == (
        "unavailable", "only one CPU allowed", victim.STOLEN)
    assert schema.validate_row(row) == []


def test_an_experiment_whose_neighbour_never_read_is_an_error():
    e = route_experiment()
    for p in e["pairs"]:
        p["on"]["reads"] = 0
    (row,) = victim.document_rows(COMMON, {"experiments": [e]})
    assert row["status"] == "error" and "no read" in row["reason"]


def test_a_sampler_experiment_takes_the_sampler_rows_target():
    sampler_rows = [
        dict(harness="sampler", op="perf", metric="rate_hz", status="ok",
             target="bare timerfd loop @ 1000 Hz", role="null", cpu=0, target_cpu=None,
             stand_in=None),
        dict(harness="sampler", op="perf", metric="rate_hz", status="ok",
             target="msr/tsc/ @ 1000 Hz", role="measured", cpu=0, target_cpu=0,
             stand_in="no power PMU"),
        dict(harness="sampler", op="perf", metric="rate_hz", status="ok",
             target="msr/tsc/ @ 1000 Hz", role="above-null", cpu=0, target_cpu=0, stand_in="x"),
    ]
    known = victim.sampler_targets(sampler_rows)
    assert known["perf"] == victim.SamplerTarget("msr/tsc/", 0, 0, "no power PMU")
    e = route_experiment(neighbour={"kind": "sampler", "mechanism": "perf", "cpu": 0},
                         rate_hz=1000, victim_cpu=1, placement="victim-elsewhere")
    got = victim.document_rows(COMMON, {"experiments": [e]}, known)
    assert {(r["path"], r["op"], r["target"], r["cpu"], r["target_cpu"], r["stand_in"])
            for r in got} == {("sampler", "perf", "msr/tsc/ @ 1000 Hz; victim CPU 1", 0, 0,
                               "no power PMU")}
    assert all(schema.validate_row(r) == [] for r in got)


def test_a_malformed_document_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not a raplbench-interfere document"):
        victim.load(bad)
    bad.write_text(json.dumps({"tool": "raplbench-interfere"}))
    with pytest.raises(ValueError, match="no 'experiments' list"):
        victim.load(bad)


def test_an_unknown_neighbour_kind_is_refused():
    with pytest.raises(ValueError, match="unknown neighbour kind"):
        victim.document_rows(COMMON, {"experiments": [route_experiment(neighbour={"kind": "x"})]})


def test_without_the_binary_every_route_path_gets_an_error_row(tmp_path, monkeypatch):
    monkeypatch.setattr(victim, "BINARY", tmp_path / "missing")
    got = victim.run_routes(COMMON, tmp_path, quick=True)
    assert {r["path"] for r in got} == set(victim.ROUTE_PATHS)
    assert all(r["status"] == "error" and "not built" in r["reason"] for r in got)
    assert all(schema.validate_row(r) == [] for r in got)


def test_a_failing_tool_is_an_error_quoting_its_last_line(tmp_path, monkeypatch):
    tool = tmp_path / "raplbench-interfere"
    tool.write_text(f"#!{sys.executable}\nimport sys\nprint('raplbench-interfere: no CPU', "
                    "file=sys.stderr)\nsys.exit(2)\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(victim, "BINARY", tool)
    (row, *_) = victim.run_routes(COMMON, tmp_path, quick=True)
    assert row["status"] == "error"
    assert "status 2: raplbench-interfere: no CPU" in row["reason"]


def test_the_quick_settings_are_shorter_than_the_full_ones():
    q, f = victim.QUICK, victim.FULL
    assert q.pairs * q.window_s * len(q.rates) < f.pairs * f.window_s * len(f.rates)
    assert set(q.rates) <= set(f.rates)
