"""The report's significance tables, ladder-tests and overhead-tests per
machine and machines-tests across machines (plots/README.md says what each
holds), with the procedure of Diamond & Stoico 2026 (section 3.4; tests in
results/significance.py, the procedure over a family of groups in
report_tables_steps.py).

A group is a row's `samples`: its repetitions (latency) or its pairs
(overhead), taken as independent.
"""

from results import meaning
from results import significance as sig
from results.rows import NULL
from results.table import DASH

from plots import labels, pairing, report_tables_compare
from plots.report_tables import machine_caption
from plots.report_tables_steps import (CITE, DELTA_NOTE, STATS_CSV, holm, median_cell, n_cell,
                                       neighbour_steps, normality_sentence, record,
                                       small_n_sentence, step_cells, step_records)
from plots.runs import Run
from plots.tables import Table

# overhead-tests' verdict against 0 and the overhead tables' label are two criteria
CI_CRITERION = ("The overhead tables (reference-overhead, reference-design) label a row \"not "
                "significant\" by another criterion, its median's 95% CI (from order "
                "statistics) holding 0; the two can differ near the edge, a CI that holds 0 "
                "beside a Wilcoxon p < 0.05 or the reverse.")


def samples(row: dict | None) -> list[float]:
    """A row's finite repetitions, for testing (empty for a row that is not
    ok): what the tests use (sig.clean), so an n shown is an n tested."""
    if row is None or row["status"] != "ok":
        return []
    return [float(v) for v in sig.clean(row.get("samples") or [])]


# ---- the latency ladder ----------------------------------------------------------------------

def ladder_label(row: dict) -> str:
    """A rung: path, operation, what it read, placement; "(stand-in)" for a stand-in."""
    key = pairing.quantity(row)
    text = pairing.quantity_label(key)
    target = labels.short_target(row.get("target"))
    if target and not row["op"].startswith("rdmsr") and target not in text:
        head, _, place = text.partition(" · ")
        text = f"{head} {target}" + (f" · {place}" if place else "")
    return text + pairing.status_words(row)


def rung(row: dict) -> tuple[str, str, str, str]:
    """A rung of one machine's ladder: (path, operation, what was read,
    placement). What was read is the target (the MSR's name for the rdmsr
    instruction), so the msr device read at 0x611 and at 0x639 are two rungs;
    unlike pairing.quantity, which compares machines by route and so leaves
    the target out."""
    route = pairing.quantity(row)
    return (route.path, route.op, route.what or (row.get("target") or ""), route.placement)


def ladder_rows(run: Run) -> list[dict]:
    """One ok latency row per quantity (path, operation, what was read,
    placement: `rung`; among harnesses, pairing.pick chooses by the rule the
    machines table uses: real and live first, then gbench, kbench, criterion), ordered by
    median."""
    by_rung: dict[tuple, list[dict]] = {}
    for r in run.rows:
        if r["metric"] == "latency" and r["status"] == "ok" and r["op"] != "*" \
                and len(samples(r)) > 0:
            by_rung.setdefault(rung(r), []).append(r)
    chosen = [pairing.pick(rows) for rows in by_rung.values()]
    return sorted(chosen, key=lambda r: (r["median"], ladder_label(r)))


