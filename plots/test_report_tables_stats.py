"""The report's significance tables (plots/report_tables_stats.py) on the
fixture runs and on small runs made here whose answer is known."""

import copy
import dataclasses

import pytest
from statsmodels.stats.multitest import multipletests

from results import significance as sig
from results import stats

from plots import pairing, report_tables_compare, report_tables_stats as rts
from plots.fixtures import AMD, INTEL
from plots.runs import Run, load_runs
from plots.tables import to_csv, to_markdown


@pytest.fixture(scope="module")
def amd():
    return load_runs([AMD])[0]


@pytest.fixture(scope="module")
def intel():
    return load_runs([INTEL])[0]


def col(table, name):
    return table.columns.index(name)


def with_rows(run: Run, rows: list[dict], label: str | None = None) -> Run:
    return dataclasses.replace(run, rows=rows, label=label or run.label)


def latency_row(template: dict, op: str, values: list[float]) -> dict:
    row = copy.deepcopy(template)
    row.update(op=op, samples=values, n=len(values), median=sorted(values)[len(values) // 2])
    return row


# ---- the ladder ------------------------------------------------------------------------------

def test_ladder_has_one_rung_per_quantity_in_median_order(amd):
    rows = rts.ladder_rows(amd)
    keys = [rts.rung(r) for r in rows]
    assert len(keys) == len(set(keys))
    medians = [r["median"] for r in rows]
    assert medians == sorted(medians)
    # powercap pread is measured by gbench and criterion: the ladder takes gbench
    powercap = [r for r in rows if (r["path"], r["op"]) == ("powercap", "pread")]
    assert [r["harness"] for r in powercap] == ["gbench"]
    every = {rts.rung(r) for r in amd.rows if r["metric"] == "latency"
             and r["status"] == "ok" and r["op"] != "*"}
    assert set(keys) == every


def test_the_msr_device_read_at_two_addresses_is_two_rungs(intel):
    # the Intel fixture reads /dev/cpu/*/msr at 0x611 and 0x639, both ok: two
    # quantities of the ladder (counted from the rows, not through rts.rung)
    rows = rts.ladder_rows(intel)
    msr_dev = sorted((r["target"], r["cpu"]) for r in rows
                     if (r["path"], r["op"]) == ("msr-dev", "pread"))
    measured = sorted({(r["target"], r["cpu"]) for r in intel.rows
                       if (r["path"], r["op"], r["status"]) == ("msr-dev", "pread", "ok")})
    assert {t for t, _ in measured} == {"0x611", "0x639"}
    assert msr_dev == measured  # each target at each CPU placement, once
    labels = [rts.ladder_label(r) for r in rows if r["path"] == "msr-dev"]
    assert len(set(labels)) == len(labels) and any("0x639" in x for x in labels)
    # one harness per rung: 0x611 on CPU 0 is timed by gbench and criterion
    assert sum(1 for r in rows if (r["path"], r["target"], r["cpu"]) == ("msr-dev", "0x611", 0)) == 1


def test_the_ladder_and_the_machines_table_choose_a_harness_by_one_rule(intel):
    # two harnesses timed one rung: gbench before criterion, but a live counter
    # before a frozen one whatever the harness; the row order never matters,
    # and the machines table's route_rows picks the same row
    gbench = next(r for r in intel.rows if (r["path"], r["op"], r["harness"], r["cpu"])
                  == ("perf", "read", "gbench", 0))
    criterion = next(r for r in intel.rows if (r["path"], r["op"], r["harness"], r["cpu"])
                     == ("perf", "read", "criterion", 0))
    frozen = {**gbench, "liveness": "frozen"}
    for candidates, chosen in (([gbench, criterion], gbench), ([frozen, criterion], criterion)):
        for order in (candidates, candidates[::-1]):
            (rung,) = rts.ladder_rows(with_rows(intel, [copy.deepcopy(r) for r in order]))
            assert rung["harness"] == chosen["harness"]
            assert rung.get("liveness") == chosen.get("liveness")
            assert pairing.pick(order) is chosen
    assert pairing.status_words(frozen) == " (frozen)"
    assert pairing.read_mark(frozen) == "energy-pkg (frozen)"
    stand_in = {**frozen, "stand_in": "no power PMU", "target": "msr/tsc/"}
    assert pairing.status_words(stand_in) == " (stand-in, frozen)"
    assert rts.ladder_label(stand_in).endswith(" (stand-in, frozen)")


def test_ladder_table_steps_tests_and_caption(amd):
    table = rts.ladder_table(amd)
    rows = rts.ladder_rows(amd)
    k = len(rows)
    assert table.name == "ladder-tests" and table.key.startswith("ladder-tests-amd")
    assert len(table.body) == k - 1
    kw = next(r for r in table.records if r["test"] == "kruskal-wallis")
    assert kw["df"] == k - 1 and kw["p"] < 0.001 and kw["machine"] == amd.label
    dunn = [r for r in table.records if r["test"] == "dunn-bonferroni"]
    assert len(dunn) == k - 1 and all(r["pairs_adjusted"] == k * (k - 1) // 2 for r in dunn)
    assert "Diamond & Stoico 2026" in table.caption
    assert f"Bonferroni over all {k * (k - 1) // 2} pairs" in table.caption
    assert "Shapiro–Wilk rejects normality at 0.05 in" in table.caption


def test_a_step_whose_rungs_do_not_overlap_has_delta_one(amd):
    table = rts.ladder_table(amd)
    rows = rts.ladder_rows(amd)
    for i, line in enumerate(table.body):
        fast, slow = rts.samples(rows[i]), rts.samples(rows[i + 1])
        if max(fast) < min(slow):
            assert line[col(table, "Cliff's delta")] == "1.00 (large)"
            assert line[col(table, "verdict")].startswith("significant")
            break
    else:
        pytest.fail("no fully separated step in the AMD fixture")


def test_small_n_is_said_with_the_computed_floor(amd):
    # 10 repetitions per rung and ~30 rungs: Dunn–Bonferroni cannot reach 0.05 for neighbours
    table = rts.ladder_table(amd)
    groups = [rts.samples(r) for r in rts.ladder_rows(amd)]
    ns = [len(g) for g in groups]
    floor = sig.best_dunn_p_adj(ns[0], ns[1], ns, sig.dunn_tie_sum(groups))
    assert floor >= sig.ALPHA
    assert "Small n" in table.caption and f"p_adj ≥ {sig.p_text(floor)}" in table.caption
    assert all(line[col(table, "verdict")] != "significant" for line in table.body)


def test_many_repetitions_let_dunn_decide(amd):
    # three rungs of 60 well-separated repetitions: Dunn–Bonferroni is significant on
    # each step, the caption has no small-n note, δ = 1
    template = next(r for r in amd.rows if r["metric"] == "latency" and r["path"] == "kinsn"
                    and r["status"] == "ok")
    rows = [latency_row(template, op, [base + i * 0.01 for i in range(60)])
            for op, base in (("nop", 1.0), ("mov", 2.0), ("cpuid:0x1", 3.0))]
    table = rts.ladder_table(with_rows(amd, rows))
    assert [line[col(table, "verdict")] for line in table.body] == ["significant"] * 2
    assert "Small n" not in table.caption
    assert [line[col(table, "Cliff's delta")] for line in table.body] == ["1.00 (large)"] * 2
    # swapped: the faster rung still comes first, δ stays positive (slower against faster)
    rows.reverse()
    assert rts.ladder_table(with_rows(amd, rows)).body[0][0].startswith("kinsn nop")


def test_identical_rungs_are_not_significant(amd):
    template = next(r for r in amd.rows if r["metric"] == "latency" and r["path"] == "kinsn"
                    and r["status"] == "ok")
    rows = [latency_row(template, op, [5.0] * 10) for op in ("nop", "mov")]
    table = rts.ladder_table(with_rows(amd, rows))
    assert table.body[0][col(table, "verdict")] == "not tested"
    assert "all values equal" in table.caption


def test_one_rung_gives_no_table(amd):
    template = next(r for r in amd.rows if r["metric"] == "latency" and r["status"] == "ok")
    assert rts.ladder_table(with_rows(amd, [template])) is None


# ---- overhead ---------------------------------------------------------------------------------

def test_overhead_tests_with_the_null_loop(amd):
    table = rts.overhead_table(amd)
    assert table.name == "overhead-tests"
    comparisons = [line[col(table, "comparison (median)")] for line in table.body]
    assert any("null loop (timer)" in c for c in comparisons)
    assert "The null loop" in table.caption
    mechanisms = [r for r in amd.rows if r["metric"] == "overhead_pct" and rts.samples(r)]
    zero = [r for r in table.records if r["test"] == "wilcoxon-signed-rank"]
    assert len(zero) == len(mechanisms)
    kw = [r for r in table.records if r["test"] == "kruskal-wallis"]
    assert len(kw) == 1 and kw[0]["df"] == len(mechanisms) - 1


def test_overhead_without_null_rows_says_so_and_zero_overhead_is_not_significant(amd):
    rows = [copy.deepcopy(r) for r in amd.rows if not (r["metric"] == "overhead_pct"
                                                         and r["op"] == "timer")]
    perf = next(r for r in rows if r["metric"] == "overhead_pct" and r["op"] == "perf")
    perf["samples"] = [-3.0, -2.0, -1.0, 0.5, 1.0, 2.0, 3.0, -0.5, 1.5, -1.5]  # CI spans 0
    table = rts.overhead_table(with_rows(amd, rows))
    assert "has no null-loop rows" in table.caption
    line = next(line for line in table.body
                if line[col(table, "comparison (median)")].startswith("perf") and "vs 0" in
                line[col(table, "comparison (median)")])
    assert line[col(table, "verdict")] == "not significant"


def test_separated_mechanisms_are_told_apart_by_the_u_test_where_dunn_cannot(amd):
    # five mechanisms of 10 pairs each, every mechanism's overheads apart from
    # the next: Dunn–Bonferroni over the 10 pairs cannot go below its bound for
    # neighbours; the U test of each pair alone (Bonferroni over the 4 steps)
    # can, and the table says so in its verdict, its columns and its caption
    rows = [copy.deepcopy(r) for r in amd.rows if r["metric"] == "overhead_pct"
            and rts.samples(r)][:1]
    made = []
    for m, op in enumerate(("timer", "perf", "powercap", "msr", "ebpf")):
        r = copy.deepcopy(rows[0])
        r.update(op=op, samples=[10.0 * m + i * 0.5 for i in range(10)], median=10.0 * m + 2.25)
        made.append(r)
    table = rts.overhead_table(with_rows(amd, made))
    steps = [line for line in table.body if line[col(table, "test")] == "Dunn–Bonferroni"]
    assert len(steps) == 4
    groups = [r["samples"] for r in made]
    bound = sig.best_dunn_p_adj(10, 10, [10] * 5)
    assert bound >= sig.ALPHA  # the reason Dunn alone would read "not significant"
    u_adj = 4 * sig.mann_whitney(groups[1], groups[0]).p
    for line in steps:
        assert line[col(table, "Cliff's delta")] == "1.00 (large)"
        assert line[col(table, "best p_adj")] == sig.p_text(bound)
        assert line[col(table, "U p_adj")] == sig.p_text(u_adj)
        assert line[col(table, "verdict")] == "significant (U test)"
    assert "Small n: with 5 groups of n = 10" in table.caption
    assert "significant (U test)" in table.caption
    u = [r for r in table.records if r["test"] == "mann-whitney-u"]
    assert len(u) == 4 and all(r["pairs_adjusted"] == 4 and r["p_adj"] < sig.ALPHA for r in u)
    dunn = [r for r in table.records if r["test"] == "dunn-bonferroni"]
    assert all(r["best_p_adj"] == pytest.approx(bound) for r in dunn)


def test_the_two_criteria_of_not_significant_can_disagree_and_the_caption_says_which(amd):
    # results/README.md's example: the median's order-statistic 95% CI holds 0
    # (the overhead tables' "not significant"), Wilcoxon against 0 rejects
    pairs = [-1, -0.5, 1, 2, 3, 4, 5, 6, 7, 8]
    summary = stats.summarize(pairs)
    assert (summary["ci95_low"], summary["ci95_high"]) == (-0.5, 7.0)
    assert summary["ci95_low"] <= 0 <= summary["ci95_high"]
    zero = sig.wilcoxon_zero(pairs)
    assert round(zero.p, 3) == 0.014 and sig.verdict(zero.p) == "significant"
    row = copy.deepcopy(next(r for r in amd.rows if r["metric"] == "overhead_pct"
                             and rts.samples(r)))
    row.update(samples=pairs, **{k: summary[k] for k in ("median", "ci95_low", "ci95_high")})
    table = rts.overhead_table(with_rows(amd, [row]))
    (line,) = [line for line in table.body if "vs 0" in line[col(table, "comparison (median)")]]
    assert line[col(table, "verdict")] == "significant"
    assert "order statistics" in table.caption and "can differ" in table.caption
    assert "Wilcoxon signed-rank" in table.caption


def test_overhead_conditions_by_placement_and_time(amd):
    rows = [copy.deepcopy(r) for r in amd.rows if r["metric"] == "overhead_pct"
            and rts.samples(r)]
    made = []
    for place in ("same CPU", "other CPU"):
        for measure in ("wall time", "CPU time"):
            for r in rows:
                r2 = copy.deepcopy(r)
                r2["target"] = f"stress-ng --cpu 1: {measure}"
                r2["parameters"] = {"placement": place}
                made.append(r2)
    table = rts.overhead_table(with_rows(amd, made))
    conditions = {line[0] for line in table.body}
    assert conditions == {"same CPU · wall time", "same CPU · CPU time",
                          "other CPU · wall time", "other CPU · CPU time"}
    assert "workload stress-ng --cpu 1" in table.caption


def test_no_overhead_rows_no_table(amd):
    assert rts.overhead_table(with_rows(amd, [r for r in amd.rows
                                              if r["metric"] != "overhead_pct"])) is None


# ---- machines ----------------------------------------------------------------------------------

def test_machines_tests_need_two_runs(amd):
    assert rts.machines_table([amd]) is None


def test_two_machines_mann_whitney_faster_first(amd, intel):
    runs = load_runs([INTEL, AMD])
    table = rts.machines_table(runs)
    assert table.key == "machines-tests"
    # numbered as the machines table numbers them: (1), (2)
    compare = report_tables_compare.machines_table(runs)
    for i, run in enumerate(runs, 1):
        assert f"({i}) {run.label}:" in compare.caption
        assert f"({i}) {run.label} (run {run.run_id})" in table.caption
    assert "M1" not in table.caption
    assert all(r["test"] == "mann-whitney-u" for r in table.records)
    for r in table.records:
        assert r["median_a"] <= r["median_b"]
        assert r["p"] is not None and r["n_a"] and r["n_b"]
        assert r["method"] in ("exact", "asymptotic")
    # Holm across the quantities, computed here from the raw U p's
    raw = [r["p"] for r in table.records]
    holm = multipletests(raw, method="holm")[1]
    assert [r["p_holm"] for r in table.records] == pytest.approx(list(holm))
    assert all(r["holm_tests"] == len(raw) for r in table.records)
    assert [r["verdict"] for r in table.records] == [
        "significant" if p < 0.05 else "not significant" for p in holm]
    assert f"{len(raw)} quantities are tested" in table.caption and "Holm" in table.caption
    assert [line[col(table, "Holm p_adj")] for line in table.body] == [
        sig.p_text(p) for p in holm]
    # PKG energy via rdmsr: 124 ns on the AMD, 457 ns on the Intel, every repetition apart
    pkg = next(r for r in table.records if r["condition"].startswith("kinsn rdmsr PKG energy"))
    assert (pkg["group_a"], pkg["group_b"]) == (runs[1].label, runs[0].label)
    assert pkg["delta"] == 1.0 and pkg["verdict"] == "significant"
    assert pkg["target_a"] != pkg["target_b"]  # each machine's own MSR address


def test_three_machines_kruskal_and_dunn(amd, intel):
    third = with_rows(amd, amd.rows, label="AMD copy")
    table = rts.machines_table([amd, intel, third])
    kw = [r for r in table.records if r["test"] == "kruskal-wallis"]
    dunn = [r for r in table.records if r["test"] == "dunn-bonferroni"]
    assert kw and len(dunn) == 3 * len(kw)
    assert all(r["pairs_adjusted"] == 3 for r in dunn)
    # the Kruskal–Wallis record has its n and unit like the others
    assert all(r["n_a"] and r["unit"] == "ns" for r in kw)
    # Holm: the Kruskal–Wallis tests are one family, each pair of machines another
    assert all(r["holm_tests"] == len(kw) for r in kw)
    assert [r["p_holm"] for r in kw] == pytest.approx(
        list(multipletests([r["p"] for r in kw], method="holm")[1]))
    # (a quantity only two machines measured has a U test, in its pair's family)
    for pair in ({amd.label, intel.label}, {amd.label, "AMD copy"}):
        family = [r for r in table.records if {r["group_a"], r.get("group_b")} == pair
                  and (r["p"] if r["test"] == "mann-whitney-u" else r["p_adj"]) is not None]
        p = [r["p_adj"] if r["test"] == "dunn-bonferroni" else r["p"] for r in family]
        assert family and all(r["holm_tests"] == len(family) for r in family)
        assert [r["p_holm"] for r in family] == pytest.approx(
            list(multipletests(p, method="holm")[1]))
    # a machine against an identical copy of itself: δ = 0, not significant
    same = [r for r in dunn if {r["group_a"], r["group_b"]} == {amd.label, "AMD copy"}]
    assert same and all(r["delta"] == 0 and r["verdict"] == "not significant" for r in same)


def test_an_n_shown_is_an_n_tested(amd, intel):
    # a NaN repetition is not tested, so it is not counted either
    rows = [copy.deepcopy(r) for r in amd.rows]
    pkg = next(r for r in rows if r["op"] == "rdmsr:0xc001029b" and r["status"] == "ok")
    pkg["samples"] = pkg["samples"][:-1] + [float("nan")]
    table = rts.machines_table([with_rows(amd, rows), intel])
    (rec,) = [r for r in table.records if r["condition"].startswith("kinsn rdmsr PKG energy")]
    assert rec["n_a"] == len(pkg["samples"]) - 1
    # Wilcoxon drops zeros: its n counts the pairs tested
    over = copy.deepcopy(next(r for r in amd.rows if r["metric"] == "overhead_pct"
                              and rts.samples(r)))
    over["samples"] = [0.0, 0.0, 1.0, 2.0, -3.0, 4.0, 5.0, 6.0]
    table = rts.overhead_table(with_rows(amd, [over]))
    (line,) = table.body
    assert line[col(table, "n")] == "6"
    (rec,) = table.records
    assert rec["n_a"] == 6 and rec["note"] == "2 zeros dropped"


# ---- renderings ---------------------------------------------------------------------------------

def test_records_fit_the_csv_and_name_the_run(amd, intel):
    tables = [rts.ladder_table(amd), rts.overhead_table(amd),
              rts.machines_table([amd, intel])]
    for t in tables:
        assert all(set(r) <= set(t.csv_columns) for r in t.records)
        assert len(to_csv([t]).splitlines()) == len(t.records) + 1
        assert all(len(line) == len(t.columns) == len(t.align) for line in t.body)
    assert all(r["machine"] == amd.label and r["run_id"] == amd.run_id
               for t in tables[:2] for r in t.records)
    assert "| faster (median) |" in to_markdown(tables[:1])


def test_the_report_has_the_tables(built):
    out, result = built
    for name in ("ladder-tests", "overhead-tests", "machines-tests"):
        for ext in ("md", "csv", "tex"):
            assert f"{name}.{ext}" in result["files"]
            assert (out / f"{name}.{ext}").stat().st_size > 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="stats"' in page and 'id="table-machines-tests"' in page
    assert page.count('id="table-ladder-tests-') == 2
