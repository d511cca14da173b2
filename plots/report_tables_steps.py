"""The procedure of Diamond & Stoico 2026 (section 3.4) over a family of
groups in median order, as the report's significance tables
(report_tables_stats.py) write it: Kruskal–Wallis across the groups,
Dunn–Bonferroni over all pairs with the smallest p_adj it could give each
neighbouring step, the Mann–Whitney U test of each neighbouring pair alone,
Holm across a table's families; their records, cells and the sentences
that explain them. The tests themselves are results/significance.py's.
"""

import dataclasses

from statsmodels.stats.multitest import multipletests

from results import significance as sig
from results import table as text_table

from plots.runs import Run


CITE = "Diamond & Stoico 2026"
STATS_CSV = ["table", "machine", "run_id", "condition", "test", "group_a", "group_b",
             "target_a", "target_b", "harness_a", "harness_b", "n_a", "n_b", "median_a",
             "median_b", "unit", "method", "statistic", "df", "p", "p_adj", "pairs_adjusted",
             "best_p_adj", "p_holm", "holm_tests", "delta", "magnitude", "verdict", "note"]
# ASCII signs and no Greek letter in captions and cells: the LaTeX rendering
# (plots/tables_latex.py) drops characters it has no spelling for
DELTA_NOTE = ("Cliff's delta is of the slower group against the faster (P(slower > faster) - "
              "P(slower < faster), from the Mann–Whitney U), its magnitude after Romano et al. "
              "2006 (|delta| < 0.147 negligible, < 0.33 small, < 0.474 medium, else large)")


def median_cell(row: dict) -> str:
    return text_table.median_and_interval(row)[0]


def n_cell(*ns: int) -> str:
    return "/".join(str(n) for n in ns)


def record(table: str, run: Run | None, **fields) -> dict:
    return {"table": table, "machine": run.label if run else None,
            "run_id": run.run_id if run else None, **fields}


def normality_sentence(groups: list[list[float]]) -> str:
    """How many groups Shapiro–Wilk rejects normality in, and so why rank tests."""
    results = [sig.shapiro_wilk(g) for g in groups]
    tested = [r for r in results if r.rejects is not None]
    rejected = sum(1 for r in tested if r.rejects)
    untested = len(results) - len(tested)
    text = (f"Shapiro–Wilk rejects normality at {sig.ALPHA} in {rejected} of {len(tested)} "
            f"groups")
    if untested:
        text += f" ({untested} not testable: fewer than 3 values or all equal)"
    if rejected:
        text += ", so the groups are compared with rank tests, as in " + CITE
    else:
        text += ("; rank tests are used all the same, as in " + CITE + ", for one procedure "
                 "on every machine (with few repetitions Shapiro–Wilk has little power)")
    return text + ". "


def small_n_sentence(bests: list[list[float]], nss: list[list[int]], noun: str) -> str:
    """Where Dunn–Bonferroni cannot call a step significant even when its two
    groups (`noun`: "rungs", "mechanisms") are fully separated: the smallest
    p_adj it could give, computed. One list of best p_adj and of group sizes
    per family (a ladder, an overhead condition)."""
    best = [b for family in bests for b in family]
    if not best:
        return ""
    ks = sorted({len(ns) for ns in nss if len(ns) > 1})
    every_n = [n for ns in nss for n in ns]
    k_text = f"{ks[0]}" if len(ks) == 1 else f"{ks[0]} to {ks[-1]}"
    n_text = (f"n = {every_n[0]}" if len(set(every_n)) == 1
              else f"n = {min(every_n)} to {max(every_n)}")
    floor = min(best)
    if floor >= sig.ALPHA:
        return (f"Small n: with {k_text} groups of {n_text}, Dunn–Bonferroni cannot call a "
                f"step significant even when its two {noun} are separated from each other and "
                f"from the rest: such neighbours get p_adj ≥ {sig.p_text(floor)} (best "
                f"p_adj); their difference is tested by the U test of the pair alone. ")
    unreachable = sum(1 for b in best if b >= sig.ALPHA)
    if unreachable:
        return (f"Small n: with {k_text} groups of {n_text}, {unreachable} of {len(best)} steps "
                f"cannot reach p_adj < {sig.ALPHA} in Dunn's test even when their {noun} are "
                f"separated from each other and from the rest (best p_adj). ")
    return ""


