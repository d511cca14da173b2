"""What the gate reads and decides, as data: Run (one results.jsonl,
validated) and Verdict (the decision on every row, with what changed on the
machine); ci/gate.py makes them, ci/gate_report.py writes them out.
"""

import dataclasses
from pathlib import Path

from ci import gate_liveness
from ci.gate_config import Config, display
from results import runfile


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
                "timestamps": ts, "rows": len(self.rows)}


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

    @property
    def rounds(self) -> int:
        """Interleaved rounds compared (0: one run a side, samples compared)."""
        return len(self.baselines) if len(self.baselines) > 1 else 0

    @property
    def passed(self) -> bool:
        return not any(r.fails for r in self.results) and not self.liveness.fails

    def count(self, decision: str) -> int:
        return sum(r.decision == decision for r in self.results)
