"""Tests of the gate's statistics and decisions (ci/gate_stats.py)."""

import pytest

from ci import gate_stats
from results import rows
from results import significance as sig
from results.test_significance import SLEEP_DRUG_1, SLEEP_DRUG_2

# the shipped defaults' values (ci/gate.toml), here as the tests' own input
RULE = gate_stats.Rule(alpha=0.01, threshold_pct=10.0, min_samples=10)


def test_every_metric_has_a_worse_direction():
    assert gate_stats.WORSE_WHEN.keys() == rows.METRIC_UNITS.keys()
    assert gate_stats.WORSE_WHEN["rate_hz"] == gate_stats.LOWER
    assert gate_stats.WORSE_WHEN["latency"] == gate_stats.HIGHER


def test_change_pct():
    assert gate_stats.change_pct(200.0, 230.0) == pytest.approx(15.0)
    assert gate_stats.change_pct(200.0, 170.0) == pytest.approx(-15.0)
    assert gate_stats.change_pct(-2.0, -1.0) == pytest.approx(50.0)  # relative to |baseline|
    assert gate_stats.change_pct(0.0, 0.0) == 0.0
    assert gate_stats.change_pct(0.0, 3.0) == float("inf")  # missed_ticks: 0 -> 3


def test_worse_pct_follows_the_metric():
    assert gate_stats.worse_pct("latency", 20.0) == 20.0
    assert gate_stats.worse_pct("rate_hz", 20.0) == -20.0   # a higher rate is better
    assert gate_stats.worse_pct("rate_hz", -20.0) == 20.0


def comparison(change, p, n=20):
    return gate_stats.Comparison(n_baseline=n, n_current=n, median_baseline=100.0,
                           median_current=100.0 + change, change_pct=change, p_value=p,
                           cliffs_delta=0.0)


@pytest.mark.parametrize("change, p, metric, expected", [
    (30.0, 0.001, "latency", gate_stats.REGRESSION),     # significant and beyond 10%
    (-30.0, 0.001, "latency", gate_stats.IMPROVEMENT),
    (30.0, 0.001, "rate_hz", gate_stats.IMPROVEMENT),    # a higher rate is better
    (-30.0, 0.001, "rate_hz", gate_stats.REGRESSION),
    (3.0, 1e-9, "latency", gate_stats.UNCHANGED),        # significant, within the threshold
    (15.0, 0.2, "latency", gate_stats.UNCHANGED),        # beyond it, not significant
    (10.0, 0.001, "latency", gate_stats.UNCHANGED),      # exactly the threshold is not beyond
    (15.0, 0.01, "latency", gate_stats.UNCHANGED),       # p must be below alpha
    (float("inf"), 0.001, "missed_ticks", gate_stats.REGRESSION),
])
def test_decide(change, p, metric, expected):
    assert gate_stats.decide(comparison(change, p), metric, RULE)[0] == expected


def test_decide_explains_unchanged_rows_and_counts_samples():
    rule = RULE
    assert gate_stats.decide(comparison(3.0, 1e-9), "latency", rule)[1] \
        == "significant but within ±10%"
    assert "not significant" in gate_stats.decide(comparison(15.0, 0.2), "latency", rule)[1]
    decision, why = gate_stats.decide(comparison(50.0, 1e-9, n=9), "latency", rule)
    assert decision == gate_stats.TOO_FEW_SAMPLES and "9 vs 9 samples" in why
    assert gate_stats.decide(comparison(50.0, 1e-9, n=9), "latency",
                       gate_stats.Rule(0.01, 10.0, 5))[0] == gate_stats.REGRESSION


def test_threshold_abs_judges_a_value_near_zero_in_its_unit():
    """An overhead of 0.30 -> 0.45 points is +50 %, but 0.15 points: noise."""
    rule = gate_stats.Rule(0.01, 0.0, 10, threshold_abs=3.0)
    small = gate_stats.Comparison(20, 20, 0.30, 0.45, 50.0, 1e-6, 1.0)
    large = gate_stats.Comparison(20, 20, 0.30, 4.30, 1333.0, 1e-6, 1.0)
    assert gate_stats.decide(small, "overhead_pct", rule) == (
        gate_stats.UNCHANGED, "significant but within ±0% or ±3")
    assert gate_stats.decide(large, "overhead_pct", rule)[0] == gate_stats.REGRESSION


