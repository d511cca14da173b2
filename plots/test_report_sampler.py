"""The report's sampler side on the stored fixture machines: the sampler
table per mechanism, the overhead table (older rows, and an overhead
experiment's with placements, CPU time and resolution), the sampler's CPU
above its null loop in its line, "within noise" where its CI holds 0, and
the sampler figure with the differences in panels of their own."""

import re

from plots import figures, report_tables
from plots.fixtures import AMD
from plots.runs import Run, load_runs
from plots.test_report import AMD_LABEL, md_table
from results import rows as rows_mod
from results import stats


def test_sampler_table_per_mechanism(built):
    out, _ = built
    header, body, notes = md_table((out / "sampler.md").read_text(), AMD_LABEL)
    col = {name: i for i, name in enumerate(header)}
    assert "overhead (95% CI)" not in col  # the overhead table has it
    msr = next(r for r in body if r[col["mechanism"]] == "msr")
    assert msr[col["rate"]] == "—"
    assert "msr module" in notes[re.search(r"\[(\d+)\]", msr[col["note"]]).group(1)]
    perf = next(r for r in body if r[col["mechanism"]] == "perf")
    assert perf[col["rate"]].endswith(" Hz") and perf[col["harness"]] == "sampler"


def test_overhead_table_of_the_older_rows(built):
    """The fixtures' overhead rows predate placements and CPU time: one line
    per mechanism, wall time only."""
    out, _ = built
    header, body, _ = md_table((out / "reference-overhead.md").read_text(), AMD_LABEL)
    col = {name: i for i, name in enumerate(header)}
    perf = next(r for r in body if r[col["mechanism"]] == "perf")
    assert "(" in perf[col["wall time (95% CI)"]] and perf[col["CPU time (95% CI)"]] == "—"
    assert perf[col["sampler on"]] == "—"


def test_overhead_table_shows_placement_cpu_time_resolution_and_the_cost_above_null(tmp_path):
    """An overhead experiment's rows (results/overhead.py) and the
    self-report's "above null" row: one line per mechanism and placement,
    wall and CPU time, the pairs, the sampler's CPU above null, and an
    unresolved row marked "not resolved" with its note."""
    from plots.report_tables_overhead import local_overhead_table
    from results import overhead
    run0 = load_runs([str(AMD)])[0]
    common = {k: run0.rows[0][k] for k in ("schema_version", "run_id", "timestamp", "machine")}
    same = overhead.Placement("same CPU", 1, 1)
    resolved = overhead.Condition("perf", same, wall=[1.0 + 0.01 * i for i in range(40)],
                                  cpu=[0.1] * 40, bare=[(0.25, 0.24)] * 40)
    wide = overhead.Condition("perf", overhead.Placement("other CPU", 0, 1),
                              wall=[(-1) ** i * 5.0 for i in range(40)], cpu=[0.0] * 40,
                              bare=[(0.25, 0.24)] * 40)
    budget = overhead.budget_s(False)
    got = (overhead.condition_rows(common, resolved, 297, None, False, 400.0, budget)
           + overhead.condition_rows(common, wide, 297, None, False, 400.0, budget))
    above = rows_mod.measured_row(common, harness="sampler", path="sampler", op="perf",
                                  target="msr/tsc/ @ 1000 Hz", role=rows_mod.ABOVE_NULL,
                                  cpu=None, target_cpu=None, metric="cpu_us_per_sample", unit="us",
                                  samples=[3.0, 3.2, 2.9, 3.1, 3.0, 3.3, 2.8, 3.1, 3.0, 3.2])
    table = local_overhead_table(Run(run0.path, got + [above], label="here"))
    col = {name: i for i, name in enumerate(table.columns)}
    by_place = {line[col["sampler on"]]: line for line in table.body}
    assert set(by_place) == {"same CPU (CPU 1)", "other CPU (CPU 0)"}
    assert by_place["same CPU (CPU 1)"][col["wall time (95% CI)"]] == "1.19 % (1.13–1.26 %)"
    assert by_place["same CPU (CPU 1)"][col["CPU time (95% CI)"]].startswith("0.1")
    assert by_place["same CPU (CPU 1)"][col["pairs"]] == "40"
    assert by_place["same CPU (CPU 1)"][col["CPU/tick above null"]].startswith("3.0")
    assert "not resolved" not in by_place["same CPU (CPU 1)"][col["note"]]
    assert "not resolved" in by_place["other CPU (CPU 0)"][col["note"]]
    assert any("not resolved at this n: 40 pairs gave ±5.00 points" in f for f in table.footnotes)
    records = {(r["placement"], r["time"]): r for r in table.records}
    assert records[("same CPU", "wall time")]["resolved"] is True
    assert records[("other CPU", "CPU time")]["resolved"] is True  # its own CI: all 0.0
    assert records[("other CPU", "wall time")]["resolved"] is False
    assert records[("same CPU", "wall time")]["sampler_cpu_us_above_null"] == 3.05


