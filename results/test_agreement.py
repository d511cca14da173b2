from results.agreement import likely_cause, pairs, report


def row(harness, median, cpu=0, target_cpu=0, op="read", path="perf", stand_in=None,
        ci=None, status="ok"):
    low, high = ci or (median * 0.99, median * 1.01)
    return {"harness": harness, "path": path, "op": op, "target": "msr/tsc/", "cpu": cpu,
            "target_cpu": target_cpu, "metric": "latency", "status": status,
            "median": median, "ci95_low": low, "ci95_high": high, "stand_in": stand_in}


def test_pairs_only_what_both_measured():
    rows = [row("gbench", 200), row("criterion", 210), row("gbench", 300, op="group-read"),
            row("criterion", 5, path="ebpf-mmap", op="load"),
            row("criterion", 9, op="group-read", status="unavailable")]
    assert [(g["op"], c["median"]) for g, c in pairs(rows)] == [("read", 210)]


def test_agreement_within_25_percent_is_not_flagged():
    text = report([row("gbench", 200), row("criterion", 240)], "r1")
    assert "1.20" in text and "differ" not in text.split("\n", 4)[-1].split("pairs agree")[0]
    assert "1 of 1 pairs agree" in text


def test_disagreement_is_flagged_with_a_cause():
    text = report([row("gbench", 200), row("criterion", 300)])
    assert "**differ** [1]" in text
    assert "0 of 1 pairs agree" in text
    assert "1. same path, different cost" in text


def test_likely_causes():
    assert "cross-CPU" in likely_cause(row("gbench", 1000, cpu=1), row("criterion", 5000, cpu=1))
    assert "stand-ins" in likely_cause(row("gbench", 10, stand_in="a"), row("criterion", 20, stand_in="b"))
    assert "overlap" in likely_cause(row("gbench", 100, ci=(80, 150)), row("criterion", 140, ci=(120, 160)))
    assert "overhead" in likely_cause(row("gbench", 2), row("criterion", 20))


def test_no_pairs_says_so():
    assert "No path was measured by both" in report([row("gbench", 1)])


NOTE = "power/energy-psys/ on CPU 0: did not change in 100 ms (97 reads): a dead counter"


def test_frozen_pairs_are_marked_and_their_notes_listed():
    g, c = row("gbench", 8189), row("criterion", 8310)
    for r in (g, c):
        r.update(target="power/energy-psys/", liveness="frozen", liveness_note=NOTE)
    live_g, live_c = row("gbench", 400, op="group-read"), row("criterion", 410, op="group-read")
    for r in (live_g, live_c):
        r.update(liveness="live", liveness_note=None)
    text = report([g, c, live_g, live_c])
    frozen_line = next(line for line in text.splitlines() if "energy-psys" in line)
    assert frozen_line.endswith("| **frozen counter** [a] |")
    assert "8.19 µs" in frozen_line  # the latency stands
    assert text.count(f"- [a] frozen counter: {NOTE}") == 1
    assert "2 of 2 pairs agree" in text


def test_schema_1_pairs_say_once_that_the_verdict_is_unknown():
    text = report([row("gbench", 200), row("criterion", 210), row("gbench", 300, op="group-read"),
                   row("criterion", 310, op="group-read")])
    assert text.count("verdict unknown") == 1
    assert "counter**" not in text
