"""The 1 kHz reference sampler's self-report, on an idle machine (bench-all
step "sampler"): raplbench-sample runs on each mechanism with --report,
PAIRS windows of the sampler alternating with as many of the null sampler
(the bare timer loop, the floor the machine sets), 1 s each (0.1 s under
QUICK), and writes them raw; report_rows builds the rows (rbench/README.md,
"The self-report"): for each loop its rate, interval jitter,
missed ticks and CPU time per sample, one sample per window (role
measured, and null for the null sampler), and the sampler above the null
sampler, one sample per pair (role above-null). The sampler's rows carry
the liveness verdict of the energy counters the mechanism reads (the
worst, with a note naming each counter that is not live); a mechanism
whose counters cannot be opened here gets an "unavailable" row with the
sampler's own explanation.

The kernel mechanism samples through the ksample module (kbench/ksample.h):
it is loaded with kbench/load ksample for its run alone and always removed
after (rmmod ksample), also when the run fails or is interrupted
(results/ksample_module.py; the load's and rmmod's output go to
raw/ksample.log). Where the module cannot be loaded (no root, no module
support, no headers: these development VMs) its row is "unavailable" with
the load script's reason, as kbench's rows are; a load that fails otherwise
(a broken build) gives an "error" row. Its null sampler (role "null") is
the same module's timer without the MSR read.

raplbench-sample also runs in the background of other steps (the overhead
experiment, results/overhead.py; the idle cost, results/idle_cost.py):
Background starts it, is ready once its banner says it samples, and stops
it with SIGINT, failing loudly when it could not start or died before it
was stopped (a dead sampler would show as no cost).
"""

import json
import os
import re
import signal
import subprocess
import threading
from pathlib import Path

from results import child, ksample_module, registry, rows

HARNESS = "sampler"
MECHANISMS = registry.MECHANISMS
REPO = Path(__file__).resolve().parent.parent
BINARY = REPO / "target" / "release" / "raplbench-sample"


# windows of each loop per mechanism (raplbench-sample --pairs)
PAIRS = 10
# the kinds of window in the report: the sampler's, the null sampler's
SAMPLER, NULL = "sampler", "null"


def duration_s(quick: bool) -> float:
    """Seconds of sampling per mechanism, PAIRS windows of 0.5 s (500
    samples at 1 kHz; 0.05 s under QUICK); the null sampler runs as long
    again. A row's n is its windows, whatever their length."""
    return PAIRS * (0.05 if quick else 0.5)


EXIT_LOST = 3  # raplbench-sample's exit status for a run that lost samples


# ---- the report's windows -> rows --------------------------------------------------------------

def rate_hz(window: dict) -> float:
    """Samples per second: the samples taken within the window over its
    wall time."""
    return window["samples"] * 1e9 / max(window["wall_ns"], 1)


def cpu_us_per_sample(window: dict) -> float | None:
    """CPU µs per sample taken since the window's clock started (its CPU
    time runs until the last sample is written); None without one."""
    n = window["samples_since_start"]
    return window["cpu_ns"] / n / 1e3 if n > 0 else None


def jitter_us(window: dict) -> float | None:
    """The window's median interval error |interval - period|, µs; None
    with fewer than two samples."""
    ns = window["interval_error_p50_ns"]
    return None if ns is None else ns / 1e3


def missed_ticks(window: dict) -> float:
    return float(window["missed_ticks"])


# each loop's metrics, one sample per window; above the null sampler, one per pair
METRICS = {"rate_hz": rate_hz, "jitter_us": jitter_us, "missed_ticks": missed_ticks,
           "cpu_us_per_sample": cpu_us_per_sample}
ABOVE_NULL_METRICS = ("rate_hz", "cpu_us_per_sample")
NO_PAIR = "no pair of a sampler and a null window completed"


