"""What the gate reads and decides, as data: Run (one results.jsonl,
validated) and Verdict (the decision on every row, with what changed on the
machine); ci/gate.py makes them, ci/gate_report.py writes them out.
"""

import dataclasses
from pathlib import Path

from ci import gate_liveness
from ci.gate_config import Config, display
from results import rows, runfile


@dataclasses.dataclass
class Run:
    """One results.jsonl, validated: rows with their line numbers."""
    file: Path
    rows: list  # [(line_no, row)]

    @property
    def run_ids(self) -> list:
        return sorted({r["run_id"] for _, r in self.rows})

    def describe(self) -> dict:
        ts = sorted({r["timestamp"] for _, r in self.rows})
        return {"file": display(self.file), "run_ids": self.run_ids,
                "timestamps": ts, "rows": len(self.rows), "run": run_kind([self])}


def run_kind(runs) -> dict | None:
    """The mode and steps every measured row of `runs` records (rows.run_of)."""
    return rows.run_of(row for run in runs for _, row in run.rows)


@dataclasses.dataclass(frozen=True)
class Kinds:
    """The mode and steps of the two sides (run_kind). A verdict whose kinds
    differ was allowed to (--allow-mode-mismatch): run_gate refuses them
    otherwise."""
    baseline: dict | None = None
    current: dict | None = None

    @property
    def differ(self) -> bool:
        b, c = self.baseline, self.current
        return (b is not None and c is not None
                and (b["mode"] != c["mode"] or set(b["steps"]) != set(c["steps"])))

    def ran_only_in(self, side: str, step: str | None) -> bool:
        """The step ran on `side` ("baseline" or "current") and not on the other."""
        if not self.differ or step is None:
            return False
        this, other = ((self.baseline, self.current) if side == "baseline"
                       else (self.current, self.baseline))
        return step in this["steps"] and step not in other["steps"]


def load_run(path: Path) -> Run:
    """Validate a results.jsonl against the schema and read its rows.
    RunFileError listing every bad row as `file:line: field: message`."""
    loaded = runfile.load(path, show=display)
    return Run(file=loaded.path, rows=list(loaded.lines))


@dataclasses.dataclass
class Verdict:
    baseline: Run
    current: Run
    config: Config
    results: list
    environment: list      # environment_changes between the paired machines
    liveness: gate_liveness.Report  # counters that died or came alive
    shifts: dict           # harness -> gate_stats.Shift of its latency rows
    baselines: list = dataclasses.field(default_factory=list)  # every round's Run
    currents: list = dataclasses.field(default_factory=list)   # (one each: a single pair)
    kinds: Kinds = Kinds()

    @property
    def rounds(self) -> int:
        """Interleaved rounds compared (0: one run a side, samples compared)."""
        return len(self.baselines) if len(self.baselines) > 1 else 0

    @property
    def passed(self) -> bool:
        return not any(r.fails for r in self.results) and not self.liveness.fails

    def count(self, decision: str) -> int:
        return sum(r.decision == decision for r in self.results)
