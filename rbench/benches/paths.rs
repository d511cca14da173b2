//! The Criterion harness of raplbench: one benchmark per (access path, op,
//! target, placement) that runs on this machine, the same set ubench
//! registers, as planned by rbench::plan (each path in rbench/src/paths/).
//! Every row is run alike: pin the thread to the row's CPU, open what the
//! row reads, time one read per iteration. Criterion's filter (`cargo bench
//! --bench paths -- <filter>`) only skips the timing: every runnable row is
//! still pinned, opened and read once, and listed in the manifest as measured.
//!
//! Benchmark ids: group = path, function = op, parameter =
//! "<target>@<placement>", so the full id is "<path>/<op>/<target>@<placement>",
//! e.g. "perf/read/msr/tsc/@1->0".
//!
//! Knobs:
//! * RAPLBENCH_QUICK=1: warm-up 0.1 s, measurement 0.3 s, 10 samples, 1000
//!   resamples; else warm-up 1 s, measurement 3 s, 30 samples; never plots.
//! * RAPLBENCH_PLAN_ONLY=1: write the manifest of the plan (runnable rows
//!   "ok") and exit 0 without running any benchmark.
//! * RAPLBENCH_MANIFEST: where the manifest mapping Criterion's ids to result
//!   rows goes (default <criterion home>/raplbench-manifest.json); Criterion
//!   writes under $CRITERION_HOME (default target/criterion).
//! * RAPLBENCH_POWERCAP_ROOT, RAPLBENCH_DEV_CPU_ROOT, RAPLBENCH_PMU_ROOT,
//!   RAPLBENCH_CPU_ROOT: fixture trees in place of the kernel's (rbench::roots).

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use rbench::cpu::pin_to_cpu;
use rbench::manifest::{manifest_path, Manifest};
use rbench::plan::{Plan, Planned, Reader, Reads};

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
    /// Failed while being measured, or read no data.
    Failed(String),
}

/// Times `reader` (one operation per iteration) as benchmark `row`; a read
/// that fails during the measurement, or a measurement that read no data,
/// turns the row into an error.
fn time_reads(criterion: &mut Criterion, row: &Planned, reader: &mut dyn Reader) -> Outcome {
    if let Err(e) = reader.read() {
        return Outcome::Unavailable(e.to_string());
    }
    let mut failure = None;
    let mut group = criterion.benchmark_group(&row.meta.path);
    group.bench_function(BenchmarkId::new(&row.meta.op, row.parameter()), |b| {
        // what Criterion's iter() times, with the loop inside the reader
        b.iter_custom(|iters| {
            let start = Instant::now();
            let result = reader.read_n(iters);
            let elapsed = start.elapsed();
            if let Err(e) = result {
                failure.get_or_insert(e);
            }
            elapsed
        })
    });
    group.finish();
    match (failure, reader.no_data()) {
        (Some(e), _) => Outcome::Failed(e.to_string()),
        (None, Some(why)) => Outcome::Failed(why),
        (None, None) => Outcome::Measured,
    }
}

/// Pins to the row's CPU, opens what it reads, and times it.
fn run(criterion: &mut Criterion, row: &Planned, reads: &dyn Reads) -> Outcome {
    if let Some(cpu) = row.meta.cpu {
        if let Err(e) = pin_to_cpu(cpu) {
            return Outcome::Unavailable(e.to_string());
        }
    }
    match reads.open() {
        Ok(mut reader) => time_reads(criterion, row, &mut *reader),
        Err(e) => Outcome::Unavailable(e.to_string()),
    }
}

fn write_manifest(manifest: &Manifest) {
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
}

fn main() {
    if std::env::var("RAPLBENCH_PLAN_ONLY").is_ok_and(|v| v == "1") {
        return write_manifest(&Plan::for_this_machine().manifest());
    }
    let mut criterion = configured_criterion();
    let plan = Plan::for_this_machine();
    let mut manifest = Manifest::default();
    for row in &plan.rows {
        match &row.reads {
            Err(reason) => manifest.add_unavailable(&row.meta, reason),
            Ok(reads) => match run(&mut criterion, row, &**reads) {
                Outcome::Measured => manifest.add_measured(&row.full_id(), &row.meta),
                Outcome::Unavailable(reason) => manifest.add_unavailable(&row.meta, &reason),
                Outcome::Failed(reason) => manifest.add_error(&row.full_id(), &row.meta, &reason),
            },
        }
    }
    write_manifest(&manifest);
    criterion.final_summary();
}