def test_min_effect_asks_for_a_large_cliffs_delta():
    rule = gate_stats.Rule(0.01, 10.0, 10, min_effect=0.474)
    weak = gate_stats.Comparison(500, 500, 3.0, 3.6, 20.0, 1e-6, 0.30)
    decision, why = gate_stats.decide(weak, "jitter_us", rule)
    assert decision == gate_stats.UNCHANGED and "|δ| = 0.30 < min_effect 0.474" in why
    strong = gate_stats.Comparison(10, 10, 3.0, 3.6, 20.0, 1e-4, 0.9)
    assert gate_stats.decide(strong, "jitter_us", rule)[0] == gate_stats.REGRESSION


def test_every_metric_says_what_its_samples_are():
    assert gate_stats.SAMPLES_ARE.keys() == gate_stats.WORSE_WHEN.keys()
    assert set(gate_stats.METRIC_RULES) <= set(gate_stats.SAMPLES_ARE)
    # windows of one run must carry a size and an effect size on top of p
    for metric, kind in gate_stats.SAMPLES_ARE.items():
        if kind == gate_stats.WINDOWS and metric != "rate_hz":
            assert gate_stats.METRIC_RULES[metric]["min_effect"] >= 0.474


# ---- interleaved rounds: the paired t test ----------------------------------------

def test_rounds_judged_in_the_unit_reproduce_the_textbook_sleep_example():
    # overhead_pct rows are judged in their unit: the CI is of the difference;
    # R's t.test(extra ~ group, data = sleep, paired = TRUE) gives the 95 percent
    # confidence interval of group 1 - group 2: -2.4598858 -0.7001142
    c = gate_stats.compare_rounds(SLEEP_DRUG_1, SLEEP_DRUG_2, "overhead_pct",
                                  gate_stats.Rule(0.05, 0.0, 10))
    assert c.rounds == 10 and not c.by_ratio
    assert c.p_value == pytest.approx(0.002833, abs=5e-7)
    assert c.ci == pytest.approx((0.7001142, 2.4598858), abs=1e-6)


def test_rounds_of_a_latency_row_are_judged_on_the_ratio():
    """Each round pairs a baseline run with the current run beside it: a
    row that is 20 % slower in every round, while the rounds themselves move
    by up to 2x (a drifting VM), is significant and its change is +20 %."""
    drift = [1.0, 1.3, 0.8, 2.0, 1.1, 0.9]
    noise = [1.01, 0.99, 1.02, 0.98, 1.0, 1.005]
    base = [500 * d for d in drift]
    cur = [500 * d * 1.2 * e for d, e in zip(drift, noise)]
    c = gate_stats.compare_rounds(base, cur, "latency", RULE)
    assert c.by_ratio and c.rounds == 6
    assert c.change_pct == pytest.approx(20.0, abs=0.5)
    assert c.ci[0] > 15.0 and c.ci[1] < 25.0
    assert gate_stats.decide(c, "latency", RULE) == (gate_stats.REGRESSION, "")
    # the same runs not paired (one sample each side, Mann-Whitney) see nothing
    assert sig.mann_whitney(cur, base).p > 0.05


def test_rounds_below_the_minimum_are_not_compared():
    c = gate_stats.compare_rounds([1.0, 1.0], [2.0, 2.0], "latency", RULE)
    decision, why = gate_stats.decide(c, "latency", RULE)
    assert decision == gate_stats.TOO_FEW_SAMPLES
    assert why == f"2 paired rounds, fewer than {gate_stats.MIN_ROUNDS}"


def test_rounds_that_scatter_beyond_the_change_leave_the_row_unchanged():
    """One slow round of ten (a host hiccup) moves the geometric mean ratio
    beyond 10 % but not beyond the rounds' own spread."""
    base = [100.0] * 10
    cur = [100.0, 101.0, 99.0, 100.0, 300.0, 100.0, 99.0, 101.0, 100.0, 100.0]
    c = gate_stats.compare_rounds(base, cur, "latency", RULE)
    assert c.change_pct > 10.0
    decision, why = gate_stats.decide(c, "latency", RULE)
    assert decision == gate_stats.UNCHANGED
    assert why == "beyond ±10% but not significant (p ≥ 0.01)"


def test_uneven_rounds_are_an_error():
    with pytest.raises(ValueError):
        gate_stats.compare_rounds([1.0, 2.0, 3.0], [1.0, 2.0], "latency", RULE)
