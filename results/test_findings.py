"""The findings (results/findings.py, issue 32): each sentence carries its
number and 95% CI, and one whose CIs do not support it says "not
resolved"."""

import json

from results import findings
from results.test_summary import measured

TIGHT = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]


def scaled(k):
    return [x * k for x in TIGHT]


def texts(found):
    return [f.text for f in found]


def test_the_cheapest_and_dearest_routes_are_stated_only_when_their_cis_separate():
    cheap = measured("ebpf-mmap", "load", scaled(0.03), target="power/energy-pkg/", target_cpu=0)
    mid = measured("perf", "read", scaled(30), target="power/energy-pkg/", target_cpu=0)
    dear = measured("msr-dev", "pread", scaled(31), target="0x611", target_cpu=0)
    found = findings.extremes([cheap, mid, dear, measured("uinsn", "nop", scaled(0.001))])
    assert found[0].resolved and found[0].text.startswith(
        "The cheapest route to a counter timed here: ebpf-mmap load of power/energy-pkg/ at "
        "3.00 ns (95% CI"), found[0].text
    # 3.0 µs and 3.1 µs: the CIs (from 8 samples) do not overlap
    assert found[1].resolved and "msr-dev pread of 0x611 at 3.10 µs" in found[1].text
    close = measured("msr-dev", "pread", scaled(30.05), target="0x611", target_cpu=0)
    (_, dearest) = findings.extremes([cheap, mid, close])
    assert not dearest.resolved and "not resolved" in dearest.text


def test_a_stand_in_or_a_dead_counter_is_named_and_never_a_finding():
    stand_in = measured("powercap", "pread", scaled(5), target="rx_bytes", target_cpu=None,
                        stand_in="a sysfs file stands in for energy_uj")
    frozen = measured("perf", "read", scaled(30), target="power/energy-psys/", target_cpu=0)
    frozen.update(liveness="frozen", liveness_note="did not change")
    (cheapest,) = findings.extremes([stand_in, frozen])  # two routes: one comparison
    assert not cheapest.resolved
    assert "powercap pread of rx_bytes [stand-in] at 500 ns" in cheapest.text
    assert "perf read of power/energy-psys/ [frozen counter] at" in cheapest.text
    assert cheapest.text.endswith("not a finding: powercap pread of rx_bytes is a stand-in; "
                                  "perf read of power/energy-psys/ reads a frozen counter.")
    said = texts(findings.caveats([stand_in, frozen]))
    assert "Stand-ins, not the real counter (their figures are the substitute's route): " \
           "powercap pread." in said
    assert "Dead counters (a route's cost, no energy): power/energy-psys/." in said


def test_the_other_cpu_cost_is_a_difference_with_its_ci():
    same = measured("msr-dev", "pread", scaled(20), target="0x611", target_cpu=0)
    other = measured("msr-dev", "pread", scaled(100), target="0x611", cpu=1, target_cpu=0)
    (found,) = findings.other_cpu_costs([same, other])
    assert found.resolved
    assert found.text.startswith("Reading msr-dev pread of 0x611 from another CPU than the "
                                 "counter's costs 8.00 µs more than from its own (gbench: "
                                 "10.0 µs against 2.00 µs; 95% CI of the difference "), found.text
    # the same cost, within noise: not resolved
    noisy = measured("msr-dev", "pread", [1000, 3000, 2000, 2500, 1500, 1800, 2200, 2600],
                     target="0x611", cpu=1, target_cpu=0)
    (found,) = findings.other_cpu_costs([same, noisy])
    assert not found.resolved and "not resolved (the CI of the difference holds 0)" in found.text


