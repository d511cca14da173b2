"""make soak: each sampler mechanism at 1 kHz for a long run under load
(issue 14; not in CI: ten minutes per mechanism):

    ci/soak [--minutes 10] [--mechanisms powercap,msr,perf,ebpf,kernel] [--no-stress]
            [--out DIR]

For each mechanism that samples on this machine, raplbench-sample runs at
1 kHz for --minutes with `stress-ng --cpu 0` (every CPU) beside it; the soak
checks that no sample was lost, that the sum of the sampler's delta_j is each
counter's own difference over the run (wraps included; stand-ins: the raw
steps), and that its resident memory stays flat (ci/README.md, "A long run
under load").

It writes soak.md and soak.json under --out (default results/runs/soak-<utc>)
and exits 0 when every mechanism that ran passed, 1 when one did not, 2 when
none could run.
"""

import argparse
import contextlib
import csv
import dataclasses
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from results import ksample_module, markdown, registry, rows, sampler

MECHANISMS = registry.MECHANISMS  # the sampler's, from the schema's registry
RSS_SLACK_KIB = 1024          # "flat": the end within 1 MiB of the start
SUM_TOLERANCE = 1e-9          # relative: a sum of floats against one product


@dataclasses.dataclass
class CounterCheck:
    """One counter of a run: the sampler's energy against the counter's."""
    source: str
    domain: str
    samples: int
    raw_advance: int           # last - first, plus a range per wrap
    wraps: int
    summed_j: float | None     # the sum of the sampler's delta_j; None: no energy (a stand-in)
    counter_j: float | None    # raw_advance x the unit

    @property
    def exact(self) -> bool | None:
        """Whether the sampler's sum is the counter's difference (to the
        rounding of a sum of floats); None for a counter without energy."""
        if self.summed_j is None or self.counter_j is None:
            return None
        return math.isclose(self.summed_j, self.counter_j, rel_tol=SUM_TOLERANCE, abs_tol=1e-12)


def counter_checks(csv_path: Path, range_of: Callable[[str], int]) -> list[CounterCheck]:
    """Per (source, domain) of a sampler CSV: its raw advance over the run
    (last - first, plus the range for each step back: a wrap; range_of:
    source -> the largest raw value) and, where the sampler wrote delta_j,
    their sum against that advance times the unit (delta_j / raw step of
    the first line with both): the sampler's differences, wraps included,
    against the counter's own."""
    first, last, top, wraps, summed, unit, lines = {}, {}, {}, {}, {}, {}, {}
    with open(csv_path, newline="", encoding="utf-8") as f:
        for rec in csv.DictReader(f):
            key = (rec["source"], rec["domain"])
            raw = int(rec["raw"])
            if key in last:
                step = raw - last[key] if raw >= last[key] else raw + top[key] + 1 - last[key]
                wraps[key] = wraps.get(key, 0) + (raw < last[key])
                if rec["delta_j"]:
                    summed[key] = summed.get(key, 0.0) + float(rec["delta_j"])
                    if step:
                        unit.setdefault(key, float(rec["delta_j"]) / step)
            else:
                first[key], top[key] = raw, range_of(key[0])
            last[key] = raw
            lines[key] = lines.get(key, 0) + 1
    out = []
    for key in first:
        n_wraps = wraps.get(key, 0)
        advance = last[key] - first[key] + n_wraps * (top[key] + 1)
        energy = key in summed
        out.append(CounterCheck(key[0], key[1], lines[key], advance, n_wraps,
                                summed[key] if energy else None,
                                advance * unit.get(key, 0.0) if energy else None))
    return out