def _row(common: dict, doc: dict, subject: dict, role: str, metric: str, samples: list,
         reason: str, status: str = "error") -> dict:
    hz = doc["frequency_hz"]
    where = dict(harness=HARNESS, path="sampler", op=doc["mechanism"],
                 target=f"{subject['target']} @ {hz} Hz", role=role,
                 cpu=subject["cpu"], target_cpu=subject["target_cpu"],
                 stand_in=subject["stand_in"], liveness=subject["liveness"],
                 liveness_note=subject["liveness_note"], metric=metric,
                 unit=rows.METRIC_UNITS[metric])
    if samples:
        # what drove an in-kernel sampler (ebpf's trigger, perf-ring's group
        # design and what the kernel refused on the way) varies by machine
        trigger = {"trigger": doc["trigger"]} if doc.get("trigger") else None
        return rows.measured_row(common, **where, samples=samples, parameters=trigger)
    return rows.not_ok_row(common, **where, reason=reason, status=status)


def uncounted(doc: dict, metric: str) -> str | None:
    """Why the mechanism's `metric` is not measured (its CPU per tick, where
    the kernel samples in no thread's time: the registry's x-uncounted-cpu),
    or None."""
    if metric != "cpu_us_per_sample":
        return None
    why = registry.mechanism(doc["mechanism"]).uncounted_cpu
    return why and f"{doc['mechanism']}'s CPU per tick is not measured: {why}"


def report_rows(common: dict, doc: dict) -> list[dict]:
    """The rows of one raplbench-sample --report document: the sampler's,
    then (when a null window ran) the null sampler's and the sampler's
    above it. A row without a sample is an error row saying why."""
    windows = {kind: [w for w in doc["windows"] if w["kind"] == kind] for kind in (SAMPLER, NULL)}
    out = []
    for kind, subject, role in ((SAMPLER, doc["sampler"], rows.MEASURED),
                                (NULL, doc["null"], rows.NULL)):
        mine = windows[kind]
        if kind == NULL and not mine:
            break
        why = next((w["first_error"] for w in mine if w["first_error"]), "no sample was taken")
        for metric, value in METRICS.items():
            if not_here := uncounted(doc, metric):
                out.append(_row(common, doc, subject, role, metric, [], not_here, "unavailable"))
                continue
            samples = [v for v in map(value, mine) if v is not None]
            out.append(_row(common, doc, subject, role, metric, samples, why))
    if windows[NULL]:
        by_pair = {(w["pair"], w["kind"]): w for w in doc["windows"]}
        pairs = [(w, by_pair[w["pair"], NULL]) for w in windows[SAMPLER]
                 if (w["pair"], NULL) in by_pair]
        for metric in ABOVE_NULL_METRICS:
            if not_here := uncounted(doc, metric):
                out.append(_row(common, doc, doc["sampler"], rows.ABOVE_NULL, metric, [],
                                not_here, "unavailable"))
                continue
            value = METRICS[metric]
            diffs = [value(s) - value(n) for s, n in pairs
                     if value(s) is not None and value(n) is not None]
            out.append(_row(common, doc, doc["sampler"], rows.ABOVE_NULL, metric, diffs,
                            NO_PAIR))
    return out


def self_report(mechanism: str, raw_dir: Path, common: dict,
                seconds: float) -> tuple[list[dict], str | None, list[str]]:
    """Runs the sampler on `mechanism`: (its rows, None, its summary lines),
    or ([], why not, [])."""
    report = raw_dir / f"sampler-{mechanism}.json"
    cmd = [str(BINARY), "--mechanism", mechanism, "--duration", str(seconds),
           "--pairs", str(PAIRS), "--output", str(raw_dir / f"sampler-{mechanism}.csv"),
           "--report", str(report)]
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
    return report_rows(common, json.loads(report.read_text(encoding="utf-8"))), None, said