def test_target_states_are_compared_with_idle_and_say_which_use_meets_them():
    """Issue 34: a cross-CPU read whose target was held idle, ticking and
    busy: busy and ticking against idle, and the same-CPU cost against idle."""
    def state(k, name, ipi=True):
        return measured("perf", "read", scaled(k), target="msr/tsc/", cpu=1, target_cpu=0,
                        target_state=name, ipi=ipi)
    same = measured("perf", "read", scaled(3), target="msr/tsc/", target_cpu=0)
    got = [same, state(30, "idle"), state(31, "ticking"), state(10, "busy")]
    (other,) = findings.other_cpu_costs(got)
    assert "from another CPU than the counter's (its CPU idle) costs 2.70 µs more" in other.text
    ticking, busy = findings.target_state_costs(got)
    assert busy.resolved and busy.text.startswith(
        "Reading perf read of msr/tsc/ from another CPU while the counter's CPU is busy rather "
        "than idle (the read runs there, through an IPI; busy is what a sampler reading the CPU "
        "a workload runs on meets) costs 2.00 µs less (gbench: 1.00 µs against 3.00 µs"), busy.text
    assert ticking.resolved and "is ticking rather than idle" in ticking.text
    # a stand-in: the same words, then why it is not a finding (never "costs -2.00 µs")
    stood = [{**r, "stand_in": "msr/tsc/ for energy-pkg"} for r in got]
    busy_stood = findings.target_state_costs(stood)[1]
    assert not busy_stood.resolved and " costs 2.00 µs less (gbench: " in busy_stood.text
    assert busy_stood.text.endswith("not a finding: perf read of msr/tsc/ is a stand-in.")
    assert "costs 100 ns more" in ticking.text
    # a route that needs no IPI says so; within noise it is not resolved
    no_ipi = [state(30, "idle", ipi=False),
              measured("perf", "read", [2900, 3100, 3050, 2950, 3000, 3020, 2980, 3010],
                       target="msr/tsc/", cpu=1, target_cpu=0, target_state="busy", ipi=False)]
    (busy,) = findings.target_state_costs(no_ipi)
    assert "the read needs no IPI there, so the state should change nothing" in busy.text
    assert not busy.resolved and "not resolved" in busy.text
    # never idle (the eBPF rows: their BPF program ticks there): busy against ticking
    ebpf = [state(30, "ticking", ipi=False), state(10, "busy", ipi=False)]
    (busy,) = findings.target_state_costs(ebpf)
    assert "is busy rather than ticking (the read needs no IPI there" in busy.text, busy.text
    # no state set (a run before issue 34): no state finding, the cost as before
    assert findings.target_state_costs([same, measured("perf", "read", scaled(30), cpu=1,
                                                       target="msr/tsc/", target_cpu=0)]) == []


def test_a_route_timed_by_both_harnesses_is_said_once():
    rows_ = [measured("perf", "read", scaled(3), target="t", target_cpu=0, harness=h, cpu=c)
             for h in ("gbench", "criterion") for c in (0, 1)]
    (found,) = findings.other_cpu_costs(rows_)
    assert "(gbench:" in found.text


def overhead(mechanism, pct, spread):
    row = measured("sampler", mechanism, [pct + d for d in spread], cpu=1,
                   target="stress-ng, fixed work pinned to CPU 1: wall time",
                   harness="hyperfine", metric="overhead_pct")
    row["parameters"] = {"placement": "same CPU"}
    return row


def stolen(mechanism, ns, spread, placement="victim-is-target"):
    row = measured("sampler", mechanism, [ns + d for d in spread], cpu=0,
                   target="msr/tsc/ @ 1000 Hz; victim CPU 0", harness="victim",
                   metric="stolen_ns_per_read")
    row["parameters"] = {"placement": placement}
    return row


def test_the_sampler_whose_ticks_take_least_from_their_cpu():
    """Issue 35: perf-ring's CPU per tick is in no thread's schedstat; the
    victim step's time stolen on its own CPU compares it with the others.
    Another CPU's rows and the routes' rows are not compared."""
    spread = [-300, 100, 0, 200, -100, 50, -50, 150]
    route = stolen("perf-ring", 10, spread)
    route["path"] = "msr-dev"
    rows_ = [stolen("ebpf", 24_500, spread), stolen("perf-ring", 16_000, spread),
             stolen("perf", 1_000, spread, placement="victim-elsewhere"), route]
    (found,) = findings.least_stolen_sampler(rows_)
    assert found.resolved and found.text.startswith(
        "The sampler mechanism whose 1 kHz ticks take least time from a thread on their CPU: "
        "perf-ring 16.0 µs"), found.text
    assert "against ebpf 24.5 µs" in found.text and found.text.endswith("per tick.")
    assert findings.least_stolen_sampler(rows_[1:]) == []  # one mechanism: nothing to compare


def test_the_cheapest_sampler_at_1_khz():
    spread = [-0.2, 0.1, 0.0, 0.2, -0.1, 0.05, -0.05, 0.15]
    (found,) = findings.cheapest_sampler([overhead("perf", 4.0, spread),
                                          overhead("ebpf", 1.0, spread)])
    assert found.resolved and found.text.startswith(
        "The sampler mechanism that slows a workload on its CPU least at 1 kHz: ebpf 1.02 %"), \
        found.text
    wide = [-9, 5, 0, 8, -4, 3, -6, 7]
    (found,) = findings.cheapest_sampler([overhead("perf", 4.0, wide),
                                          overhead("ebpf", 1.0, wide)])
    assert not found.resolved and ": not resolved, ebpf" in found.text


