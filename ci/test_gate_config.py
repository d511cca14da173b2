"""Tests of the gate's settings and row ids (ci/gate_config.py)."""

import dataclasses

import pytest

from ci import gate_config, gate_report, gate_stats
from ci.conftest import common, latency


def test_row_id_and_allow_patterns():
    c = common()
    cross = latency(c, [1.0], path="msr-dev", op="pread", target="0x611", cpu=1, target_cpu=0)
    assert gate_config.row_id(cross) == "msr-dev/pread/0x611/1>0/latency/gbench"
    nop = latency(c, [1.0], path="uinsn", op="nop", target=None, cpu=0, target_cpu=None)
    assert gate_config.row_id(nop) == "uinsn/nop/-/0>-/latency/gbench"
    assert gate_report.label(cross) == "msr-dev pread 0x611 1→0 latency (gbench)"
    assert gate_report.label(nop) == "uinsn nop 0 latency (gbench)"
    assert gate_config.is_allowed(gate_config.row_id(cross), ["kinsn/*", "msr-dev/*"])
    assert not gate_config.is_allowed(gate_config.row_id(cross), ["kinsn/*", "msr-dev/*/0>0/*"])
    assert gate_config.is_cross_cpu(cross) and not gate_config.is_cross_cpu(nop)
    # a target state (issue 34) is part of the id, and of what rows pair on
    busy = {**cross, "target_state": "busy"}
    assert gate_config.row_id(busy) == "msr-dev/pread/0x611/1>0:busy/latency/gbench"
    assert gate_report.label(busy) == "msr-dev pread 0x611 1→0 busy latency (gbench)"
    assert "target_state" in gate_config.KEY_FIELDS


def test_the_shipped_config_sets_the_defaults_of_every_other():
    shipped = gate_config.load_config()
    assert shipped.defaults.alpha == 0.01 and shipped.counter_died == "fail"
    assert "hostname" in shipped.identity and shipped.cross_machine is False
    assert shipped.cross_cpu  # this repository's choice, not a default
    other = gate_config.parse_config({"defaults": {"alpha": 0.05},
                                      "machine": {"cross_machine": True}}, "other.toml")
    assert other.defaults == dataclasses.replace(shipped.defaults, alpha=0.05)
    assert other.identity == shipped.identity and other.cross_machine
    assert other.counter_died == shipped.counter_died and not other.cross_cpu


def test_the_defaults_come_from_ci_gate_toml_alone(tmp_path, monkeypatch):
    shipped = tmp_path / "gate.toml"
    shipped.write_text('[defaults]\nalpha = 0.02\nthreshold_pct = 7\n'
                       '[machine]\nidentity = ["hostname"]\n[liveness]\ncounter_died = "warn"\n')
    monkeypatch.setattr(gate_config, "DEFAULT_CONFIG", shipped)
    with pytest.raises(gate_config.InputError, match="defaults.min_samples: missing"):
        gate_config.load_config()
    config = gate_config.parse_config({"defaults": {"min_samples": 4}}, "other.toml")
    assert config.defaults == gate_stats.Rule(0.02, 7, 4)
    assert config.identity == ("hostname",) and config.counter_died == "warn"


def test_parse_config_layers_settings_per_metric_path_cross_cpu_and_row():
    config = gate_config.parse_config({
        "defaults": {"alpha": 0.05, "threshold_pct": 5},
        "metrics": {"missed_ticks": {"threshold_pct": 50}},
        "paths": {"perf": {"threshold_pct": 20, "min_samples": 5}},
        "cross_cpu": {"threshold_pct": 30},
        "rows": {"perf/read/*": {"alpha": 0.001}, "perf/read/*/1>0/*": {"threshold_pct": 40}},
        "allow": {"missing": ["kinsn/*"]},
        "machine": {"identity": ["cpu_model_name"], "cross_machine": True},
    }, "test.toml")
    c = common()
    assert config.rule_for(latency(c, [1.0], path="uinsn", op="nop")) \
        == gate_stats.Rule(0.05, 5, 10)
    # missed_ticks: the built-in rule of the metric, then [metrics.missed_ticks]
    assert config.rule_for(latency(c, [1.0], path="sampler", op="tick", metric="missed_ticks")) \
        == gate_stats.Rule(0.05, 50, 10, threshold_abs=5.0, min_effect=0.474)
    assert config.rule_for(latency(c, [1.0], op="group-read")) == gate_stats.Rule(0.05, 20, 5)
    assert config.rule_for(latency(c, [1.0], op="group-read", cpu=1)) \
        == gate_stats.Rule(0.05, 30, 5)
    assert config.rule_for(latency(c, [1.0])) == gate_stats.Rule(0.001, 20, 5)
    assert config.rule_for(latency(c, [1.0], cpu=1)) == gate_stats.Rule(0.001, 40, 5)
    assert config.allow_missing == ("kinsn/*",)
    assert config.identity == ("cpu_model_name",) and config.cross_machine


