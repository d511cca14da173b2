"""The victim step of make bench-all: what a neighbour costs another CPU.

Every figure of the latency steps is taken from the reader's side. Many
routes also cost the CPU they read (an IPI on the target CPU: the msr
device and its cpuid stand-in, MSR-backed powercap zones read from another
CPU, a perf read of a CPU-bound event), and timer-driven samplers interrupt
whatever runs where their timer fires. raplbench-interfere measures it with
a victim probe, a thread pinned to the victim CPU that counts the time
stolen from its RDTSC loop, first beside every route of the Criterion plan
(at 1 kHz and flat out), then beside each sampler mechanism at 1 kHz.
The probe, the windows, the rows (stolen_ns_per_read, victim_gap_p99_ns,
victim_gap_max_ns), their targets and parameters: results/README.md, "The
victim probe". The tool's JSON is kept in raw/.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

from results import child, ksample_module, registry, rows, sampler

HARNESS = "victim"
REPO = Path(__file__).resolve().parent.parent
BINARY = REPO / "target" / "release" / "raplbench-interfere"
STOLEN, P99, MAX = "stolen_ns_per_read", "victim_gap_p99_ns", "victim_gap_max_ns"
METRICS = (STOLEN, P99, MAX)
FLAT_OUT = "flat out"
# The sampler mechanisms' neighbour rate: the 1 kHz of the issue and the papers.
SAMPLER_RATE_HZ = 1000


@dataclasses.dataclass(frozen=True)
class Settings:
    """How long the step measures. The route run has one experiment per
    (route row, rate): 12 route rows on a 2-CPU machine of this kind."""
    pairs: int            # pairs of windows per route experiment
    window_s: float       # one window
    rates: tuple          # "1000" and/or "max"
    sampler_pairs: int    # pairs per sampler experiment
    sampler_window_s: float


# 10 pairs: the fewest the gate compares (ci/gate.toml, min_samples); windows
# of 0.125 s (125 reads at 1 kHz), so that a full run's steps fit in 10 minutes.
FULL = Settings(pairs=10, window_s=0.125, rates=("1000", "max"), sampler_pairs=10,
                sampler_window_s=0.125)
# QUICK: flat out only (the figure that tells IPI from no-IPI routes), few
# short windows; too few pairs for a finding (the report says so).
QUICK = Settings(pairs=3, window_s=0.07, rates=("max",), sampler_pairs=1,
                 sampler_window_s=0.1)


# ---- the tool's JSON document -> rows ----------------------------------------

def _per_ns(window: dict) -> float:
    return window["stolen_ns"] / window["wall_ns"] if window["wall_ns"] else 0.0


def stolen_per_read(pair: dict) -> float | None:
    """One pair's stolen ns per read above its no-neighbour window, or None
    when the neighbour's window issued no read (nothing to divide by)."""
    on, off = pair["on"], pair["off"]
    reads = on.get("reads") or 0
    if reads <= 0 or not on["wall_ns"]:
        return None
    return (_per_ns(on) - _per_ns(off)) * on["wall_ns"] / reads


def window_values(experiment: dict, side: str, field: str) -> list[float]:
    """`field` of every `side` ("on" or "off") window that has it."""
    return [float(p[side][field]) for p in experiment.get("pairs", ())
            if p[side].get(field) is not None]


def _median(values) -> float | None:
    values = list(values)
    return float(statistics.median(values)) if values else None


def rate_label(rate_hz) -> str:
    return FLAT_OUT if rate_hz is None else f"{rate_hz:g} Hz"


def route_key(experiment: dict) -> dict:
    """What a route experiment's rows are about, as row fields."""
    n = experiment["neighbour"]
    target = (f"{n.get('target') or n['path']} @ {rate_label(experiment.get('rate_hz'))}; "
              f"victim CPU {experiment['victim_cpu']}")
    return dict(path=n["path"], op=n["op"], target=target, cpu=n.get("cpu"),
                target_cpu=n.get("target_cpu"), stand_in=n.get("stand_in"),
                liveness=n.get("liveness"), liveness_note=n.get("liveness_note"))


