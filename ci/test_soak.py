"""ci/soak: the checks on synthetic sampler output, and one short real run."""

import json

import pytest

from ci import soak
from results import sampler

pytestmark = pytest.mark.serial  # runs the sampler and times it (conftest.py)

HEADER = "time_ns,source,domain,raw,delta_j\n"


def write_csv(path, lines):
    path.write_text(HEADER + "".join(f"{line}\n" for line in lines))
    return path


def test_a_sampler_sum_that_matches_the_counter_across_a_wrap_is_exact(tmp_path):
    # range 0..1000, 0.5 J per count: steps 50, 71 (a wrap), 80 = 201 counts
    csv_path = write_csv(tmp_path / "a.csv", [
        "1,package-0,package,900,", "2,package-0,package,950,25",
        "3,package-0,package,20,35.5", "4,package-0,package,100,40"])
    [check] = soak.counter_checks(csv_path, lambda source: 1000)
    assert (check.samples, check.raw_advance, check.wraps) == (4, 201, 1)
    assert check.counter_j == pytest.approx(100.5) and check.summed_j == pytest.approx(100.5)
    assert check.exact is True


def test_a_sampler_that_lost_a_wrap_is_not_exact(tmp_path):
    csv_path = write_csv(tmp_path / "a.csv", [
        "1,package-0,package,900,", "2,package-0,package,950,25",
        "3,package-0,package,20,0", "4,package-0,package,100,40"])
    [check] = soak.counter_checks(csv_path, lambda source: 1000)
    assert check.exact is False
    s = soak.Soak("msr", True, exit_status=0, rss_start_kib=100, rss_end_kib=100,
                  counters=[check])
    assert not s.passed


def test_a_stand_in_has_no_energy_to_check_and_does_not_fail(tmp_path):
    csv_path = write_csv(tmp_path / "a.csv", ["1,lo,rx_bytes,5,", "2,lo,rx_bytes,9,"])
    [check] = soak.counter_checks(csv_path, lambda source: 2**64 - 1)
    assert (check.raw_advance, check.exact) == (4, None)
    s = soak.Soak("powercap", True, exit_status=0, rss_start_kib=100, rss_end_kib=900,
                  counters=[check])
    assert s.passed
    s.rss_end_kib = 100 + soak.RSS_SLACK_KIB + 1  # memory grew: not flat
    assert not s.passed


def test_the_report_escapes_a_pipe_in_the_samplers_summary(tmp_path):
    """Issue 33: the sampler's summary quotes |interval − period|; its cell
    stays one cell of a five-column table."""
    import re
    csv_path = write_csv(tmp_path / "a.csv", ["1,lo,rx_bytes,5,", "2,lo,rx_bytes,9,"])
    [check] = soak.counter_checks(csv_path, lambda source: 2**64 - 1)
    s = soak.Soak("powercap", True, exit_status=0, rss_start_kib=100, rss_end_kib=100,
                  counters=[check], summary="jitter: |interval − period| median 3 µs")
    text = soak.report([s, soak.Soak("kernel", False, why_not="no module")], 1.0, False)
    line = next(x for x in text.splitlines() if x.startswith("| powercap | **pass**"))
    assert "\\|interval − period\\|" in line
    assert len(re.split(r"(?<!\\)\|", line)) - 2 == 5
    counter = next(x for x in text.splitlines() if x.startswith("| powercap | lo/"))
    assert len(re.split(r"(?<!\\)\|", counter)) - 2 == 7


def test_lost_samples_come_from_the_samplers_line():
    assert soak.lost_samples("raplbench-sample: 12 samples lost (dropped or failed reads, "
                             "above): exit status 3\n") == 12
    assert soak.lost_samples("raplbench-sample: perf (msr/tsc/): 300 samples in 0.30 s\n") == 0


def test_the_summary_is_the_samplers_closing_line_not_a_dead_counters():
    said = ("raplbench-sample: perf counter package-0/energy-psys is frozen: did not change\n"
            "raplbench-sample: sampling perf (power/energy-psys/) at 1000 Hz on CPU 0\n"
            "raplbench-sample: perf (power/energy-psys/): 300 samples in 0.30 s = 999.0 Hz\n")
    assert soak.summary_line(said, "perf") == ("perf (power/energy-psys/): 300 samples in 0.30 s "
                                               "= 999.0 Hz")
    assert soak.summary_line(said, "ebpf") == ""


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit) as e:
        soak.main(["--mechanisms", "powercap,nope"])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        soak.main(["--minutes", "0"])


def test_a_short_soak_of_one_mechanism(tmp_path):
    """A second of powercap (its stand-in needs no privilege), no stress-ng."""
    if not sampler.BINARY.exists():
        pytest.skip(f"{sampler.BINARY} not built")
    code = soak.main(["--minutes", "0.02", "--mechanisms", "powercap", "--no-stress",
                      "--out", str(tmp_path)])
    [result] = json.loads((tmp_path / "soak.json").read_text())
    if not result["ran"]:
        assert code == 2
        pytest.skip(f"powercap does not sample here: {result['why_not']}")
    assert code == 0 and result["passed"], result
    assert result["lost"] == 0 and result["counters"][0]["samples"] > 500
    assert "| powercap | **pass** (exit 0) | 0 |" in (tmp_path / "soak.md").read_text()


def test_the_kernel_mechanism_is_not_run_with_the_reason_the_module_cannot_load(
        tmp_path, monkeypatch):
    from results import ksample_module
    loads = []

    def cannot_load(log=None):
        loads.append(log)
        return ksample_module.NotLoaded("unavailable", "the ksample module cannot be loaded "
                                        "here: no module support")
    monkeypatch.setattr(ksample_module, "load", cannot_load)
    monkeypatch.setattr(ksample_module, "is_loaded", lambda: False)
    result = soak.soak_one("kernel", 1.0, tmp_path, stress=False)
    assert (result.ran, result.why_not) == (False, "the ksample module cannot be loaded here: "
                                                   "no module support")
    assert loads == [tmp_path / "ksample.log"]