def run_one(mechanism: str, common: dict, raw_dir: Path, quick: bool) -> list[dict]:
    """The rows of one mechanism: its self-report, or one row saying why
    not. The kernel mechanism runs with the ksample module loaded
    (ksample_module.around), which is removed again before this returns."""
    status = "unavailable"
    with ksample_module.around(mechanism, raw_dir / "ksample.log") as not_loaded:
        if not_loaded is not None:
            got, why, said, status = [], not_loaded.reason, [], not_loaded.status
        else:
            got, why, said = self_report(mechanism, raw_dir, common, duration_s(quick))
    for line in said:
        print("  " + line, flush=True)
    if why is None:
        return got
    print(f"  {mechanism}: {status}: {why}", flush=True)
    return [rows.not_ok_row(common, harness=HARNESS, path="sampler", op=mechanism,
                            metric="rate_hz", reason=why, status=status)]


def run_all(common: dict, raw_dir: Path, quick: bool) -> list[dict]:
    """Every registered mechanism's rows."""
    return [row for m in MECHANISMS for row in run_one(m, common, raw_dir, quick)]


def own_rate_rows(sampler_rows) -> list[dict]:
    """The sampler's own ok rate_hz rows: one per mechanism that sampled here
    (not the null sampler's, nor those above it)."""
    return [r for r in sampler_rows
            if r["status"] == "ok" and r["metric"] == "rate_hz" and r["role"] == rows.MEASURED]


def stand_ins(sampler_rows) -> dict[str, str | None]:
    """{mechanism: stand_in} of the mechanisms that sampled here."""
    return {r["op"]: r["stand_in"] for r in own_rate_rows(sampler_rows)}


# --- raplbench-sample in the background (the overhead and idle-cost steps) --------------------

# mechanisms that sample in the kernel (the registry's x-in-kernel):
# raplbench-sample has no sampling thread to place (it refuses --cpu), only
# a drain thread, placed by affinity
IN_KERNEL = tuple(m for m in MECHANISMS if registry.mechanism(m).in_kernel)
START_TIMEOUT_S = 30.0  # before its banner, before it is killed
STOP_TIMEOUT_S = 30.0   # after SIGINT, before it is killed
SAY = "raplbench-sample: "  # how each of its stderr lines begins
BANNER_PREFIX = SAY + "sampling"  # its banner, once it samples (main.rs prints no other such line)
BANNER = re.compile(r"raplbench-sample: sampling (\S+) \((.*)\) at (\d+) Hz"
                    r"(?: on CPU ([\d,]+))?(?: \(.*\))?\s*$")


def parse_banner(line: str) -> tuple[str, int | None] | None:
    """The sampler's banner -> (its counters' label, the CPU its thread is
    pinned to, or None), or None for another line."""
    m = BANNER.match(line.strip())
    if not m:
        return None
    cpus = m.group(4)
    cpu = int(cpus) if cpus and "," not in cpus else None
    return m.group(2), cpu