@dataclasses.dataclass(frozen=True)
class SamplerTarget:
    """What the sampler step's own rows say of a mechanism: its target
    without the rate ("msr/tsc/"), its CPU and target CPU, its stand-in."""
    target: str
    cpu: int | None
    target_cpu: int | None
    stand_in: str | None


def sampler_targets(sampler_rows) -> dict[str, SamplerTarget]:
    """{mechanism: SamplerTarget} from the sampler step's rows (sampler.own_rate_rows)."""
    return {r["op"]: SamplerTarget(target=r["target"].rsplit(" @ ", 1)[0], cpu=r.get("cpu"),
                                   target_cpu=r.get("target_cpu"), stand_in=r.get("stand_in"))
            for r in sampler.own_rate_rows(sampler_rows)}


def sampler_key(experiment: dict, known: SamplerTarget | None) -> dict:
    """What a sampler experiment's rows are about, as row fields."""
    mechanism = experiment["neighbour"]["mechanism"]
    what = known.target if known else mechanism
    target = (f"{what} @ {rate_label(experiment.get('rate_hz'))}; "
              f"victim CPU {experiment['victim_cpu']}")
    return dict(path="sampler", op=mechanism, target=target,
                cpu=known.cpu if known else experiment["neighbour"].get("cpu"),
                target_cpu=known.target_cpu if known else None,
                stand_in=known.stand_in if known else None)


def parameters(experiment: dict, **baseline) -> dict:
    """The row's parameters; `baseline`: baseline_median=... (a gap row:
    the same statistic in the windows without the neighbour, in the row's
    unit) or baseline_stolen_ns_per_s=... (the stolen row: what the victim
    lost per second without it, not a per-read figure)."""
    seconds = [p["on"]["wall_ns"] / 1e9 for p in experiment.get("pairs", ())]
    reads = [p["on"].get("reads") or 0 for p in experiment.get("pairs", ())]
    per_s = [r / s for r, s in zip(reads, seconds) if s > 0]
    return {"rate_hz": experiment.get("rate_hz"), "victim_cpu": experiment["victim_cpu"],
            "placement": experiment.get("placement"), "reads_per_s": _median(per_s),
            **baseline}


def experiment_rows(common: dict, experiment: dict, key: dict) -> list[dict]:
    """The three rows of one experiment (`key`: route_key or sampler_key); a
    single not-ok stolen row when it did not run (status and reason from
    the tool), or when it ran but yielded no pair with a read."""
    where = dict(harness=HARNESS, **key)

    def not_ok(reason, status="unavailable"):
        return [rows.not_ok_row(common, **where, metric=STOLEN, reason=reason, status=status)]

    status = experiment.get("status", "error")
    if status != "ok":
        return not_ok(experiment.get("reason") or "raplbench-interfere gave no reason",
                      status if status in ("unavailable", "error") else "error")
    stolen = [s for s in map(stolen_per_read, experiment.get("pairs", ())) if s is not None]
    if not stolen:
        return not_ok("the neighbour issued no read in any window", "error")
    out = [rows.measured_row(common, **where, metric=STOLEN, unit="ns", samples=stolen,
                             parameters=parameters(experiment, baseline_stolen_ns_per_s=_median(
                                 [_per_ns(p["off"]) * 1e9 for p in experiment["pairs"]])))]
    for metric, field in ((P99, "p99_ns"), (MAX, "max_ns")):
        on = window_values(experiment, "on", field)
        if on:
            out.append(rows.measured_row(
                common, **where, metric=metric, unit="ns", samples=on,
                parameters=parameters(experiment, baseline_median=_median(
                    window_values(experiment, "off", field)))))
    return out


def document_rows(common: dict, doc: dict, known: dict[str, SamplerTarget] | None = None
                  ) -> list[dict]:
    """Every row of one raplbench-interfere document."""
    out = []
    for e in doc.get("experiments", ()):
        kind = e.get("neighbour", {}).get("kind")
        if kind == "route":
            key = route_key(e)
        elif kind == "sampler":
            key = sampler_key(e, (known or {}).get(e["neighbour"]["mechanism"]))
        else:
            raise ValueError(f"experiment with an unknown neighbour kind {kind!r}")
        out += experiment_rows(common, e, key)
    return out


