//! Command line of raplbench-interfere.

use clap::Parser;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  # every route of this machine's Criterion plan, at 1000 Hz and flat out
  raplbench-interfere --json interfere.json

  # only the msr-dev rows and perf's read, flat out, short windows
  raplbench-interfere --json i.json --only msr-dev,perf/read --rates max --window-s 0.1 --pairs 3

  # a raplbench-sample process as the neighbour, the victim on each CPU in turn
  raplbench-interfere --json s.json --sampler ebpf --pairs 4

A victim thread pinned to the victim CPU spins on RDTSC and records every
gap above max(4 x iteration p99, 200 ns) (calibrated once per CPU, before
any neighbour reads), in windows of --window-s cut by TSC deadline. Each
experiment is one settle window (discarded), then --pairs pairs of
adjacent windows, one with the neighbour reading (on), one without (off),
off-on and on-off alternating. Route neighbours: the calling thread,
pinned to the row's CPU, its reader opened before the first window, reads
only in the on windows. The victim sits on the row's target CPU when that
is not the reader's (victim-is-target), else on the lowest other allowed
CPU (victim-elsewhere). Sampler neighbours: raplbench-sample started in a
settle window before each on window and stopped with SIGINT after it (a
teardown window), its ticks counted from its CSV.

JSON: {tool, window_s, pairs, threshold_rule, calibrations{CPU: {...,
threshold_ns, normal_iteration_ns}}, experiments: [{neighbour, rate_hz,
victim_cpu, placement, status, reason, pairs: [{order, off{wall_ns,
stolen_ns, count, p50_ns, p99_ns, max_ns, not_kept}, on{the same, reads,
missed}}]}], stopped_by}. See rbench/README.md.

Exit status: 0 when done (some experiments may be unavailable), 2 for bad
options, 1 when the JSON cannot be written; after SIGINT/SIGTERM what was
measured is written and the status is 130/143.";

/// The rates of --rates: a number of reads per second, or None (max: flat out).
pub fn parse_rate(text: &str) -> Result<Option<u32>, String> {
    match (text, text.parse::<u32>()) {
        ("max", _) => Ok(None),
        (_, Ok(r)) if (1..=1_000_000).contains(&r) => Ok(Some(r)),
        _ => Err(format!(
            "'{text}' is not a rate: a number of reads per second in 1..=1000000, or max"
        )),
    }
}

fn parse_window(text: &str) -> Result<f64, String> {
    rbench::clock::parse_finite(text, |s| (0.01..=60.0).contains(&s))
        .ok_or_else(|| format!("'{text}' is not a window length in [0.01, 60] s"))
}

/// Measures what a neighbour's reads of an energy counter cost another
/// CPU, with the victim probe: per route of this machine's plan, or for a
/// raplbench-sample process.
//
// Numeric options take allow_negative_numbers, so that -1 gets the value
// parser's message (else clap took it for a flag and suggested `-- -1`);
// comma-separated lists take allow_hyphen_values ("-1,max" is no number to
// clap; the price: `--rates --pairs 2` takes "--pairs" for a rate).
#[derive(Debug, Parser)]
#[command(name = "raplbench-interfere", version, after_help = EXAMPLES)]
pub struct Args {
    /// Write the JSON document here
    #[arg(long)]
    pub json: PathBuf,

