"""The 1 kHz reference sampler's self-report, on an idle machine (bench-all
step "sampler"): raplbench-sample runs on each mechanism with --report,
which holds its rate, interval jitter, missed ticks and CPU time per
sample, the same for the null sampler (the bare timer loop), and the
sampler above the null sampler, so the sampler is judged against the floor
the machine itself sets (a VM delays timers).

The run alternates PAIRS windows of the sampler with as many of the null
sampler, the order within a pair alternating (AB BA AB ...) so that a drift
of the machine cancels: 10 windows of 1 s each (0.1 s under QUICK). Every
row has one sample per window (n = PAIRS); jitter_us is each window's
median interval error. Three kinds of rows per mechanism, told apart by
their target (`role`):

- the sampler: "<what it reads> @ 1000 Hz";
- the null sampler: "null: bare timerfd loop @ 1000 Hz" (for ebpf and
  kernel, their in-kernel timer reading nothing: "null: bare bpf_timer
  program @ 1000 Hz", the ksample module's timer in null mode);
- the sampler above the null sampler: "above null: <the sampler's target>",
  rate_hz and cpu_us_per_sample, one sample per pair (sampler window minus
  its null window), with the sampler's stand-in and verdict.

A mechanism whose counters cannot be opened here gets an "unavailable" row
with the sampler's own explanation.

The kernel mechanism samples through the ksample module (kbench/ksample.h):
it is loaded with kbench/load ksample for its run alone and always removed
after (rmmod ksample), also when the run fails or is interrupted
(results/ksample_module.py; the load's and rmmod's output go to
raw/ksample.log). Where the module cannot be loaded (no root, no module
support, no headers: these development VMs) its row is "unavailable" with
the load script's reason, as kbench's rows are; a load that fails otherwise
(a broken build) gives an "error" row. Its null sampler ("null: ...") is
the same module's timer without the MSR read.

The self-report rows are taken as the sampler wrote them: schema 2 rows carry
the liveness verdict of the energy counters the mechanism reads (the worst of
them, with a note naming each counter that is not live; null for the null
sampler), which the report shows beside the mechanism's rate. A sampler
built before schema 2 writes schema 1 rows, which still validate (verdict
unknown). The rows written here for a mechanism that could not run have no
verdict (null).
"""

import json
from pathlib import Path

from results import child, ksample_module, registry, rows

HARNESS = "sampler"
MECHANISMS = registry.MECHANISMS
REPO = Path(__file__).resolve().parent.parent
BINARY = REPO / "target" / "release" / "raplbench-sample"


# windows of each loop per mechanism (raplbench-sample --pairs)
PAIRS = 10
# the target prefixes of the null sampler's rows and of the sampler's rows
# above it (rbench/src/bin/raplbench-sample/report.rs writes them)
NULL_PREFIX = "null: "
ABOVE_NULL_PREFIX = "above null: "
SAMPLER, NULL, ABOVE_NULL = "sampler", "null", "above null"


def duration_s(quick: bool) -> float:
    """Seconds of sampling per mechanism, PAIRS windows of 1 s (0.1 s under
    QUICK); the null sampler runs as long again."""
    return PAIRS * (0.1 if quick else 1.0)


def role(row: dict) -> str:
    """SAMPLER, NULL or ABOVE_NULL: which of the three a sampler row is, by
    its target (a row without a target, e.g. an unavailable mechanism, is
    the sampler's)."""
    target = row.get("target") or ""
    if target.startswith(NULL_PREFIX):
        return NULL
    if target.startswith(ABOVE_NULL_PREFIX):
        return ABOVE_NULL
    return SAMPLER


EXIT_LOST = 3  # raplbench-sample's exit status for a run that lost samples


def self_report(mechanism: str, raw_dir: Path, run_id: str, machine_json: Path,
                seconds: float) -> tuple[list[dict], str | None, list[str]]:
    """Runs the sampler on `mechanism`: (its rows, None, its summary lines),
    or ([], why not, [])."""
    report = raw_dir / f"sampler-{mechanism}.jsonl"
    cmd = [str(BINARY), "--mechanism", mechanism, "--duration", str(seconds),
           "--pairs", str(PAIRS), "--output", str(raw_dir / f"sampler-{mechanism}.csv"),
           "--report", str(report), "--machine", str(machine_json), "--run-id", run_id]
    if not BINARY.exists():
        return [], f"{BINARY} not built: run make build", []
    try:
        done = child.run(cmd, capture_output=True, text=True)
    except child.TimedOut as e:
        return [], str(e), []
    (raw_dir / f"sampler-{mechanism}.log").write_text(" ".join(cmd) + "\n" + done.stderr)
    said = [line.removeprefix("raplbench-sample: ") for line in done.stderr.splitlines()
            if line.startswith("raplbench-sample: ")]
    # 3: it sampled to the end but lost samples; the report stands (its rate
    # shows the loss) and the lines said count them
    if done.returncode not in (0, EXIT_LOST):
        return [], (said or ["(no message)"])[-1], []
    got = [json.loads(line) for line in report.read_text().splitlines() if line.strip()]
    return got, None, said


def run_one(mechanism: str, common: dict, raw_dir: Path, machine_json: Path,
            quick: bool) -> list[dict]:
    """The rows of one mechanism: its self-report, or one row saying why
    not. The kernel mechanism runs with the ksample module loaded
    (ksample_module.around), which is removed again before this returns."""
    status = "unavailable"
    with ksample_module.around(mechanism, raw_dir / "ksample.log") as not_loaded:
        if not_loaded is not None:
            got, why, said, status = [], not_loaded.reason, [], not_loaded.status
        else:
            got, why, said = self_report(mechanism, raw_dir, common["run_id"], machine_json,
                                         duration_s(quick))
    for line in said:
        print("  " + line, flush=True)
    if why is None:
        return got
    print(f"  {mechanism}: {status}: {why}", flush=True)
    return [rows.not_ok_row(common, harness=HARNESS, path="sampler", op=mechanism,
                            target=None, cpu=None, target_cpu=None, metric="rate_hz",
                            unit="Hz", reason=why, status=status)]


def run_all(common: dict, raw_dir: Path, machine_json: Path, quick: bool) -> list[dict]:
    out = []
    for mechanism in MECHANISMS:
        out += run_one(mechanism, common, raw_dir, machine_json, quick)
    return out


def stand_ins(sampler_rows) -> dict[str, str | None]:
    """{mechanism: stand_in} of the mechanisms that sampled here (from the
    sampler's own rate rows: not the null sampler's, nor those above it)."""
    return {r["op"]: r["stand_in"] for r in sampler_rows
            if r["status"] == "ok" and r["metric"] == "rate_hz" and role(r) == SAMPLER}