def with_above_null(run: Run) -> Run:
    """`run` and, for each sampler mechanism that ran, the rows of its self-report
    above its null loop (rate_hz and cpu_us_per_sample: one difference per pair)."""
    extra = []
    for r in run.rows:
        if (r["harness"], r["status"], r["metric"]) == ("sampler", "ok", "rate_hz") \
                and r["op"] != "timer":
            for metric, unit, diffs in (("rate_hz", "Hz", [-0.4, 0.1, 0.2, -0.1, 0.0, 0.3]),
                                        ("cpu_us_per_sample", "us", [2.1, 2.4, 1.9, 2.2, 2.6, 2.0])):
                above = {**r, "role": rows_mod.ABOVE_NULL, "metric": metric, "unit": unit}
                above.update(stats.summarize(diffs), samples=diffs, n=len(diffs))
                extra.append(above)
    return Run(run.path, run.rows + extra, label=run.label)


def test_the_cpu_above_null_joins_its_samplers_line(runs):
    run = with_above_null(runs[1])  # AMD
    table = report_tables.sampler_table(run)
    col = {name: i for i, name in enumerate(table.columns)}
    mechanisms = [line[col["mechanism"]] for line in table.body]
    assert mechanisms == [line[col["mechanism"]]
                          for line in report_tables.sampler_table(runs[1]).body]
    assert not any(line[col["target"]].startswith("above null") for line in table.body)
    perf = next(line for line in table.body if line[col["mechanism"]] == "perf")
    assert perf[col["CPU above null (95% CI)"]] == "2.15 µs (1.90–2.60 µs)"
    assert perf[col["rate"]].endswith(" Hz") and not perf[col["rate"]].startswith("0.")
    timer = next(line for line in table.body if line[col["mechanism"]] == "timer")
    assert timer[col["CPU above null (95% CI)"]] == ""
    # every row stays in the CSV, the differences under their own target (as shown)
    above = [r for r in table.records if (r["target"] or "").startswith("above null: ")]
    assert {(r["op"], r["metric"]) for r in above} >= {("perf", "rate_hz"),
                                                      ("perf", "cpu_us_per_sample")}


def test_a_cpu_above_null_whose_ci_holds_0_says_within_noise(runs):
    """The sampler's CPU above its null loop is a difference: where its 95% CI
    holds 0 the sampler and overhead tables say "within noise" (footnoted),
    their CSVs flag it, and the overhead figure greys its label; a CI clear
    of 0 is not labelled."""
    from plots.report_tables_overhead import local_overhead_table
    from results import overhead
    run = with_above_null(runs[1])  # AMD: perf's difference 1.90–2.60 µs
    noisy = [-3.0, 4.0, 1.0, -2.0, 5.0, 0.5]
    rows = [({**r, **stats.summarize(noisy), "samples": noisy, "n": len(noisy)}
             if r["op"] == "ebpf" and r["metric"] == "cpu_us_per_sample"
             and r["role"] == rows_mod.ABOVE_NULL else r) for r in run.rows]
    common = {k: rows[0][k] for k in ("schema_version", "run_id", "timestamp", "machine")}
    for mech in ("perf", "ebpf"):
        rows += overhead.condition_rows(
            common, overhead.Condition(mech, overhead.Placement("same CPU", 1, 1),
                                       wall=[1.0 + 0.01 * i for i in range(12)],
                                       cpu=[0.1] * 12, bare=[(0.25, 0.24)] * 12),
            297, None, False, 400.0, overhead.budget_s(False))
    run = Run(run.path, rows, label=run.label)

    table = report_tables.sampler_table(run)
    col = {name: i for i, name in enumerate(table.columns)}
    line = {line[col["mechanism"]]: line for line in table.body}
    assert "within noise" in line["ebpf"][col["CPU above null (95% CI)"]]
    assert "within noise" not in line["perf"][col["CPU above null (95% CI)"]]
    assert any(f.startswith("within noise: the 95% CI of the sampler's CPU per tick")
               for f in table.footnotes)
    flags = {r["op"]: r["within_noise"] for r in table.records
             if r["metric"] == "cpu_us_per_sample"
             and (r["target"] or "").startswith("above null: ")}
    assert flags["ebpf"] is True and flags["perf"] is False

    overhead_table = local_overhead_table(run)
    col = {name: i for i, name in enumerate(overhead_table.columns)}
    cells = {line[0]: line[col["CPU/tick above null"]] for line in overhead_table.body}
    assert "within noise" in cells["ebpf"] and "within noise" not in cells["perf"]
    flags = {r["tool_or_mechanism"]: r["above_null_within_noise"] for r in overhead_table.records}
    assert flags["ebpf"] is True and flags["perf"] is False

    fig = figures.overhead_figure([run], [])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.endswith(" µs\n(noise)") for t in texts)  # a line per word: the strip's
    assert any(t.startswith("+2.2 µs") and "noise" not in t for t in texts)