    /// Route rates, comma-separated: reads per second, or max (flat out)
    #[arg(long, value_delimiter = ',', value_parser = parse_rate,
          default_value = "1000,max", conflicts_with = "sampler", allow_hyphen_values = true)]
    pub rates: Vec<Option<u32>>,

    /// Pairs of windows (with and without the neighbour) per experiment
    #[arg(long, default_value_t = 10, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub pairs: u32,

    /// One window, seconds (0.01 to 60)
    #[arg(long, default_value_t = 0.25, value_parser = parse_window,
          allow_negative_numbers = true)]
    pub window_s: f64,

    /// Only these routes (the help names route_paths, the registry's)
    #[arg(long, value_delimiter = ',', conflicts_with = "sampler",
          help = format!("Only these routes: PATH or PATH/OP, comma-separated (paths: {})",
                         rbench::interfere::route::route_paths().join(", ")))]
    pub only: Vec<String>,

    /// A raplbench-sample process as the neighbour, with this --mechanism
    /// (the registry's: results/schema.json)
    #[arg(long, value_name = "MECH",
          value_parser = clap::builder::PossibleValuesParser::new(
              rbench::registry::mechanism_values()))]
    pub sampler: Option<String>,

    /// The raplbench-sample binary (default: the one beside this program)
    #[arg(long, value_name = "PATH", requires = "sampler")]
    pub sampler_bin: Option<PathBuf>,

    /// The sampler's --frequency
    #[arg(long, default_value_t = 1000, requires = "sampler", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub rate: u32,

    /// The victim's CPUs, comma-separated, one experiment each (default:
    /// every allowed CPU)
    #[arg(long, value_name = "V", value_delimiter = ',', requires = "sampler",
          value_parser = rbench::cpu::parse_cpu_arg, allow_hyphen_values = true)]
    pub victim_cpu: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from([&["raplbench-interfere"][..], args].concat())
    }

    #[test]
    fn the_defaults_and_the_documented_forms() {
        let a = parse(&["--json", "o.json"]).unwrap();
        assert_eq!(
            (a.rates.clone(), a.pairs, a.window_s),
            (vec![Some(1000), None], 10, 0.25)
        );
        assert!(a.only.is_empty() && a.sampler.is_none());
        let b = parse(&[
            "--json",
            "o",
            "--rates",
            "max",
            "--only",
            "msr-dev,perf/read",
        ])
        .unwrap();
        assert_eq!(b.rates, [None]);
        assert_eq!(b.only, ["msr-dev", "perf/read"]);
        let c = parse(&[
            "--json",
            "o",
            "--sampler",
            "ebpf",
            "--victim-cpu",
            "0,1",
            "--rate",
            "100",
        ])
        .unwrap();
        assert_eq!(
            (c.sampler.as_deref(), c.victim_cpu.clone(), c.rate),
            (Some("ebpf"), vec![0, 1], 100)
        );
    }

    #[test]
    fn sampler_takes_exactly_the_registered_mechanisms() {
        for name in rbench::registry::mechanism_names() {
            let a = parse(&["--json", "o", "--sampler", name]).unwrap();
            assert_eq!(a.sampler.as_deref(), Some(name));
        }
        let err = parse(&["--json", "o", "--sampler", "rdpmc"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
    }

    #[test]
    fn a_negative_number_is_the_options_bad_value_not_a_flag() {
        for args in [
            &["--json", "o", "--pairs", "-1"][..],
            &["--json", "o", "--window-s", "-1"],
            &["--json", "o", "--rates", "-1"],
            &["--json", "o", "--rates", "-1,max"],
            &["--json", "o", "--rates", "max,-1"],
            &["--json", "o", "--sampler", "perf", "--rate", "-1"],
            &["--json", "o", "--sampler", "perf", "--victim-cpu", "-1"],
            &["--json", "o", "--sampler", "perf", "--victim-cpu", "-1,0"],
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
    fn bad_options_exit_2() {
        for bad in [
            &["--pairs", "2"][..],
            &["--json", "o", "--rates", "0"],
            &["--json", "o", "--rates", "fast"],
            &["--json", "o", "--pairs", "0"],
            &["--json", "o", "--window-s", "0"],
            &["--json", "o", "--window-s", "nan"],
            &["--json", "o", "--sampler", "ebpf", "--rates", "max"],
            &["--json", "o", "--sampler", "ebpf", "--only", "perf"],
            &["--json", "o", "--victim-cpu", "1"],
            &["--json", "o", "--sampler-bin", "x"],
        ] {
            assert_eq!(parse(bad).unwrap_err().exit_code(), 2, "{bad:?}");
        }
    }
}