def ladder_table(run: Run) -> Table | None:
    rows = ladder_rows(run)
    if len(rows) < 2:
        return None
    groups = [samples(r) for r in rows]
    ns = [len(g) for g in groups]
    tested = neighbour_steps(groups)
    omnibus, dunn = tested.omnibus, tested.dunn
    steps = len(rows) - 1
    name = "ladder-tests"
    base = dict(condition="latency ladder", unit=rows[0]["unit"])
    body = []
    records = [record(name, run, test="kruskal-wallis", group_a=f"{len(rows)} groups",
                      n_a=sum(ns), statistic=omnibus.h, df=omnibus.df, p=omnibus.p,
                      verdict=sig.verdict(omnibus.p), note=omnibus.note, **base)]
    for i in range(steps):
        fast, slow = rows[i], rows[i + 1]
        body.append([f"{ladder_label(fast)} ({median_cell(fast)})",
                     f"{ladder_label(slow)} ({median_cell(slow)})",
                     n_cell(ns[i], ns[i + 1]), *step_cells(tested, i)])
        records += step_records(name, run, tested, i, rows, ladder_label, **base)
    kw = (f"Kruskal–Wallis across the {len(rows)} rungs: H = {omnibus.h:.1f}, df = {omnibus.df}, "
          f"p {sig.p_text(omnibus.p) if omnibus.p < 0.001 else '= ' + sig.p_text(omnibus.p)} "
          f"({sig.verdict(omnibus.p)}). " if omnibus.h is not None
          else f"Kruskal–Wallis: not tested ({omnibus.note}). ")
    caption = (f"{machine_caption(run)}. The latency ladder's significance, after {CITE}: one "
               f"rung per quantity (path, operation, what was read, placement; one harness per "
               f"quantity: a real, live counter's row first, then gbench, kbench, "
               f"criterion), ordered by median; each group is the row's repetitions, taken as "
               f"independent. {normality_sentence(groups)}{kw}"
               f"Each step compares two neighbouring rungs: Dunn's test, two-sided, Bonferroni "
               f"over all {dunn.pairs} pairs of the {len(rows)} rungs (scikit-posthocs; "
               f"best p_adj: the smallest it could give that step, the two rungs' values "
               f"separated from each other and from every other rung's, with the data's ties as "
               f"Dunn's tie correction counts them); U p_adj: the "
               f"Mann–Whitney U test of the two rungs alone, Bonferroni over the {steps} steps; "
               f"{DELTA_NOTE}. The verdict is Dunn's at p_adj < {sig.ALPHA}, \"significant (U "
               f"test)\" where only the U test is. {small_n_sentence([tested.best], [ns], 'rungs')}")
    return Table(name=name, key=f"ladder-tests-{labels.slug(run.label)}",
                 title=f"Latency ladder, tested steps, {run.label}", caption=caption.strip(),
                 columns=["faster (median)", "slower (median)", "n", "Dunn p_adj",
                          "best p_adj", "U p_adj", "Cliff's delta", "verdict"],
                 align="llrrrrll", body=body, footnotes=[], csv_columns=STATS_CSV,
                 records=records)


# ---- the overhead experiment ------------------------------------------------------------------

NULL_OPS = ("timer",)  # the bare timer loop, sampling nothing


def is_null_loop(row: dict) -> bool:
    return row["op"] in NULL_OPS or row["role"] == NULL


def mechanism_label(row: dict) -> str:
    text = f"null loop ({row['op']})" if is_null_loop(row) else row["op"]
    return text + pairing.status_words(row)


def overhead_conditions(run: Run) -> dict[tuple, list[dict]]:
    """{(workload, placement, time): ok overhead rows, one per mechanism}."""
    out: dict[tuple, list[dict]] = {}
    for r in run.rows:
        if r["metric"] != "overhead_pct" or not samples(r):
            continue
        workload = r["target"].rsplit(":", 1)[0] if r.get("parameters") and r.get("target") \
            else None
        key = (workload, labels.overhead_placement(r), labels.overhead_measure(r))
        out.setdefault(key, []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: (labels.mechanism_rank(r["op"]), r["op"]))
    return out