class SamplerFailed(RuntimeError):
    """A background sampler did not start sampling, did not stop, died
    before it was stopped, or exited with a failure. str(): the command
    and everything it said; `reason`: the short form a row gives (its last
    line without the "raplbench-sample: " prefix, or what happened)."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = message if reason is None else reason


class Background:
    """raplbench-sample on `mechanism`, running until stopped: at
    `frequency` (None: its default), writing `output` (None: no output
    file, stdout discarded), pinned to `cpu` (None: where the scheduler
    puts it). Ready once its banner says it samples: `label` (its
    counters) and `cpu` (the CPU its sampling thread is pinned to, or
    None) come from the banner (both None for a banner parse_banner does
    not read). Lines before the banner name dead counters (it still
    samples) or say why it cannot start: SamplerFailed quotes them, also
    when it neither starts nor exits within start_timeout_s (it is killed).
    Its stderr is drained after the banner, so that it never blocks."""

    def __init__(self, mechanism: str, *, frequency: int | None = None,
                 duration_s: float = 3600, output: Path | None = None, cpu: int | None = None,
                 start_timeout_s: float = START_TIMEOUT_S,
                 stop_timeout_s: float = STOP_TIMEOUT_S):
        self.mechanism = mechanism
        self.stop_timeout_s = stop_timeout_s
        cmd = [str(BINARY), "--mechanism", mechanism]
        if frequency is not None:
            cmd += ["--frequency", str(frequency)]
        self.command = " ".join(["raplbench-sample", *cmd[1:]])  # as messages name it
        if output is not None:
            cmd += ["--output", str(output)]
        cmd += ["--duration", f"{duration_s:g}"]
        if cpu is not None and mechanism not in IN_KERNEL:  # see IN_KERNEL
            cmd += ["--cpu", str(cpu)]
        self.label: str | None = None
        self.cpu: int | None = None
        self.tail: list[str] = []  # what it says after the banner
        self.drain: threading.Thread | None = None
        # a session of its own (child.spawn): Ctrl-C reaches bench-all alone,
        # which stops the sampler (stop) on its way out
        self.proc = child.spawn(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            preexec_fn=None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu})))
        said = []
        # a sampler that neither starts nor exits is killed (readline then ends)
        watchdog = threading.Timer(start_timeout_s, self.proc.kill)
        watchdog.start()
        try:
            while line := self.proc.stderr.readline():
                if line.startswith(BANNER_PREFIX):
                    self.label, self.cpu = parse_banner(line) or (None, None)
                    self.drain = threading.Thread(target=self.tail.extend,
                                                  args=(self.proc.stderr,), daemon=True)
                    self.drain.start()
                    return
                said.append(line.strip())
            self.proc.wait()  # one that closed its stderr and runs on: the watchdog kills it
        except BaseException:  # interrupted while it starts: never left running
            self.proc.kill()
            self.proc.wait()
            child.release(self.proc)
            raise
        finally:
            watchdog.cancel()
        child.release(self.proc)
        self.proc.stderr.close()
        if self.proc.returncode == -signal.SIGKILL and not said:
            reason = f"did not start sampling within {start_timeout_s:g} s; killed"
            raise SamplerFailed(f"{self.command} {reason}", reason)
        reason = ([x.removeprefix(SAY) for x in said if x]
                  or [f"exited with status {self.proc.returncode}, no message"])[-1]
        raise SamplerFailed(f"{self.command} did not start sampling: "
                            f"{' '.join(x for x in said if x) or reason}", reason)

    def stop(self, check: bool = True, require_clean_exit: bool = False) -> int:
        """SIGINT, and its exit status once it exited. SamplerFailed when it
        did not stop within stop_timeout_s (it is killed: never left
        running behind a step); with `check`, also when it had died before
        (a dead sampler would show as no cost) and, with
        `require_clean_exit`, when its exit status is not a clean stop (0;
        130, stopped by SIGINT; EXIT_LOST, it missed ticks: its cost stands)."""
        died = self.proc.poll()
        if died is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            reason = f"did not stop within {self.stop_timeout_s:g} s of SIGINT; killed"
            raise SamplerFailed(f"{self.command} {reason}", reason) from None
        finally:
            child.release(self.proc)
            if self.drain is not None:
                self.drain.join(timeout=self.stop_timeout_s)
            self.proc.stderr.close()
        err = "".join(self.tail).strip()
        last = ([x.strip().removeprefix(SAY) for x in err.splitlines() if x.strip()]
                or ["no message"])[-1]
        status = self.proc.returncode
        if check and died is not None:
            raise SamplerFailed(f"{self.command} exited (status {died}) before it was stopped: "
                                f"{err or 'no output'}",
                                f"exited (status {died}) before it was stopped: {last}")
        if check and require_clean_exit and status not in (0, 128 + signal.SIGINT, EXIT_LOST):
            raise SamplerFailed(f"{self.command} exited with status {status}: "
                                f"{err or 'no output'}", f"exited with status {status}: {last}")
        return status
