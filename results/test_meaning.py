"""What a row means (results/meaning.py), and the role of rows older than
schema 3 (results/runfile.upgrade)."""

import json

from results import meaning, rows, runfile, schema

MACHINE = {field: None for field in schema.SCHEMA["$defs"]["machine"]["required"]}
COMMON = rows.common("r1", "2026-11-26T00:00:00Z", MACHINE)


def ok(samples, **kw):
    return rows.measured_row(COMMON, harness="sampler", path="sampler", op="perf",
                             target="msr/tsc/ @ 1000 Hz", cpu=0, target_cpu=0,
                             metric="cpu_us_per_sample", unit="us", samples=samples, **kw)


def test_a_ci_holding_zero_is_within_noise_and_one_excluding_it_is_not():
    noisy, clear = meaning.of(ok([-1.0, 2.0] * 5)), meaning.of(ok([1.0, 2.0] * 5))
    assert noisy.contains_zero is True and noisy.within_noise and noisy.not_resolved
    assert clear.contains_zero is False and not clear.within_noise and not clear.not_resolved


def test_a_row_without_a_ci_neither_holds_zero_nor_is_within_noise():
    gone = rows.not_ok_row(COMMON, harness="sampler", path="sampler", op="perf", target=None,
                           cpu=None, target_cpu=None, metric="rate_hz", unit="Hz", reason="no")
    for m in (meaning.of(gone), meaning.of(None)):
        assert m.contains_zero is None and not m.within_noise and not m.too_few and not m.ok


def test_fewer_than_six_samples_are_too_few_for_a_ci():
    assert meaning.of(ok([1.0, 2.0, 3.0, 4.0, 5.0])).too_few
    assert not meaning.of(ok([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])).too_few


def test_an_unresolved_row_says_why_and_a_resolved_one_does_not():
    res = {"target_half_width": 1.0, "half_width": 3.0, "resolved": False, "note": "QUICK run"}
    assert meaning.of(ok([1.0] * 6, resolution=res)).unresolved_note == "QUICK run"
    res = {**res, "note": None}
    assert meaning.of(ok([1.0] * 6, resolution=res)).unresolved_note == "not resolved at this n"
    assert meaning.of(ok([1.0] * 6, resolution={**res, "resolved": True})).unresolved_note is None


def test_the_role_is_the_rows_and_a_dead_counter_is_dead():
    row = ok([1.0] * 6, role=rows.ABOVE_NULL, liveness="frozen", liveness_note="x")
    m = meaning.of(row)
    assert m.above_null and not m.is_null and m.dead and m.verdict == "frozen"
    assert schema.validate_row(row) == []


def test_a_schema_3_row_needs_a_role_and_a_target_without_the_old_prefix():
    row = ok([1.0] * 6)
    assert schema.validate_row({**row, "target": "null: bare timerfd loop @ 1000 Hz"})
    assert schema.validate_row({k: v for k, v in row.items() if k != "role"})
    assert schema.validate_row({**row, "role": "sampler"})


def test_older_rows_get_their_role_from_the_target_prefix_when_loaded(tmp_path):
    v2 = {**ok([1.0] * 6), "schema_version": "2"}
    del v2["role"]
    got = [{**v2, "target": t} for t in ("null: bare timerfd loop @ 1000 Hz",
                                         "above null: msr/tsc/ @ 1000 Hz", "msr/tsc/ @ 1000 Hz")]
    got.append({**v2, "target": None})
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in got))
    loaded = runfile.load(path).rows
    assert [(r["role"], r["target"]) for r in loaded] == [
        ("null", "bare timerfd loop @ 1000 Hz"), ("above-null", "msr/tsc/ @ 1000 Hz"),
        ("measured", "msr/tsc/ @ 1000 Hz"), ("measured", None)]
    assert list(loaded[0]) == list(ok([1.0] * 6))  # the role where a schema 3 row has it
    assert runfile.upgrade(loaded[0]) is loaded[0]


def cost(metric, samples, role=rows.MEASURED, unit=None):
    return rows.measured_row(COMMON, harness="victim", path="perf", op="read",
                             target="msr/tsc/", cpu=0, target_cpu=1, metric=metric,
                             unit=unit or rows.METRIC_UNITS[metric], samples=samples, role=role)


def test_a_cost_that_cannot_be_negative_below_zero_is_baseline_drift():
    below = [-300.0, -250.0, -200.0] * 4
    for metric in ("stolen_ns_per_read", "overhead_pct", "wakeups_per_s", "busy_pct"):
        said = meaning.of(cost(metric, below))
        assert said.drift and said.not_resolved and not said.within_noise, metric
    # above 0, or a CI that holds 0: no drift
    assert not meaning.of(cost("stolen_ns_per_read", [200.0, 250.0] * 5)).drift
    assert not meaning.of(cost("stolen_ns_per_read", [-200.0, 250.0] * 5)).drift
    # a sampler's CPU per tick above its null loop is a cost; its own row is not a difference
    assert meaning.of(cost("cpu_us_per_sample", below, role=rows.ABOVE_NULL)).drift
    assert not meaning.of(cost("cpu_us_per_sample", below)).drift
    # fewer than 6 pairs: their min-max is no 95% CI, too few says it
    few = meaning.of(cost("stolen_ns_per_read", [-300.0, -250.0]))
    assert few.too_few and not few.drift
    # deep-idle residency falls under a sampler: below 0 is what it costs
    assert not meaning.of(cost("deep_idle_pct", below)).drift
    assert "not a finding" in meaning.DRIFT_NOTE and meaning.DRIFT in meaning.DRIFT_NOTE