def overhead_table(run: Run) -> Table | None:
    conditions = overhead_conditions(run)
    if not conditions:
        return None
    name = "overhead-tests"
    body, records, all_groups, bests, nss = [], [], [], [], []
    has_null = any(is_null_loop(r) for rows in conditions.values() for r in rows)
    for key, rows in sorted(conditions.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        _, placement, measure = key
        cond = f"{placement or 'not pinned'} · {measure}"
        rows = sorted(rows, key=lambda r: (r["median"], r["op"]))
        groups = [samples(r) for r in rows]
        all_groups += groups
        ns = [len(g) for g in groups]
        base = dict(condition=" · ".join(str(x) for x in key if x), unit="%")
        if len(rows) > 1:
            tested = neighbour_steps(groups)
            omnibus = tested.omnibus
            bests.append(tested.best)
            nss.append(ns)
            body.append([cond, f"all {len(rows)}: Kruskal–Wallis", n_cell(*ns),
                         DASH if omnibus.h is None else f"H = {omnibus.h:.1f}, df {omnibus.df}",
                         sig.p_text(omnibus.p), DASH, DASH, DASH, sig.verdict(omnibus.p)])
            records.append(record(name, run, test="kruskal-wallis", group_a=f"{len(rows)} groups",
                                  n_a=sum(ns), statistic=omnibus.h, df=omnibus.df, p=omnibus.p,
                                  verdict=sig.verdict(omnibus.p), note=omnibus.note, **base))
            for i in range(len(rows) - 1):
                fast, slow = rows[i], rows[i + 1]
                body.append([cond, f"{mechanism_label(fast)} ({median_cell(fast)}) < "
                                   f"{mechanism_label(slow)} ({median_cell(slow)})",
                             n_cell(ns[i], ns[i + 1]), "Dunn–Bonferroni", *step_cells(tested, i)])
                records += step_records(name, run, tested, i, rows, mechanism_label, **base)
        for r, g in zip(rows, groups):
            zero = sig.wilcoxon_zero(g)
            # a cost that cannot be negative "significantly" below 0 is
            # baseline drift, never a saving
            drift = (zero.p is not None and zero.p < sig.ALPHA and r["median"] < 0
                     and meaning.never_negative(r))
            verdict = meaning.DRIFT if drift else sig.verdict(zero.p)
            body.append([cond, f"{mechanism_label(r)} ({median_cell(r)}) vs 0", str(zero.n),
                         "Wilcoxon" if zero.statistic is None
                         else f"Wilcoxon T = {zero.statistic:g}",
                         sig.p_text(zero.p), DASH, DASH, DASH, verdict])
            records.append(record(name, run, test="wilcoxon-signed-rank",
                                  group_a=mechanism_label(r),
                                  group_b="0", target_a=r.get("target"), harness_a=r["harness"],
                                  n_a=zero.n, median_a=r["median"], statistic=zero.statistic,
                                  p=zero.p, verdict=verdict, note=zero.note, **base))
    null_text = ("The null loop (the bare timer, sampling nothing) is a group like the "
                 "mechanisms. " if has_null else
                 "This run's overhead experiment has no null-loop rows (it times each mechanism "
                 "against the bare workload; the null loop is measured only in the sampler's "
                 "self-report), so none is compared here. ")
    workload = next((k[0] for k in conditions if k[0]), None)
    caption = (f"{machine_caption(run)}. The sampler overhead's significance, after {CITE}: "
               f"per condition (where the sampler was pinned, wall or CPU time"
               + (f"; workload {workload}" if workload else "")
               + f"), each mechanism's group is its overhead per pair of runs (%), taken as "
               f"independent. {null_text}{normality_sentence(all_groups)}Kruskal–Wallis across "
               f"the mechanisms of a condition. Each step compares two mechanisms neighbouring "
               f"in median order: Dunn's test, two-sided, Bonferroni over all pairs of that "
               f"condition's mechanisms (scikit-posthocs; p, with best p_adj: the smallest it "
               f"could give that step, the two mechanisms' values separated from each other and "
               f"from the rest, with the data's ties); U p_adj: the Mann–Whitney U test of the "
               f"two alone, Bonferroni over the condition's steps; {DELTA_NOTE}. A step's "
               f"verdict is Dunn's at p_adj < {sig.ALPHA}, \"significant (U test)\" where only "
               f"the U test is. {small_n_sentence(bests, nss, 'mechanisms')}Each mechanism "
               f"against zero overhead: the Wilcoxon signed-rank test, two-sided, not adjusted "
               f"(zeros dropped: n counts the pairs tested); its \"not significant\" means the pairs "
               f"do not show an overhead distinguishable from none by that test; a "
               f"significant one below 0 says \"{meaning.DRIFT}\" (a sampler cannot speed a "
               f"workload up: the bare runs it is paired with moved). {CI_CRITERION}")
    return Table(name=name, key=f"overhead-tests-{labels.slug(run.label)}",
                 title=f"Sampler overhead, tested, {run.label}", caption=caption.strip(),
                 columns=["condition", "comparison (median)", "n", "test", "p", "best p_adj",
                          "U p_adj", "Cliff's delta", "verdict"],
                 align="llrlrrrll", body=body, footnotes=[], csv_columns=STATS_CSV,
                 records=records)


# ---- machines side by side --------------------------------------------------------------------

def machines_table(runs: list[Run]) -> Table | None:
    """A quantity measured ok on two machines or more: is one faster? Each
    test's p is adjusted by Holm across the table's quantities: the
    Kruskal–Wallis tests as one family, each pair of machines' tests (U, or
    Dunn–Bonferroni within a quantity) as another."""
    if len(runs) < 2:
        return None
    keys, per_run = report_tables_compare.machine_quantities(runs)
    tags = [f"({i + 1})" for i in range(len(runs))]  # as the machines table numbers them
    name = "machines-tests"
    lines = []  # (family, p for Holm, body line without Holm and verdict, record)

    def who(i, row):
        target = labels.short_target(row.get("target"))
        return tags[i] + (f" {target}" if target else "") + pairing.status_words(row)

    for key in keys:
        found = [(i, f[key]) for i, f in enumerate(per_run) if samples(f.get(key))]
        if len(found) < 2:
            continue
        quantity = pairing.quantity_label(key, with_harness=True)
        groups = {i: samples(r) for i, r in found}
        unit = found[0][1]["unit"]
        if len(found) == 2:
            pairs = [(found[0], found[1], None)]
        else:
            omnibus = sig.kruskal_wallis(list(groups.values()))
            dunn = sig.dunn_bonferroni(list(groups.values()))
            ns = [len(g) for g in groups.values()]
            lines.append(("kruskal-wallis", omnibus.p,
                          [quantity, "all " + ", ".join(tags[i] for i in groups), n_cell(*ns),
                           "Kruskal–Wallis", sig.p_text(omnibus.p)],
                          record(name, None, condition=quantity, test="kruskal-wallis",
                                 group_a=", ".join(runs[i].label for i in groups), n_a=sum(ns),
                                 unit=unit, statistic=omnibus.h, df=omnibus.df, p=omnibus.p,
                                 note=omnibus.note)))
            pairs = [(found[a], found[b], dunn.p(a, b))
                     for a in range(len(found)) for b in range(a + 1, len(found))]
        for (i, ri), (j, rj), p_dunn in pairs:
            family = (min(i, j), max(i, j))
            if ri["median"] > rj["median"]:
                (i, ri), (j, rj) = (j, rj), (i, ri)
            pair = sig.mann_whitney(groups[j], groups[i])
            p = pair.p if p_dunn is None else p_dunn
            test = "Mann–Whitney U" if p_dunn is None else "Dunn–Bonferroni"
            lines.append((family, p,
                          [quantity, f"{who(i, ri)} ({median_cell(ri)}) < "
                                     f"{who(j, rj)} ({median_cell(rj)})",
                           n_cell(len(groups[i]), len(groups[j])), test, sig.p_text(p),
                           sig.delta_text(pair.effect)],
                          record(name, None, condition=quantity,
                                 test="mann-whitney-u" if p_dunn is None else "dunn-bonferroni",
                                 group_a=runs[i].label, group_b=runs[j].label,
                                 target_a=ri.get("target"), target_b=rj.get("target"),
                                 harness_a=ri["harness"], harness_b=rj["harness"],
                                 n_a=len(groups[i]), n_b=len(groups[j]), median_a=ri["median"],
                                 median_b=rj["median"], unit=unit,
                                 method=pair.method if p_dunn is None else None,
                                 statistic=pair.u if p_dunn is None else None,
                                 p=pair.p if p_dunn is None else None, p_adj=p_dunn,
                                 pairs_adjusted=(len(found) * (len(found) - 1) // 2
                                                 if p_dunn is not None else None),
                                 delta=pair.effect.delta, magnitude=pair.effect.magnitude,
                                 note=pair.note)))
    if not lines:
        return None
    body, records = [], []
    families = {f for f, *_ in lines}
    adjusted = {}
    for f in families:
        members = [n for n, line in enumerate(lines) if line[0] == f]
        for n, p in zip(members, holm([lines[n][1] for n in members])):
            adjusted[n] = (p, sum(1 for m in members if lines[m][1] is not None))
    for n, (family, p, cells, rec) in enumerate(lines):
        p_holm, size = adjusted[n]
        if family == "kruskal-wallis":
            cells = cells + [DASH]  # no effect size across k machines
        body.append(cells[:5] + [sig.p_text(p_holm)] + cells[5:] + [sig.verdict(p_holm)])
        rec.update(p_holm=p_holm, holm_tests=size, verdict=sig.verdict(p_holm))
        records.append(rec)
    quantities = len({line[2][0] for line in lines})
    legend = "; ".join(f"{t} {r.label} (run {r.run_id})" for t, r in zip(tags, runs))
    caption = (f"Machines compared, after {CITE}: {legend}. For each quantity measured on two "
               f"machines or more (the machines table's rows; each machine's own target shown "
               f"after its number), the faster machine first. Two machines: the Mann–Whitney U "
               f"test, two-sided (exact for untied samples of up to {sig.EXACT_MAX_N} values, "
               f"else the normal approximation; the CSV's method column says which); three or "
               f"more: Kruskal–Wallis, then Dunn's test, two-sided, Bonferroni over all pairs "
               f"of machines (scikit-posthocs). {quantities} quantities are tested, so the p "
               f"values are adjusted across them by Holm's step-down method (Holm p_adj; the "
               f"Kruskal–Wallis tests as one family, each pair of machines' tests as another), "
               f"and the verdict is Holm p_adj < {sig.ALPHA}: without it, about "
               f"{sig.ALPHA * quantities:.1f} of {quantities} tests would read significant by "
               f"chance alone where no machine differs. Each group is the row's repetitions, "
               f"taken as independent; {DELTA_NOTE}.")
    return Table(name=name, key="machines-tests", title="Machines side by side, tested",
                 caption=caption, columns=["quantity", "faster < slower (median)", "n", "test",
                                           "p", "Holm p_adj", "Cliff's delta", "verdict"],
                 align="llrlrrll", body=body, footnotes=[], csv_columns=STATS_CSV,
                 records=records)