@dataclasses.dataclass(frozen=True)
class Steps:
    """The tests of a family of groups in median order (a ladder, an overhead
    condition): Kruskal–Wallis across them all, Dunn–Bonferroni over all
    pairs, and for each neighbouring pair (i, i + 1) the smallest p_adj
    Dunn's test could give it, the Mann–Whitney U test of the pair alone
    (slower against faster) and its p, Bonferroni over the steps."""
    omnibus: sig.Omnibus
    dunn: sig.Dunn
    best: list[float]
    pairs: list[sig.TwoSample]
    u_adj: list[float | None]

    def verdict(self, i: int) -> str:
        """Step i's verdict: Dunn's; "significant (U test)" where only the
        pair's own test is."""
        p_dunn, p_u = self.dunn.p(i, i + 1), self.u_adj[i]
        if sig.verdict(p_dunn) == "significant":
            return "significant"
        if sig.verdict(p_u) == "significant":
            return "significant (U test)"
        return "not significant" if p_dunn is not None or p_u is not None else "not tested"


def neighbour_steps(groups: list[list[float]]) -> Steps:
    ns = [len(g) for g in groups]
    ties = sig.dunn_tie_sum(groups)  # the bound counts the ties Dunn's test corrects for
    steps = len(groups) - 1
    pairs = [sig.mann_whitney(groups[i + 1], groups[i]) for i in range(steps)]
    return Steps(sig.kruskal_wallis(groups), sig.dunn_bonferroni(groups),
                 [sig.best_dunn_p_adj(ns[i], ns[i + 1], ns, ties) for i in range(steps)],
                 pairs, [None if p.p is None else min(1.0, p.p * steps) for p in pairs])


def step_records(name: str, run: Run, tested: Steps, i: int, rows: list[dict], label,
                 **base) -> list[dict]:
    """Step i's two records, rows[i] against rows[i + 1] (their groups named by
    `label`): Dunn–Bonferroni (with the best p_adj) and the U test."""
    pair, dunn, steps = tested.pairs[i], tested.dunn, len(tested.pairs)
    fast, slow = rows[i], rows[i + 1]
    common = dict(group_a=label(fast), group_b=label(slow), target_a=fast.get("target"),
                  target_b=slow.get("target"), harness_a=fast["harness"],
                  harness_b=slow["harness"], n_a=pair.n_y, n_b=pair.n_x,
                  median_a=fast["median"], median_b=slow["median"],
                  delta=pair.effect.delta, magnitude=pair.effect.magnitude, **base)
    return [record(name, run, test="dunn-bonferroni", p_adj=dunn.p(i, i + 1),
                   pairs_adjusted=dunn.pairs, best_p_adj=tested.best[i],
                   verdict=sig.verdict(dunn.p(i, i + 1)), note=dunn.note, **common),
            record(name, run, test="mann-whitney-u", method=pair.method, statistic=pair.u,
                   p=pair.p,
                   p_adj=tested.u_adj[i], pairs_adjusted=steps,
                   verdict=sig.verdict(tested.u_adj[i]), note=pair.note, **common)]


def step_cells(tested: Steps, i: int) -> list[str]:
    """Dunn p_adj, best p_adj, U p_adj, Cliff's delta, verdict."""
    return [sig.p_text(tested.dunn.p(i, i + 1)), sig.p_text(tested.best[i]),
            sig.p_text(tested.u_adj[i]), sig.delta_text(tested.pairs[i].effect),
            tested.verdict(i)]


def holm(ps: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment (statsmodels multipletests, method="holm")
    over the p values that exist; None stays None."""
    tested = [i for i, p in enumerate(ps) if p is not None]
    out: list[float | None] = [None] * len(ps)
    if tested:
        adjusted = multipletests([ps[i] for i in tested], method="holm")[1]
        for i, p in zip(tested, adjusted):
            out[i] = float(p)
    return out
