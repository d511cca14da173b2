"""The gate's second question: did an energy counter die (or come alive)
between the baseline and the current run? The changes, what fails and
why: ci/README.md, "How it decides", 7. Counters that died.
"""

import dataclasses

from results import liveness
from results.schema import clip

FAIL, WARN = "fail", "warn"
POLICIES = (FAIL, WARN)  # ci/gate.toml's [liveness] counter_died

DIED, REVIVED, STILL_DEAD = "died", "came-alive", "still-dead"
KNOWN = (liveness.LIVE, *liveness.DEAD)


@dataclasses.dataclass(frozen=True)
class Change:
    """A counter whose verdict differs between the baseline and the current run."""
    baseline: dict   # the baseline row
    current: dict    # the current row
    before: str      # the baseline row's liveness verdict
    after: str       # the current row's
    kind: str        # DIED, REVIVED or STILL_DEAD
    fails: bool


@dataclasses.dataclass(frozen=True)
class Report:
    changes: list            # [Change]
    predates: int            # pairs whose baseline (or current) row is of schema 1
    policy: str              # FAIL or WARN

    @property
    def fails(self) -> bool:
        return any(c.fails for c in self.changes)

    def of_kind(self, kind: str) -> list:
        return [c for c in self.changes if c.kind == kind]


def _kind(before: str, after: str) -> str | None:
    if before == after:
        return None
    if before == liveness.LIVE:
        return DIED
    if after == liveness.LIVE:
        return REVIVED
    return STILL_DEAD


def compare_pairs(pairs, policy: str) -> Report:
    """pairs: [(baseline row, current row)] of the same key and machine."""
    changes, predates = [], 0
    for b, c in pairs:
        before, after = liveness.verdict(b), liveness.verdict(c)
        if liveness.UNKNOWN in (before, after):
            predates += 1
            continue
        if before not in KNOWN or after not in KNOWN:
            continue  # no energy counter on one side (a stand-in flip is a missing row)
        kind = _kind(before, after)
        if kind is not None:
            changes.append(Change(b, c, before, after, kind, fails=kind == DIED and policy == FAIL))
    return Report(changes, predates, policy)


def json_entries(report: Report, row_id) -> list[dict]:
    return [{"id": row_id(c.baseline), "change": c.kind, "baseline": c.before,
             "current": c.after, "current_note": c.current.get("liveness_note"),
             "fails": c.fails} for c in report.changes]


def markdown_sections(report: Report, label, table) -> list[str]:
    """Markdown lines (with their ### titles) for the summary; [] when there
    is nothing to say. label(row) names a row, table(header, lines) renders."""
    out = []
    died = report.of_kind(DIED)
    if died:
        title = ("❌ Rows whose counter died" if report.policy == FAIL else
                 "⚠️ **Rows whose counter died** (a warning: `[liveness] counter_died = \"warn\"`)")
        out += ["", f"### {title} ({len(died)})", "",
                "Live in the baseline, frozen or without an energy unit now: the route is "
                "still timed, but it yields no energy any more.", "",
                *table(("row", "baseline", "current", "why"),
                       [(label(c.baseline), c.before, c.after,
                         c.current.get("liveness_note") or "") for c in died])]
    others = report.of_kind(REVIVED) + report.of_kind(STILL_DEAD)
    if others:
        out += ["", f"### Counter verdicts that changed ({len(others)})", "",
                *table(("row", "baseline", "current"),
                       [(label(c.baseline), c.before, c.after) for c in others])]
    if report.predates:
        out += ["", f"Liveness not compared for {report.predates} row pairs: one side predates "
                    "liveness probing (schema 1), so its verdict is unknown."]
    return out


def failure_lines(report: Report, label) -> list[str]:
    return [f"gate: counter died: {clip(label(c.baseline))}: {c.before} → {c.after}: "
            f"{clip(c.current.get('liveness_note') or '')}".rstrip(": ")
            for c in report.of_kind(DIED) if c.fails]
