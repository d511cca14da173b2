//! Command line of raplbench-victim.

use clap::Parser;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  # 10 s on CPU 1: stolen time and gaps per second on stderr, and a JSON document
  raplbench-victim --cpu 1 --duration 10 --json victim.json

  # the same with a fixed threshold instead of the calibrated one
  raplbench-victim --cpu 1 --duration 10 --threshold-ns 500

  # what IPIs cost CPU 1: a neighbour on CPU 0 reads CPU 1's cpuid device
  taskset -c 0 sh -c 'while :; do dd if=/dev/cpu/1/cpuid bs=16 count=1 status=none >/dev/null; done' &
  raplbench-victim --cpu 1 --duration 5

A thread pinned to --cpu first runs its loop of TSC reads for 150 ms to
calibrate: the TSC frequency against CLOCK_MONOTONIC, the loop's iteration
time (p50, p99, p99.9) and the threshold, max(4 x p99, 200 ns). It then
spins for --duration seconds and records every delta between consecutive
reads above the threshold: a gap. Per second of wall time (cut by TSC
deadline): the time stolen (each gap minus one normal iteration, the
calibrated median), the number of gaps and their p50, p99 and max.

JSON (--json): {cpu, duration_s, calibration{window_ns, tsc_ghz,
invariant_tsc, iterations, iteration_p50_ns, iteration_p99_ns,
iteration_p999_ns, rule_threshold_ns,
interrupted_share}, threshold_ns, threshold_source,
normal_iteration_ns, seconds:[{wall_ns, stolen_ns, count, p50_ns, p99_ns,
max_ns, not_kept}], total{the same}, gaps_not_kept, stopped_by}. p50/p99/max
are null where there was no gap. Up to 1048576 gaps are kept for the
percentiles; more are still counted, summed and maxed (gaps_not_kept).

Exit status: 0; 2 for bad options (an offline CPU, a CPU outside this
process's affinity mask, a duration or threshold that is not > 0) or a JSON
file that cannot be written; 1 when the probe failed. SIGINT and SIGTERM
stop the run cleanly: what was measured is reported and written.";

/// Measures what the rest of the machine steals from one CPU: a pinned
/// loop of TSC reads, every gap above a calibrated threshold.
//
// Numeric options take allow_negative_numbers, so that -1 gets the value
// parser's message (else clap took it for a flag and suggested `-- -1`).
#[derive(Debug, Parser)]
#[command(name = "raplbench-victim", version, after_help = EXAMPLES)]
pub struct Args {
    /// The CPU to measure (online, in this process's affinity mask)
    #[arg(long, value_parser = rbench::cpu::parse_cpu_arg, allow_negative_numbers = true)]
    pub cpu: usize,

    /// Seconds to measure, after calibration (0 < S <= 86400)
    #[arg(long, value_parser = rbench::clock::parse_duration, allow_negative_numbers = true)]
    pub duration: f64,

    /// The gap threshold in ns, instead of max(4 x iteration p99, 200 ns)
    #[arg(long, value_parser = parse_threshold, allow_negative_numbers = true)]
    pub threshold_ns: Option<f64>,

    /// Write the JSON document here
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn parse_threshold(text: &str) -> Result<f64, String> {
    rbench::clock::parse_finite(text, |ns| ns > 0.0 && ns <= 1e9)
        .ok_or_else(|| format!("'{text}' is not a number of ns in (0, 1e9]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from([&["raplbench-victim"][..], args].concat())
    }

    #[test]
    fn accepts_the_documented_forms() {
        let a = parse(&["--cpu", "1", "--duration", "0.3"]).unwrap();
        assert_eq!((a.cpu, a.duration, a.threshold_ns), (1, 0.3, None));
        let b = parse(&[
            "--cpu",
            "0",
            "--duration",
            "10",
            "--threshold-ns",
            "500",
            "--json",
            "v.json",
        ])
        .unwrap();
        assert_eq!(b.threshold_ns, Some(500.0));
        assert_eq!(b.json, Some(PathBuf::from("v.json")));
    }

    #[test]
    fn a_negative_number_is_the_options_bad_value_not_a_flag() {
        for args in [
            &["--cpu", "-1", "--duration", "1"][..],
            &["--cpu", "0", "--duration", "-1"],
            &["--cpu", "0", "--duration", "1", "--threshold-ns", "-1"],
        ] {
            let err = parse(args).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ValueValidation,
                "{args:?}: {err}"
            );
        }
    }

    #[test]
    fn refuses_bad_options_with_exit_status_2() {
        for bad in [
            &["--duration", "1"][..],
            &["--cpu", "0"],
            &["--cpu", "-1", "--duration", "1"],
            &["--cpu", "0", "--duration", "0"],
            &["--cpu", "0", "--duration", "-2"],
            &["--cpu", "0", "--duration", "nan"],
            &["--cpu", "0", "--duration", "inf"],
            &["--cpu", "0", "--duration", "1", "--threshold-ns", "0"],
            &["--cpu", "0", "--duration", "1", "--threshold-ns", "x"],
        ] {
            let err = parse(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }
    }
}
