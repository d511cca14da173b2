import math

import pytest
from scipy.stats import binom

from results.stats import SUMMARY_KEYS, median_ci_ranks, summarize


def test_empty_samples_give_n_zero_and_nones():
    s = summarize([])
    assert list(s) == list(SUMMARY_KEYS)
    assert s["n"] == 0
    assert all(s[k] is None for k in SUMMARY_KEYS if k != "n")


def test_single_sample():
    s = summarize([7])
    assert s["n"] == 1
    assert s["stddev"] == 0.0
    assert s["mean"] == s["median"] == s["min"] == s["max"] == 7.0
    assert s["ci95_low"] == s["ci95_high"] == 7.0


def test_basic_statistics():
    s = summarize([4, 1, 3, 2, 5])  # unsorted on purpose
    assert s["n"] == 5
    assert s["mean"] == 3.0
    assert s["median"] == 3.0
    assert s["stddev"] == pytest.approx(math.sqrt(2.5))  # ddof=1
    assert (s["min"], s["max"]) == (1.0, 5.0)
    assert s["p05"] == pytest.approx(1.2)  # linear: 1 + 0.05 * 4
    assert s["p95"] == pytest.approx(4.8)


def test_values_are_plain_python_numbers():
    s = summarize([1.5, 2.5, 3.5])
    assert type(s["n"]) is int
    assert all(type(s[k]) is float for k in SUMMARY_KEYS if k != "n")


def test_ci_for_n_10_is_second_and_ninth_order_statistic():
    assert median_ci_ranks(10) == (2, 9)
    s = summarize([10, 90, 20, 80, 30, 70, 40, 60, 50, 100])
    assert (s["ci95_low"], s["ci95_high"]) == (20.0, 90.0)


@pytest.mark.parametrize("n, ranks", [
    (6, (1, 6)), (8, (1, 8)), (9, (2, 8)), (10, (2, 9)), (20, (6, 15)), (100, (40, 61)),
])
def test_ci_ranks_known_values(n, ranks):
    # Table values of the binomial median interval (e.g. Conover, Practical
    # Nonparametric Statistics): n = 20 -> x_(6)..x_(15), n = 100 -> x_(40)..x_(61).
    assert median_ci_ranks(n) == ranks


@pytest.mark.parametrize("n", range(6, 60))
def test_ci_ranks_are_the_narrowest_with_95_percent_coverage(n):
    k, k2 = median_ci_ranks(n)
    assert k2 == n - k + 1

    def coverage(k):
        return 1 - 2 * binom.cdf(k - 1, n, 0.5)

    assert coverage(k) >= 0.95
    assert k + 1 > n // 2 or coverage(k + 1) < 0.95


@pytest.mark.parametrize("n", [1, 2, 5])
def test_too_few_samples_fall_back_to_min_and_max(n):
    assert median_ci_ranks(n) == (1, n)
    s = summarize(range(n))
    assert (s["ci95_low"], s["ci95_high"]) == (s["min"], s["max"])
