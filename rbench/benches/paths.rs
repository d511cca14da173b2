//! The Criterion harness of raplbench: one benchmark per (access path, op,
//! target, placement) that runs on this machine, the same set ubench
//! registers (see rbench::plan), read through the library's read paths.
//!
//! Benchmark ids: group = path, function = op, parameter =
//! "<target>@<placement>", so the full id is "<path>/<op>/<target>@<placement>",
//! e.g. "perf/read/msr/tsc/@1->0". Each benchmark pins its thread to the
//! placement's CPU first.
//!
//! Timing knobs: RAPLBENCH_QUICK=1 (warm-up 0.1 s, measurement 0.3 s, 10
//! samples, 1000 resamples), else warm-up 1 s, measurement 3 s, 30 samples;
//! never plots. Criterion writes under $CRITERION_HOME (default
//! target/criterion); the manifest mapping its ids to result rows goes to
//! $RAPLBENCH_MANIFEST (default <criterion home>/raplbench-manifest.json).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use rbench::cpu::pin_to_cpu;
use rbench::ebpf::{BpfSampler, RbSlot, SlotRead};
use rbench::manifest::{manifest_path, Manifest};
use rbench::msr::MsrSource;
use rbench::perf::PerfSource;
use rbench::plan::{Plan, Planned, Probe};
use rbench::powercap::PowercapSource;
use rbench::{CounterSource, Error};

/// Criterion with raplbench's statistical defaults, then the command line.
fn configured_criterion() -> Criterion {
    let quick = std::env::var("RAPLBENCH_QUICK").is_ok_and(|v| v == "1");
    let criterion = Criterion::default().without_plots();
    let criterion = if quick {
        criterion
            .warm_up_time(Duration::from_millis(100))
            .measurement_time(Duration::from_millis(300))
            .sample_size(10)
            .nresamples(1000)
    } else {
        criterion
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3))
            .sample_size(30)
    };
    criterion.configure_from_args()
}

/// How a benchmark that was planned ended.
enum Outcome {
    /// Measured.
    Measured,
    /// Could not start (pinning, opening, a first read): the machine lacks something.
    Unavailable(String),
    /// Failed while being measured.
    Failed(String),
}

/// Times `read` (one operation per call) as benchmark `row`; a read that
/// fails during the measurement turns the row into an error.
fn time_reads(
    criterion: &mut Criterion,
    row: &Planned,
    mut read: impl FnMut() -> Result<(), Error>,
) -> Outcome {
    if let Err(e) = read() {
        return Outcome::Unavailable(e.to_string());
    }
    let mut failure: Option<Error> = None;
    let mut group = criterion.benchmark_group(&row.meta.path);
    group.bench_function(BenchmarkId::new(&row.meta.op, row.parameter()), |b| {
        b.iter(|| {
            if let Err(e) = read() {
                failure.get_or_insert(e);
            }
        })
    });
    group.finish();
    match failure {
        Some(e) => Outcome::Failed(e.to_string()),
        None => Outcome::Measured,
    }
}

/// One read of every domain of `source` per operation, as the sampler does.
fn time_source(
    criterion: &mut Criterion,
    row: &Planned,
    source: &mut impl CounterSource,
) -> Outcome {
    let mut out = vec![0u64; source.domains().len()];
    time_reads(criterion, row, || {
        let result = source.read(&mut out);
        black_box(&out);
        result
    })
}

/// One copy of a CPU's slot per operation, by lookup or by load.
fn time_slot(
    criterion: &mut Criterion,
    row: &Planned,
    sampler: &BpfSampler,
    cpu: usize,
    via: SlotRead,
) -> Outcome {
    let mut slot = RbSlot::default();
    let before = sampler.tick_counts(cpu).ok();
    let started = Instant::now();
    let outcome = time_reads(criterion, row, || {
        let result = match via {
            SlotRead::Lookup => sampler.lookup(cpu, &mut slot),
            SlotRead::Load => sampler.load(cpu, &mut slot),
        };
        black_box(&slot);
        result
    });
    // a slot that failed or stopped ticking held no data: not a measurement.
    // Judged from the tick accounting before and after (err_ticks counts
    // every failed read, not just the last), and only when the run lasted
    // some periods (else Criterion listed or filtered the benchmark out).
    let after = sampler.tick_counts(cpu).ok();
    let periods = started.elapsed().as_nanos() / u128::from(sampler.period_ns().max(1));
    match (outcome, before, after) {
        (Outcome::Measured, Some(before), Some(after)) if periods >= 10 => {
            let failed = after.err_ticks.saturating_sub(before.err_ticks);
            if failed > 0 {
                Outcome::Failed(format!(
                    "the BPF program's reads failed on CPU {cpu} during the measurement: \
                     {failed} of {} ticks (last err {}: {})",
                    after.ticks.saturating_sub(before.ticks),
                    slot.err,
                    std::io::Error::from_raw_os_error(-slot.err)
                ))
            } else if after.ticks == before.ticks {
                Outcome::Failed(format!(
                    "the BPF program's slot of CPU {cpu} did not tick during the measurement"
                ))
            } else {
                Outcome::Measured
            }
        }
        (outcome, ..) => outcome,
    }
}

/// Pins to the row's CPU, opens what it reads, and times it.
fn run(criterion: &mut Criterion, row: &Planned, probe: &Probe, plan: &Plan) -> Outcome {
    if let Some(cpu) = row.meta.cpu {
        if let Err(e) = pin_to_cpu(cpu) {
            return Outcome::Unavailable(e.to_string());
        }
    }
    let opened = match probe {
        Probe::Powercap { file, mode } => {
            PowercapSource::open(std::slice::from_ref(file), *mode, None)
                .map(|mut s| time_source(criterion, row, &mut s))
        }
        Probe::Msr { read } => MsrSource::open(std::slice::from_ref(read), None)
            .map(|mut s| time_source(criterion, row, &mut s)),
        Probe::Perf { events, cpu, mode } => PerfSource::open(events, *cpu, *mode, None)
            .map(|mut s| time_source(criterion, row, &mut s)),
        Probe::Bpf { cpu, via } => match &plan.sampler {
            Some(sampler) => Ok(time_slot(criterion, row, sampler, *cpu, *via)),
            None => Err(Error::Unavailable("the BPF sampler is not running".into())),
        },
    };
    opened.unwrap_or_else(|e| Outcome::Unavailable(e.to_string()))
}

fn main() {
    let mut criterion = configured_criterion();
    let plan = Plan::for_this_machine();
    let mut manifest = Manifest::default();
    for row in &plan.rows {
        match &row.probe {
            Err(reason) => manifest.add_unavailable(&row.meta, reason),
            Ok(probe) => match run(&mut criterion, row, probe, &plan) {
                Outcome::Measured => manifest.add_measured(&row.full_id(), &row.meta),
                Outcome::Unavailable(reason) => manifest.add_unavailable(&row.meta, &reason),
                Outcome::Failed(reason) => manifest.add_error(&row.full_id(), &row.meta, &reason),
            },
        }
    }
    let path = manifest_path();
    match manifest.write(&path) {
        Ok(()) => eprintln!("raplbench manifest: {}", path.display()),
        Err(e) => {
            eprintln!(
                "cannot write the raplbench manifest {}: {e}",
                path.display()
            );
            std::process::exit(1);
        }
    }
    criterion.final_summary();
}