@pytest.mark.parametrize("doc, message", [
    ({"default": {}}, "test.toml: default: unknown section"),
    ({"defaults": {"treshold_pct": 5}}, "test.toml: defaults.treshold_pct: unknown key "
                                        "(known: alpha, threshold_pct, min_samples, "
                                        "threshold_abs, min_effect)"),
    ({"metrics": {"jitter_us": {"threshold_abs": -1}}},
     "metrics.jitter_us.threshold_abs: must be a number ≥ 0 (in the row's unit)"),
    ({"metrics": {"jitter_us": {"min_effect": 1.5}}},
     "metrics.jitter_us.min_effect: must be a number between 0 and 1"),
    ({"defaults": {"alpha": 1.5}}, "test.toml: defaults.alpha: must be a number between 0 and 1"),
    ({"defaults": {"alpha": 0}}, "defaults.alpha: must be a number between 0 and 1"),
    ({"defaults": {"threshold_pct": -1}}, "defaults.threshold_pct: must be a number ≥ 0"),
    ({"defaults": {"min_samples": True}}, "defaults.min_samples: must be an integer ≥ 1"),
    ({"defaults": {"min_samples": 2.5}}, "defaults.min_samples: must be an integer ≥ 1"),
    ({"paths": {"rapl": {}}}, "test.toml: paths.rapl: unknown path (known: kinsn, uinsn"),
    ({"paths": {"perf": {"noise": 1}}}, "test.toml: paths.perf.noise: unknown key"),
    ({"paths": {"perf": 20}}, "test.toml: paths.perf: must be a table"),
    ({"metrics": {"time": {}}}, "test.toml: metrics.time: unknown metric"),
    ({"cross_cpu": {"threshold": 1}}, "test.toml: cross_cpu.threshold: unknown key"),
    ({"rows": {"perf/*": {"alpha": 2}}}, 'test.toml: rows."perf/*".alpha: must be a number'),
    ({"allow": {"missing": "kinsn/*"}}, "test.toml: allow.missing: must be a list"),
    ({"allow": {"unavailable": []}}, "test.toml: allow.unavailable: unknown key"),
    ({"machine": {"identity": ["cpu"]}},
     "test.toml: machine.identity: unknown machine field 'cpu'"),
    ({"machine": {"identity": []}}, "machine.identity: must be a non-empty list"),
    ({"machine": {"identity": ["mitigations"]}}, "unknown machine field 'mitigations'"),
    ({"machine": {"cross_machine": "yes"}}, "machine.cross_machine: must be true or false"),
    ({"liveness": {"counter_died": "ignore"}},
     "test.toml: liveness.counter_died: must be one of 'fail', 'warn'"),
    ({"liveness": {"frozen": "warn"}}, "test.toml: liveness.frozen: unknown key"),
])
def test_parse_config_rejects_with_file_and_key(doc, message):
    with pytest.raises(gate_config.InputError) as e:
        gate_config.parse_config(doc, "test.toml")
    assert message in str(e.value)


def test_a_config_that_is_not_toml_is_an_input_error(tmp_path):
    bad = tmp_path / "gate.toml"
    bad.write_text("[defaults]\nalpha = \n")
    with pytest.raises(gate_config.InputError, match=r"gate.toml: not valid TOML: .*line 2"):
        gate_config.load_config(bad)
    with pytest.raises(gate_config.InputError, match="no-such.toml: cannot read"):
        gate_config.load_config(tmp_path / "no-such.toml")