def test_the_sampler_figure_shows_the_differences_in_panels_of_their_own(runs):
    """Issue 33, item 4. This test asserted the old behaviour, that the rows
    above the null loop were left out of sampler.png; but the sampler shown
    beside its null loop without their difference leaves out the finding
    (what reading the counter costs the sampler, and whether that is told
    apart from noise). The differences now have a row of panels of their
    own under the levels (never on the rate axis: no 0 Hz difference among
    the rates): CPU per tick and rate above null, a median and its 95% CI per
    mechanism and machine, hollow where results/meaning.py says not resolved
    (here: the rate differences, whose CI holds 0), and a grey x where the
    mechanism did not run (AMD's msr)."""
    import matplotlib.pyplot as plt

    from results import meaning
    run = with_above_null(runs[1])
    fig, before = figures.sampler_figure([run]), figures.sampler_figure([runs[1]])
    for ax, old in zip(fig.axes[:2], before.axes):  # the levels as they were
        assert ([t.get_text() for t in ax.get_xticklabels()]
                == [t.get_text() for t in old.get_xticklabels()])
        assert ax.get_ylabel() == old.get_ylabel()
    assert min(fig.axes[0].get_ylim()) > 900  # no 0 Hz difference among the rates
    assert len(before.axes) == 2 and len(fig.axes) == 4
    cpu, rate = fig.axes[2:]
    assert (cpu.get_ylabel(), rate.get_ylabel()) == ("CPU per tick above null (µs)",
                                                     "rate above null (Hz)")
    hollow_seen = set()
    for ax, metric in ((cpu, "cpu_us_per_sample"), (rate, "rate_hz")):
        above = {r["op"]: r for r in run.rows
                 if meaning.of(r).above_null and r["metric"] == metric}
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert set(above) | {"msr"} == set(ticks)  # timer has no null loop: no slot
        points = [line for line in ax.lines if line.get_marker() == "D"]
        assert sorted(p.get_ydata()[0] for p in points) == sorted(r["median"]
                                                                  for r in above.values())
        hollow = {p.get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0)) for p in points}
        assert hollow == {meaning.of(r).not_resolved for r in above.values()}
        hollow_seen |= hollow
        # each bar spans the row's 95% CI
        spans = sorted((min(y for _, y in seg), max(y for _, y in seg))
                       for c in ax.collections for seg in c.get_segments())
        assert spans == sorted((r["ci95_low"], r["ci95_high"]) for r in above.values())
        assert any(line.get_marker() == "x" for line in ax.lines)  # msr did not run
    assert hollow_seen == {True, False}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("above null: median") for t in legend)
    assert any(t.startswith("95% CI holds 0 (within noise)") for t in legend)
    plt.close(fig)
    plt.close(before)


def test_a_slowdown_below_zero_reads_baseline_drift_in_table_test_and_figure(refs):
    """Issue 33: a sampler on another CPU does not speed a workload up. An
    overhead whose CI lies below 0 (resolved by its target or not) says
    "baseline drift, not a saving" in the overhead table, in overhead-tests
    instead of "significant", and in the figure, drawn hollow."""
    import matplotlib.pyplot as plt

    from plots.report_tables_overhead import local_overhead_table
    from plots.report_tables_stats import overhead_table
    from results import meaning, overhead
    run0 = load_runs([str(AMD)])[0]
    common = {k: run0.rows[0][k] for k in ("schema_version", "run_id", "timestamp", "machine")}
    budget = overhead.budget_s(False)
    conditions = [overhead.Condition("perf", overhead.Placement("same CPU", 1, 1),
                                     wall=[4.0 + 0.01 * i for i in range(40)], cpu=[1.0] * 40,
                                     bare=[(0.05, 0.05)] * 40),
                  overhead.Condition("perf", overhead.Placement("other CPU", 0, 1),
                                     wall=[-0.4 + 0.01 * i for i in range(30)],
                                     cpu=[0.0] * 30, bare=[(0.05, 0.05)] * 30)]
    got = [row for c in conditions
           for row in overhead.condition_rows(common, c, 297, None, False, 90.0, budget)]
    run = Run(run0.path, got, label="here")
    table = local_overhead_table(run)
    col = {name: i for i, name in enumerate(table.columns)}
    by_place = {line[col["sampler on"]]: line for line in table.body}
    drift = by_place["other CPU (CPU 0)"][col["wall time (95% CI)"]]
    assert re.fullmatch(r"-0\.2\d+ % \(.*\), baseline drift, not a saving \[\^\d+\]", drift), drift
    assert "drift" not in by_place["same CPU (CPU 1)"][col["wall time (95% CI)"]]
    assert any(f.startswith(meaning.DRIFT_NOTE) for f in table.footnotes)
    records = {(r["placement"], r["time"]): r for r in table.records}
    assert records[("other CPU", "wall time")]["significance"] == meaning.DRIFT
    tests = overhead_table(run)
    verdicts = {line[1].split(" (")[0]: line[-1] for line in tests.body
                if line[1].endswith("vs 0") and "other CPU · wall" in line[0]}
    assert verdicts == {"perf": meaning.DRIFT}, verdicts
    fig = figures.overhead_figure([run], refs)
    assert any(t.get_text().endswith("baseline drift") for ax in fig.axes for t in ax.texts)
    plt.close(fig)
