"""The overhead experiment (make bench-overhead, part of bench-all): what
the 1 kHz sampler costs a real workload.

hyperfine times a fixed CPU-bound workload (stress-ng, two matrix-product
workers, sized to workload_s() seconds on this machine) on its own and while
`raplbench-sample --mechanism M` samples at 1 kHz in the background, for
each mechanism that samples here: the sampler is started before the timed
run and stopped after it (steady state, as the papers run their tools
beside NAS benchmarks), so its start-up (loading the BPF program takes
about 0.1 s) does not count. The conditions are interleaved: each round
times the bare workload and the workload under each mechanism once, in an
order that alternates from round to round, after one warm-up round; ROUNDS
rounds. Per round, overhead = 100 * (t_sampled / t_bare - 1), so slow
drifts of the machine cancel within a round. Rows: metric overhead_pct
(harness hyperfine, path sampler, op the mechanism), one sample per round;
the hyperfine JSON of every timed run is kept in raw/hyperfine/.
"""

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

from results import rows, sampler

HARNESS = "hyperfine"
ROUNDS = 10


def workload_s(quick: bool) -> float:
    return 0.3 if quick else 5.0


def workload(ops: int) -> list[str]:
    return ["stress-ng", "--cpu", "2", "--cpu-method", "matrixprod", "--cpu-ops", str(ops),
            "--quiet"]


def calibrate(target_s: float) -> int:
    """The --cpu-ops count that takes about target_s seconds here."""
    ops = 500
    while True:
        start = time.monotonic()
        subprocess.run(workload(ops), check=True, capture_output=True)
        took = time.monotonic() - start
        if took >= 0.2 or ops >= 10_000_000:
            return max(1, round(ops * target_s / took))
        ops *= 4


def time_once(command: list[str], out: Path) -> float:
    """One hyperfine run of `command` (no shell); its wall time in s."""
    cmd = ["hyperfine", "-N", "--runs", "1", "--style", "none", "--export-json", str(out),
           " ".join(command)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.read_text())["results"][0]["times"][0]


class BackgroundSampler:
    """raplbench-sample on `mechanism`, running until stopped; ready once it
    says on stderr that it is sampling."""

    def __init__(self, mechanism: str, csv: Path):
        self.proc = subprocess.Popen(
            [str(sampler.BINARY), "--mechanism", mechanism, "--output", str(csv),
             "--duration", "3600"], stderr=subprocess.PIPE, text=True)
        # "raplbench-sample: sampling ..." once it samples; lines before it
        # name dead counters (it still samples), or say why it cannot start
        said = []
        while line := self.proc.stderr.readline():
            if line.startswith("raplbench-sample: sampling"):
                return
            said.append(line.strip())
        self.stop()
        raise RuntimeError(f"raplbench-sample --mechanism {mechanism} did not start "
                           f"sampling: {' '.join(said) or 'no output'}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        self.proc.communicate(timeout=30)  # drains stderr: the closing summary


def one_round(base: list[str], mechanisms: list[str], order: list[int], raw_dir: Path,
              tag: str) -> dict[int, float]:
    """Times the bare workload (index 0) and the workload under each
    mechanism (index i >= 1) once, in `order`; {index: seconds}."""
    times = {}
    for i in order:
        out = raw_dir / "hyperfine" / f"{tag}-{'bare' if i == 0 else mechanisms[i - 1]}.json"
        if i == 0:
            times[i] = time_once(base, out)
            continue
        background = BackgroundSampler(mechanisms[i - 1],
                                       raw_dir / f"overhead-{mechanisms[i - 1]}.csv")
        try:
            times[i] = time_once(base, out)
        finally:
            background.stop()
    return times


def run(common: dict, raw_dir: Path, quick: bool, mechanisms: dict[str, str | None]) -> list[dict]:
    """`mechanisms`: {mechanism: stand_in} of those that sample here."""
    def unavailable(op, why):
        return rows.not_ok_row(common, harness=HARNESS, path="sampler", op=op, target=None,
                               cpu=None, target_cpu=None, metric="overhead_pct", unit="%",
                               reason=why, status="unavailable")

    missing = [tool for tool in ("hyperfine", "stress-ng") if shutil.which(tool) is None]
    if missing:
        why = f"{' and '.join(missing)} not installed (apt-get install {' '.join(missing)})"
        return [unavailable(m, why) for m in sampler.MECHANISMS]
    ops = calibrate(workload_s(quick))
    base = workload(ops)
    target = f"stress-ng --cpu 2 --cpu-method matrixprod --cpu-ops {ops}"
    names = list(mechanisms)
    (raw_dir / "hyperfine").mkdir(exist_ok=True)
    print(f"  workload: {target} (~{workload_s(quick)} s); {ROUNDS} rounds, bare and under "
          f"{', '.join(names)}, interleaved", flush=True)
    one_round(base, names, list(range(len(names) + 1)), raw_dir, "warmup")
    per_mechanism = {m: [] for m in names}
    for r in range(ROUNDS):
        order = list(range(len(names) + 1))
        if r % 2:
            order.reverse()
        times = one_round(base, names, order, raw_dir, f"round-{r:02d}")
        for i, m in enumerate(names, 1):
            per_mechanism[m].append(100.0 * (times[i] / times[0] - 1.0))
        print(f"  round {r + 1}/{ROUNDS}: bare {times[0]:.3f} s; " + ", ".join(
            f"{m} {per_mechanism[m][-1]:+.2f}%" for m in names), flush=True)
    out = [rows.measured_row(common, harness=HARNESS, path="sampler", op=m, target=target,
                             cpu=None, target_cpu=None, metric="overhead_pct", unit="%",
                             samples=per_mechanism[m], stand_in=mechanisms[m]) for m in names]
    out += [unavailable(m, "the sampler cannot sample here (see its sampler row)")
            for m in sampler.MECHANISMS if m not in mechanisms]
    return out