def load(path: Path) -> dict:
    """A raplbench-interfere document; ValueError saying what is wrong."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a raplbench-interfere document: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("experiments"), list):
        raise ValueError(f"{path}: no 'experiments' list: not a raplbench-interfere document")
    return doc


# ---- running it ------------------------------------------------------------------

def _run_tool(args: list[str], out: Path, log: Path) -> str | None:
    """Runs raplbench-interfere writing `out`, its progress shown and kept
    in `log`; None when it ran, else why not."""
    if not BINARY.exists():
        return f"{BINARY} not built: run make build"
    out.unlink(missing_ok=True)
    cmd = [str(BINARY), "--json", str(out), *args]
    lines: list[str] = []

    def keep(line: str) -> bool:
        lines.append(line.strip())
        return True

    with open(log, "a", encoding="utf-8") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        code = child.stream(cmd, f, show=keep)
    if code != 0 or not out.exists():
        last = next((line for line in reversed(lines) if line), "no message")
        return f"raplbench-interfere exited with status {code}: {last} (see {log})"
    return None


def run_routes(common: dict, raw_dir: Path, quick: bool) -> list[dict]:
    s = QUICK if quick else FULL
    out, log = raw_dir / "victim-routes.json", raw_dir / "victim.log"
    why = _run_tool(["--pairs", str(s.pairs), "--window-s", str(s.window_s),
                     "--rates", ",".join(s.rates)], out, log)
    if why is not None:
        return [rows.not_ok_row(common, harness=HARNESS, path=p, op="*", metric=STOLEN,
                                reason=why, status="error")
                for p in ROUTE_PATHS]
    return document_rows(common, load(out))


def run_samplers(common: dict, raw_dir: Path, quick: bool,
                 known: dict[str, SamplerTarget], mechanisms) -> list[dict]:
    """One raplbench-interfere --sampler run per mechanism in `mechanisms`;
    the others' rows say why not (unavailable_mechanisms)."""
    s = QUICK if quick else FULL
    out_rows = []
    for m in mechanisms:
        out, log = raw_dir / f"victim-sampler-{m}.json", raw_dir / "victim.log"
        with ksample_module.around(m, raw_dir / "ksample.log") as not_loaded:
            if not_loaded is not None:
                out_rows.append(sampler_not_ok(common, m, not_loaded.reason, not_loaded.status))
                continue
            why = _run_tool(["--sampler", m, "--rate", str(SAMPLER_RATE_HZ),
                             "--pairs", str(s.sampler_pairs), "--window-s", str(s.sampler_window_s)],
                            out, log)
        if why is not None:
            out_rows.append(sampler_not_ok(common, m, why, "error"))
        else:
            out_rows += document_rows(common, load(out), known)
    return out_rows


def sampler_not_ok(common: dict, mechanism: str, reason: str, status="unavailable") -> dict:
    return rows.not_ok_row(common, harness=HARNESS, path="sampler", op=mechanism,
                           target=f"@ {SAMPLER_RATE_HZ} Hz", metric=STOLEN, reason=reason,
                           status=status)


# the route paths raplbench-interfere reads (the sampler's neighbours are the mechanisms)
ROUTE_PATHS = tuple(p for p in registry.paths_of(HARNESS) if p != "sampler")


def run(common: dict, raw_dir: Path, quick: bool, sampler_rows, mechanisms: dict) -> list[dict]:
    """The whole step: the routes, then every registered sampler mechanism
    (`mechanisms`: {mechanism: stand_in} of those the sampler step could
    run; the others get a row saying why not)."""
    got = run_routes(common, raw_dir, quick)
    known = sampler_targets(sampler_rows)
    runnable = [m for m in registry.MECHANISMS
                if m in mechanisms or m == ksample_module.MECHANISM]
    got += run_samplers(common, raw_dir, quick, known, runnable)
    return got + [sampler_not_ok(common, m, "the sampler cannot sample here (see its sampler row)")
                  for m in registry.MECHANISMS if m not in runnable]
