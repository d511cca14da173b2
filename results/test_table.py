import pytest

from results.table import cpus, sig3, shorten


@pytest.mark.parametrize("x, text", [
    (0.24014, "0.240"), (17.26, "17.3"), (560.4, "560"), (1234.0, "1230"),
    (0.000123456, "0.000123"), (0.0, "0"), (-2.5, "-2.50"), (999.6, "1000"),
])
def test_sig3(x, text):
    assert sig3(x) == text


def test_shorten_keeps_the_end():
    target = "/sys/class/powercap/intel-rapl:0/intel-rapl:0:1/energy_uj"
    short = shorten(target, 32)
    assert len(short) <= 32 and short.startswith("…") and target.endswith(short[1:])
    # issue 17: the cut falls at a boundary, never inside a word
    assert short == "…/intel-rapl:0:1/energy_uj"
    assert shorten("x" * 40, 32) == "…" + "x" * 31  # no boundary: cut at the width
    assert shorten("0x611") == "0x611"
    assert shorten(None) == "—"


def test_shorten_keeps_what_a_sampler_row_is():
    """The sampler's rows above its null loop share its target but for the
    prefix: a shortened target must not lose it."""
    lo = "/sys/class/net/lo/statistics/rx_bytes @ 1000 Hz"
    assert shorten(lo, 32) == "…/statistics/rx_bytes @ 1000 Hz"
    above = shorten("above null: " + lo, 32)
    assert len(above) == 32 and above == "above null: …/rx_bytes @ 1000 Hz"
    null = shorten("null: bare bpf_timer program @ 1000 Hz", 32)
    assert len(null) <= 32 and null == "null: …program @ 1000 Hz"
    assert shorten("above null: msr/tsc/ @ 1000 Hz", 32) == "above null: msr/tsc/ @ 1000 Hz"


def test_cpus_is_the_one_cpu_to_target_notation():
    assert cpus({"cpu": 0, "target_cpu": 0}) == "0→0"
    assert cpus({"cpu": 1, "target_cpu": 0}) == "1→0"
    assert cpus({"cpu": 0, "target_cpu": None}) == "0"
    assert cpus({"cpu": None, "target_cpu": 0}) == "?→0"
    assert cpus({"cpu": 1, "target_cpu": 0, "target_state": "ticking"}) == "1→0 ticking"
    assert cpus({"cpu": None, "target_cpu": None}) == "—"
    assert cpus({"cpu": None, "target_cpu": None}, none=None) is None  # the gate's labels