def test_a_slowdown_below_zero_is_baseline_drift_counted_and_never_the_cheapest():
    """Issue 33: a sampler cannot speed a workload up; an overhead whose CI
    lies below 0 is the bare runs moving, named and counted, never a finding."""
    spread = [-0.2, 0.1, 0.0, 0.2, -0.1, 0.05, -0.05, 0.15]
    rows_ = [overhead("perf", 4.0, spread), overhead("ebpf", -1.0, spread)]
    (found,) = findings.cheapest_sampler(rows_)
    assert not found.resolved and ": not resolved, ebpf -0.975 %" in found.text, found.text
    assert found.text.endswith("or is baseline drift, not a saving).")
    (drift,) = [f for f in findings.caveats(rows_) if "rows are baseline drift" in f.text]
    assert not drift.resolved
    assert drift.text.startswith("1 rows are baseline drift, not a saving: a cost that cannot "
                                 "be negative"), drift.text
    assert "hyperfine sampler ebpf overhead_pct" in drift.text


def test_too_few_samples_state_no_comparison_as_a_finding():
    """Fewer than 6 samples: the CI is the min–max, and nothing is resolved."""
    few = [100.0, 101.0, 99.0]
    rows_ = [measured("perf", "read", few, target="t", target_cpu=0),
             measured("perf", "read", [x * 5 for x in few], target="t", cpu=1, target_cpu=0),
             measured("msr-dev", "pread", [x * 9 for x in few], target="0x611", target_cpu=0)]
    found = findings.of(rows_)
    assert found and not any(f.resolved for f in found)
    assert all("not resolved" in f.text for f in found if f.text.startswith(("The", "Reading")))


def test_the_fixture_runs_give_findings_and_no_exception():
    from plots.fixtures import AMD, INTEL, KVM_FROZEN, KVM_VICTIM  # noqa: PLC0415
    for run_dir in (INTEL, AMD, KVM_FROZEN, KVM_VICTIM):
        run_rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
        text = findings.format_findings(findings.of(run_rows))
        assert text.count("\n  - ") >= 2, text


def test_doubts_on_a_separated_comparison_make_it_no_finding():
    """Separate CIs are not enough: the harnesses differing on a row, a failed
    plausibility check on its route or an emulated CPU each make it no finding."""
    same = measured("perf", "read", scaled(6), target="power/energy-pkg/", target_cpu=0)
    other = measured("perf", "read", scaled(40), target="power/energy-pkg/", cpu=1,
                     target_cpu=0)
    (found,) = findings.other_cpu_costs([same, other])
    # a package-scoped RAPL event read from another CPU should cost no IPI
    assert not found.resolved and "a plausibility check failed on perf read" in found.text
    cheap = measured("ebpf-mmap", "load", scaled(0.03), target="power/energy-pkg/", target_cpu=0)
    slow = measured("ebpf-lookup", "lookup", scaled(5), target="power/energy-pkg/", target_cpu=0)
    twice = measured("ebpf-mmap", "load", scaled(0.06), target="power/energy-pkg/", target_cpu=0,
                     harness="criterion")
    (found,) = findings.extremes([cheap, slow, twice])
    assert not found.resolved and "gbench and criterion differ on ebpf-mmap load" in found.text
    emulated = [dict(r, machine={"hypervisor": "qemu-tcg"}) for r in (cheap, slow)]
    (found,) = findings.extremes(emulated)
    assert not found.resolved and found.text.endswith("the CPU is emulated (QEMU's timings).")
    (found,) = findings.extremes([cheap, slow])
    assert found.resolved


def test_instructions_are_not_routes():
    rows_ = [measured("kinsn", "rdmsr:0x10", scaled(0.2), target="0x10", harness="kbench"),
             measured("uinsn", "rdtsc", scaled(0.2), target="rdtsc"),
             measured("perf", "read", scaled(6), target="power/energy-pkg/", target_cpu=0),
             measured("msr-dev", "pread", scaled(20), target="0x611", target_cpu=0)]
    (found,) = findings.extremes(rows_)
    assert "kinsn" not in found.text and "uinsn" not in found.text