def rss_kib(pid: int) -> int | None:
    """VmRSS of process `pid` in KiB, or None once it is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def counter_range(mechanism: str, source: str) -> int:
    """The largest raw value of a counter, where it wraps: an energy status
    MSR is 32 bits; a powercap zone says it (max_energy_range_uj); perf
    counts (also those the BPF program reads) are 64 bits. By the path the
    mechanism reads through (the registry's), not its name."""
    path = registry.mechanism(mechanism).path
    if path == "msr-dev":
        return 2**32 - 1
    if path == "powercap":
        with contextlib.suppress(OSError, ValueError):
            return int(Path("/sys/class/powercap", source, "max_energy_range_uj").read_text())
    return 2**64 - 1


@dataclasses.dataclass
class Soak:
    """One mechanism's soak."""
    mechanism: str
    ran: bool
    why_not: str = ""            # when it did not run
    exit_status: int | None = None
    summary: str = ""            # the sampler's summary line
    lost: int = 0                # dropped samples and failed reads
    rss_start_kib: int | None = None
    rss_end_kib: int | None = None
    rss_max_kib: int | None = None
    rss_span_s: float = 0.0      # from the first RSS reading to the last
    counters: list = dataclasses.field(default_factory=list)

    @property
    def rss_growth_kib_per_min(self) -> float | None:
        if self.rss_start_kib is None or self.rss_end_kib is None or self.rss_span_s <= 0:
            return None
        return (self.rss_end_kib - self.rss_start_kib) / self.rss_span_s * 60

    @property
    def rss_flat(self) -> bool:
        return (self.rss_start_kib is not None and self.rss_end_kib is not None
                and self.rss_end_kib - self.rss_start_kib <= RSS_SLACK_KIB)

    @property
    def passed(self) -> bool:
        return (self.ran and self.exit_status == 0 and self.lost == 0 and self.rss_flat
                and bool(self.counters) and all(c.exact is not False for c in self.counters))


def lost_samples(stderr: str) -> int:
    """The sampler's "N samples lost (...)" line, 0 without one."""
    for line in stderr.splitlines():
        words = line.removeprefix("raplbench-sample: ").split()
        if len(words) > 2 and words[1:3] == ["samples", "lost"] and words[0].isdigit():
            return int(words[0])
    return 0


def summary_line(stderr: str, mechanism: str) -> str:
    """The sampler's closing summary, "perf (msr/tsc/): 300 samples in ...",
    without its prefix; "" without one. A line naming a dead counter
    ("perf counter package-0/... is frozen: ...") comes before it."""
    return next((line.removeprefix("raplbench-sample: ") for line in stderr.splitlines()
                 if line.startswith(f"raplbench-sample: {mechanism} (")), "")


def soak_one(mechanism: str, seconds: float, out_dir: Path, stress: bool) -> Soak:
    """Runs one mechanism at 1 kHz for `seconds` (stress-ng beside it); the
    kernel mechanism with the ksample module loaded for it (and removed)."""
    with ksample_module.around(mechanism, out_dir / "ksample.log") as not_loaded:
        if not_loaded is not None:
            return Soak(mechanism, False, why_not=not_loaded.reason)
        return _soak_loaded(mechanism, seconds, out_dir, stress)


def _soak_loaded(mechanism: str, seconds: float, out_dir: Path, stress: bool) -> Soak:
    probe = subprocess.run([str(sampler.BINARY), "--mechanism", mechanism, "--duration", "0.2",
                            "--output", "/dev/null"], capture_output=True, text=True)
    if probe.returncode != 0:
        said = [ln for ln in probe.stderr.splitlines() if ln.strip()]
        return Soak(mechanism, False, why_not=(said[-1] if said else f"exit {probe.returncode}")
                    .removeprefix("raplbench-sample: "))
    csv_path = out_dir / f"{mechanism}.csv"
    load = (subprocess.Popen(["stress-ng", "--cpu", "0", "--timeout", f"{int(seconds) + 30}s",
                              "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if stress else None)
    result = Soak(mechanism, True)
    try:
        proc = subprocess.Popen([str(sampler.BINARY), "--mechanism", mechanism,
                                 "--frequency", "1000", "--duration", f"{seconds}",
                                 "--output", str(csv_path)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(min(1.0, seconds / 4))
        result.rss_start_kib = rss = rss_kib(proc.pid)
        result.rss_max_kib = rss
        first = time.monotonic()
        while proc.poll() is None:
            now = rss_kib(proc.pid)
            if now is not None:
                result.rss_end_kib = now
                result.rss_max_kib = max(result.rss_max_kib or 0, now)
                result.rss_span_s = time.monotonic() - first
            time.sleep(min(1.0, seconds / 20))
        stderr = proc.stderr.read()
        result.exit_status = proc.returncode
    finally:
        if load:
            load.terminate()
            load.wait()
    result.summary = summary_line(stderr, mechanism)
    result.lost = lost_samples(stderr)
    if result.exit_status == sampler.EXIT_LOST and not result.lost:
        result.lost = -1  # lost, count not said
    if csv_path.exists():
        result.counters = counter_checks(csv_path, lambda source: counter_range(mechanism, source))
    return result


def _mib(kib: int | None) -> str:
    return "—" if kib is None else f"{kib / 1024:.1f} MiB"


def report(soaks: list[Soak], minutes: float, stress: bool) -> str:
    runs, counters = [], []
    for s in soaks:
        if not s.ran:
            runs.append([s.mechanism, f"not run: {s.why_not}", "", "", ""])
            continue
        verdict = "**pass**" if s.passed else "**FAIL**"
        lost = "unknown (exit 3)" if s.lost < 0 else str(s.lost)
        growth = s.rss_growth_kib_per_min
        growth = "—" if growth is None else f"{growth:+.0f} KiB/min"
        flat = "" if s.rss_flat else f", **not flat** (over {RSS_SLACK_KIB // 1024} MiB)"
        runs.append([s.mechanism, f"{verdict} (exit {s.exit_status})", lost, s.summary,
                     f"{_mib(s.rss_start_kib)} → {_mib(s.rss_end_kib)} ({_mib(s.rss_max_kib)}; "
                     f"{growth}{flat})"])
        for c in s.counters:
            energy = (["—", "—", "n/a: no energy (a stand-in)"] if c.exact is None else
                      [f"{c.summed_j:.9g} J", f"{c.counter_j:.9g} J",
                       "yes" if c.exact else "**no**"])
            counters.append([s.mechanism, f"{c.source}/{c.domain}", c.samples,
                             f"{c.raw_advance} ({c.wraps})", *energy])
    lines = [f"# Soak: each mechanism at 1 kHz for {minutes:g} min"
             f"{' under stress-ng on every CPU' if stress else ''}", "",
             *markdown.table(["mechanism", "verdict", "lost samples", "sampler's summary",
                              "RSS start → end (max; growth)"], runs),
             "", "Per counter: its raw advance over the run (last − first, plus its range "
             "per wrap) and, for an energy counter, the sum of the sampler's delta_j against "
             "that advance in joules:", "",
             *markdown.table(["mechanism", "counter", "samples", "raw advance (wraps)",
                              "sum of delta_j", "counter's difference", "exact"], counters)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="ci/soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--mechanisms", default=",".join(MECHANISMS))
    p.add_argument("--no-stress", action="store_true", help="no stress-ng beside the sampler")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    wanted = [m for m in args.mechanisms.split(",") if m]
    if unknown := set(wanted) - set(MECHANISMS):
        p.error(f"unknown mechanism(s): {', '.join(sorted(unknown))}")
    if args.minutes <= 0:
        p.error("--minutes must be above 0")
    if not sampler.BINARY.exists():
        print(f"ci/soak: {sampler.BINARY} not built: run `make build`", file=sys.stderr)
        return 2
    out = args.out or Path(__file__).resolve().parent.parent / "results" / "runs" / \
        f"soak-{rows.utc_timestamp().replace(':', '')}"
    out.mkdir(parents=True, exist_ok=True)
    soaks = []
    for mechanism in wanted:
        print(f"ci/soak: {mechanism} for {args.minutes:g} min ...", flush=True)
        soaks.append(soak_one(mechanism, args.minutes * 60, out, not args.no_stress))
    md = report(soaks, args.minutes, not args.no_stress)
    (out / "soak.md").write_text(md, encoding="utf-8")
    (out / "soak.json").write_text(json.dumps(
        [dict(dataclasses.asdict(s), passed=s.passed, rss_growth_kib_per_min=s.rss_growth_kib_per_min)
         for s in soaks], indent=2) + "\n")
    print(md)
    print(f"ci/soak: {out}/soak.md")
    ran = [s for s in soaks if s.ran]
    if not ran:
        return 2
    return 0 if all(s.passed for s in ran) else 1


if __name__ == "__main__":
    sys.exit(main())
