"""The gate's second question (ci/gate_liveness.py): a counter that died
or came alive, a schema 1 baseline."""

from ci.conftest import common, latency, lognormal, pair, run_main, scaled, verdict_of

PSYS = "power/energy-psys/"
FROZEN_NOTE = f"{PSYS} on CPU 0: did not change in 100 ms (97 reads): a dead counter"


def with_verdict(row, liveness, note=None):
    return {**row, "liveness": liveness, "liveness_note": note}


def as_schema_1(row):
    return {**{k: v for k, v in row.items() if not k.startswith("liveness")},
            "schema_version": "1"}


def psys_rows(c, verdict, note=None):
    return [with_verdict(latency(c, lognormal(3, 8000, 0.03), target=PSYS), verdict, note),
            with_verdict(latency(c, lognormal(4, 8100, 0.03), target=PSYS, cpu=1), verdict, note),
            latency(c, lognormal(5, 0.3, 0.03), path="uinsn", op="nop", target=None)]


def test_a_counter_that_died_fails_the_gate_and_is_named(tmp_path, capsys, builtin):
    c = common()
    b, cur = pair(tmp_path, psys_rows(c, "live"), psys_rows(c, "frozen", FROZEN_NOTE))
    code, out, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 1
    assert "❌ fail — 0 regressions, 2 rows whose counter died" in out.splitlines()[0]
    assert "### ❌ Rows whose counter died (2)" in out
    assert f"| live | frozen | {FROZEN_NOTE} |" in out
    assert f"gate: counter died: perf read {PSYS} 0→0 latency (gbench): live → frozen" in err
    verdict = verdict_of(cur)
    assert verdict["verdict"] == "fail" and verdict["settings"]["counter_died"] == "fail"
    assert [(e["change"], e["baseline"], e["current"], e["fails"])
            for e in verdict["liveness_changes"]] == [("died", "live", "frozen", True)] * 2
    assert {r["decision"] for r in verdict["rows"]} == {"unchanged"}  # the latency did not move


def test_a_counter_that_died_can_be_a_warning(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text('[liveness]\ncounter_died = "warn"\n')
    c = common()
    b, cur = pair(tmp_path, psys_rows(c, "live"), psys_rows(c, "no-unit", "unit 'Watts'"))
    code, out, _ = run_main(capsys, b, cur, "--config", str(config))
    assert code == 0
    assert "✅ pass — 0 regressions, 2 rows whose counter died" in out.splitlines()[0]
    assert "⚠️ **Rows whose counter died** (a warning" in out
    assert not any(e["fails"] for e in verdict_of(cur)["liveness_changes"])


def test_a_counter_that_came_alive_is_reported_not_failed(tmp_path, capsys, builtin):
    c = common()
    b, cur = pair(tmp_path, psys_rows(c, "frozen", FROZEN_NOTE), psys_rows(c, "live"))
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0
    assert "### Counter verdicts that changed (2)" in out and "| frozen | live |" in out
    assert "died" not in out.splitlines()[0]


def test_a_schema_1_baseline_pairs_with_a_schema_2_run(tmp_path, capsys, builtin):
    """Last year's run against this month's: liveness is not part of the key."""
    c = common()
    base = [as_schema_1(r) for r in psys_rows(c, "live")]
    slower = [scaled(r, 1.3) for r in psys_rows(c, "frozen", FROZEN_NOTE)]
    b, cur = pair(tmp_path, base, slower)
    code, out, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 1, err  # the 30% regressions, not the verdict
    assert out.splitlines()[0].startswith("## raplbench gate: ❌ fail — 3 regressions, 0 improvements")
    assert "Liveness not compared for 3 row pairs: one side predates liveness probing" in out
    verdict = verdict_of(cur)
    assert verdict["liveness_changes"] == [] and verdict["liveness_not_compared"] == 3
    assert {r["decision"] for r in verdict["rows"]} == {"regression"}


def test_schema_1_runs_on_both_sides_gate_as_before(tmp_path, capsys, builtin):
    c = common()
    base = [as_schema_1(r) for r in psys_rows(c, "live")]
    b, cur = pair(tmp_path, base, base)
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0 and "3 unchanged" in out.splitlines()[0]
