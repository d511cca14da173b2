//! Command line of raplbench-sample.

use clap::Parser;
use rbench::perf::ring::Design;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  # 5 s of RAPL through perf at 1 kHz into a CSV
  raplbench-sample --mechanism perf --duration 5 --output energy.csv

  # sample while a command runs; exit with its exit code
  raplbench-sample --mechanism msr --output energy.csv -- ./my-workload --size 10

  # the package domain only, at 100 Hz, pinned to CPU 2 under SCHED_FIFO
  raplbench-sample --mechanism powercap --domains package-0 --frequency 100 --cpu 2 --fifo --duration 60

  # the in-kernel sampler (BPF), with a self-report (its windows, raw JSON):
  # 10 windows of 1 s, alternating with 10 of the bare timer loop
  raplbench-sample --mechanism ebpf --duration 10 --pairs 10 --report sampler.json

  # the ksample kernel module samples (an hrtimer per package reads the
  # MSRs in the kernel), compared with the same timers reading nothing
  sudo kbench/load ksample
  raplbench-sample --mechanism kernel --duration 10 --report sampler.json

  # what each mechanism would read here, with each counter's verdict
  raplbench-sample --list

CSV: time_ns,source,domain,raw,delta_j, one line per sample and counter.
source is the counter instance (a powercap zone id, package-N, cpuN);
delta_j is the energy since the previous sample, wrap-corrected. delta_j is
EMPTY (never 0 J) on the first sample of each counter, for a stand-in (not
energy), and for a counter that is not live: at start each counter is read
every 1 ms for up to 100 ms; one that never changes is frozen (a dead
counter: a VM, a missing driver, an unsupported domain), one whose unit is
implausible is no-unit. Both are named on stderr; --require-live makes them
fatal (exit 2). perf and ebpf read every package (one CPU of the PMU's
cpumask each), msr and powercap every package's registers or zones, kernel
every package the ksample module samples (its timer on the package's lead
CPU; the module must be loaded: kbench/load ksample, as root).

Exit status: 0 (or the command's own), 2 for bad options or a counter or
output that cannot be opened (or, with --require-live, a counter that is
not live), 1 when sampling failed after it started, 3 when it sampled to
the end but lost samples (dropped, or reads that failed: counted on stderr).
SIGINT and SIGTERM stop sampling cleanly: every sample taken is written and
the exit status is 128 + the signal (130, 143). With a command the signal
is forwarded to it; a command that has not exited 1 s later, or when a
second SIGINT or SIGTERM comes, is killed (SIGKILL).";

/// How the counters are read: the mechanisms of the registry
/// (results/schema.json, `$defs.mechanism`: rbench::registry, whose titles
/// --help shows), each with its code here (mechanism.rs), under the name
/// ValueEnum gives its variant (in lowercase).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mechanism {
    /// energy_uj files, kept open (stand-in: a live sysfs counter)
    Powercap,
    /// /dev/cpu/N/msr (stand-in: /dev/cpu/N/cpuid)
    Msr,
    /// a perf_event group of the `power` PMU's events (stand-in: msr/tsc/)
    Perf,
    /// an in-kernel BPF program, drained in batches
    Ebpf,
    /// the ksample module's hrtimer, /proc/ksample/records drained in batches
    Kernel,
    /// a cpu-clock sampling leader per package with the energy events as its
    /// group, the kernel's samples drained from a perf ring buffer (lo2s)
    PerfRing,
}

/// The code of the registered mechanism `name`.
fn code_of(name: &str) -> Mechanism {
    clap::ValueEnum::from_str(name, false).expect("every registered mechanism has code")
}

impl Mechanism {
    /// Every registered mechanism, in the registry's order.
    pub fn all() -> Vec<Mechanism> {
        (rbench::registry::mechanism_names().into_iter())
            .map(code_of)
            .collect()
    }

    /// The name used in result rows (op) and on the command line.
    pub fn name(self) -> &'static str {
        rbench::registry::mechanism_names()
            .into_iter()
            .find(|&name| code_of(name) == self)
            .expect("every mechanism is registered")
    }

    /// Whether it samples in the kernel (the registry's x-in-kernel).
    pub fn in_kernel(self) -> bool {
        rbench::registry::in_kernel(self.name())
    }
}

/// --mechanism: one of the registry's names.
fn mechanism_arg() -> impl clap::builder::TypedValueParser<Value = Mechanism> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(rbench::registry::mechanism_values())
        .map(|name| code_of(&name))
}

/// raplbench-sample: the 1 kHz RAPL energy sampler of raplbench.
///
/// Reads every energy domain of the chosen mechanism at a fixed rate on
/// absolute deadlines, for a duration or while a command runs, and writes
/// one CSV line per sample and domain: time_ns,source,domain,raw,delta_j
/// (delta_j empty where it is not energy: see below).
//
// Numeric options take allow_negative_numbers: a value such as -1 reaches
// the value parser, whose message names the option and its valid values
// (else clap takes it for a flag and suggests `-- -1`).
#[derive(Debug, Parser)]
#[command(name = "raplbench-sample", version, after_help = EXAMPLES)]
pub struct Args {
    /// How to read the counters.
    #[arg(long, value_parser = mechanism_arg(), required_unless_present = "list")]
    pub mechanism: Option<Mechanism>,

    /// Print every counter each mechanism (or just --mechanism) would read
    /// here: mechanism, package, domain, route, unit (J per raw count) and
    /// liveness verdict; then exit 0 without sampling.
    #[arg(long)]
    pub list: bool,

    /// Exit 2 before sampling if any counter read is frozen or no-unit.
    #[arg(long)]
    pub require_live: bool,

    /// Domains to read, comma-separated names or sources (default: every one
    /// discovered, e.g. package-0,dram or intel-rapl:0,energy-pkg).
    #[arg(long, value_delimiter = ',')]
    pub domains: Vec<String>,

    /// Samples per second, 1 to 10000.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub frequency: u32,

    /// Sample for this many seconds (else: while COMMAND runs).
    #[arg(long, value_parser = rbench::clock::parse_duration, allow_negative_numbers = true)]
    pub duration: Option<f64>,

    /// CSV output (time_ns,source,domain,raw,delta_j); none: no file.
    #[arg(long)]
    pub output: Option<PathBuf>,

    /// Write a self-report: the sampler measured in windows alternating
    /// with windows of a bare timer loop, each window raw (samples, wall
    /// and CPU time, missed ticks, median interval error) with what the
    /// sampler read, as one line of JSON (results/sampler.py makes the
    /// result rows of it; stderr sums it up). For ebpf and kernel the bare
    /// loop is the same in-kernel timers reading nothing (kernel: the
    /// module started with "null" instead of "start").
    #[arg(long)]
    pub report: Option<PathBuf>,

    /// With --report and --duration: sample in K windows of DURATION / K
    /// seconds, each paired with a window of the bare timer loop as long,
    /// the order alternating (AB BA AB ...); one sample per window in each
    /// row, one per pair in the rows above the null loop. Default 10 (1 with
    /// a command: it runs once).
    #[arg(long, value_name = "K", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=MAX_PAIRS as i64))]
    pub pairs: Option<u32>,

    /// Do not measure the bare timer loop (with --report: only the
    /// sampler's windows, back to back).
    #[arg(long)]
    pub no_null: bool,

    /// Read powercap zones under this directory (fixtures) instead of
    /// /sys/class/powercap.
    #[arg(long)]
    pub powercap_root: Option<PathBuf>,

    /// Pin the sampling thread to this CPU (default: the CPU that owns the
    /// counters, so reading them needs no IPI; unpinned when none does).
    #[arg(long, value_parser = rbench::cpu::parse_cpu_arg,
          allow_negative_numbers = true)]
    pub cpu: Option<usize>,

    /// Run the sampling thread under SCHED_FIFO (needs CAP_SYS_NICE).
    #[arg(long)]
    pub fifo: bool,

    /// perf-ring: the group's design, timer-leads (lo2s's: the cpu-clock
    /// leads, the counters are its members) or counter-leads (the first
    /// counter leads, a cpu-clock member samples the group). Default: the
    /// first the kernel takes, in that order; the report's trigger says
    /// which ran and what the kernel refused.
    #[arg(long, value_name = "DESIGN", value_parser = Design::parse)]
    pub perf_ring_design: Option<Design>,

    /// The command to run while sampling.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// --pairs without a value.
pub const DEFAULT_PAIRS: u32 = 10;
/// The largest --pairs.
pub const MAX_PAIRS: u32 = 10_000;
/// The fewest sampling periods a window of a --report run may last.
pub const MIN_WINDOW_PERIODS: f64 = 10.0;

impl Args {
    /// The mechanism (clap requires it unless --list).
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
            .expect("clap requires --mechanism unless --list")
    }

    /// The pairs of windows of a --report run (1 with a command: it runs
    /// once).
    pub fn pairs(&self) -> usize {
        self.duration
            .map_or(1, |_| self.pairs.unwrap_or(DEFAULT_PAIRS) as usize)
    }

    /// Checks what clap cannot (each error says which rule); the error is
    /// for the user (exit 2).
    pub fn validate(&self) -> Result<(), String> {
        if self.list {
            return Ok(());
        }
        let in_kernel = self.mechanism.filter(|m| m.in_kernel());
        if let (Some(m), true) = (in_kernel, self.cpu.is_some() || self.fifo) {
            return Err(format!(
                "{} place the user-space sampling thread; the {} mechanism samples in the \
                 kernel, on each package's lead CPU, so they do not apply (leave them out)",
                match (self.cpu, self.fifo) {
                    (Some(_), true) => "--cpu and --fifo",
                    (Some(_), false) => "--cpu",
                    _ => "--fifo",
                },
                m.name()
            ));
        }
        if let (Some(d), false) = (
            self.perf_ring_design,
            self.mechanism == Some(Mechanism::PerfRing),
        ) {
            return Err(format!(
                "--perf-ring-design {} applies to --mechanism perf-ring only",
                d.name()
            ));
        }
        match (self.duration.is_some(), self.command.is_empty()) {
            (true, false) => return Err("give --duration or a command after --, not both".into()),
            (false, true) => return Err("give --duration SECONDS or a command after --".into()),
            _ => {}
        }
        if let Some(k) = self.pairs {
            if self.report.is_none() {
                return Err(format!(
                    "--pairs {k} splits the --report run into windows: give --report FILE too"
                ));
            }
            if self.duration.is_none() {
                return Err(format!(
                    "--pairs {k} needs --duration: a command runs once, so its report has one \
                     pair (the command's run, then the bare timer loop as long)"
                ));
            }
        }
        if let (Some(_), Some(seconds)) = (&self.report, self.duration) {
            let k = self.pairs();
            let window = seconds / k as f64;
            let shortest = MIN_WINDOW_PERIODS / f64::from(self.frequency);
            if window < shortest {
                return Err(format!(
                    "--duration {seconds} split into {k} windows (--pairs{}) leaves {window} s \
                     per window, shorter than {MIN_WINDOW_PERIODS} sampling periods \
                     ({shortest} s at {} Hz): give fewer --pairs or a longer --duration",
                    self.pairs.map_or(", default 10", |_| ""),
                    self.frequency
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("raplbench-sample").chain(args.iter().copied()))
    }

    /// --mechanism offers the registry's mechanisms (results/schema.json),
    /// each with its code, under the registry's names.
    #[test]
    fn the_mechanisms_are_those_of_the_registry() {
        for name in rbench::registry::mechanism_names() {
            let a = parse(&["--mechanism", name, "--duration", "1"]).unwrap();
            assert_eq!(a.mechanism().name(), name);
            assert_eq!(a.mechanism().in_kernel(), rbench::registry::in_kernel(name));
        }
        let names: Vec<&str> = Mechanism::all().into_iter().map(Mechanism::name).collect();
        assert_eq!(names, rbench::registry::mechanism_names());
    }

    #[test]
    fn accepts_the_documented_forms() {
        let a = parse(&[
            "--mechanism",
            "perf",
            "--duration",
            "5",
            "--output",
            "x.csv",
        ])
        .unwrap();
        assert_eq!(
            (a.mechanism, a.frequency, a.duration),
            (Some(Mechanism::Perf), 1000, Some(5.0))
        );
        a.validate().unwrap();
        let b = parse(&[
            "--mechanism",
            "msr",
            "--domains",
            "package-0,dram",
            "--",
            "sleep",
            "1",
        ])
        .unwrap();
        assert_eq!(b.domains, ["package-0", "dram"]);
        assert_eq!(b.command, ["sleep", "1"]);
        b.validate().unwrap();
    }

    #[test]
    fn refuses_bad_options_with_exit_status_2() {
        for bad in [
            &["--mechanism", "rapl", "--duration", "1"][..],
            &["--mechanism", "perf", "--frequency", "0", "--duration", "1"],
            &[
                "--mechanism",
                "perf",
                "--frequency",
                "10001",
                "--duration",
                "1",
            ],
            &["--mechanism", "perf", "--duration", "-1"],
            &["--mechanism", "perf", "--duration", "nan"],
            &[
                "--mechanism",
                "perf-ring",
                "--perf-ring-design",
                "x",
                "--duration",
                "1",
            ],
        ] {
            let err = parse(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }
        assert!(parse(&["--mechanism", "perf"]).unwrap().validate().is_err());
        let design = ["--perf-ring-design", "counter-leads", "--duration", "1"];
        let ring = parse(&[&["--mechanism", "perf-ring"][..], &design].concat()).unwrap();
        assert_eq!(ring.perf_ring_design, Some(Design::CounterLeads));
        assert_eq!(ring.validate(), Ok(()));
        let not_ring = parse(&[&["--mechanism", "ebpf"][..], &design].concat()).unwrap();
        assert!(not_ring.validate().unwrap_err().contains("perf-ring only"));
        assert_eq!(parse(&["--duration", "1"]).unwrap_err().exit_code(), 2); // no mechanism
        let both = parse(&["--mechanism", "perf", "--duration", "1", "--", "true"]).unwrap();
        assert!(both.validate().is_err());
    }

    #[test]
    fn a_negative_number_is_the_options_bad_value_not_a_flag() {
        for (option, value) in [
            ("--frequency", "-1"),
            ("--duration", "-1"),
            ("--pairs", "-1"),
            ("--cpu", "-1"),
            ("--duration", "-0.5"),
        ] {
            let mut args = vec!["--mechanism", "perf", "--report", "r", option, value];
            if option != "--duration" {
                args.extend(["--duration", "1"]);
            }
            let err = parse(&args).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ValueValidation,
                "{option} {value}: {err}"
            );
        }
    }

    #[test]
    fn pairs_default_to_10_one_with_a_command_and_need_report_and_duration() {
        let report = ["--mechanism", "perf", "--report", "r.jsonl"];
        let with = |more: &[&str]| parse(&[&report[..], more].concat());
        let a = with(&["--duration", "10"]).unwrap();
        assert_eq!((a.pairs, a.pairs()), (None, 10));
        a.validate().unwrap();
        let b = with(&["--duration", "0.4", "--pairs", "4"]).unwrap();
        assert_eq!(b.pairs(), 4);
        b.validate().unwrap();
        let c = with(&["--", "sleep", "1"]).unwrap();
        assert_eq!(c.pairs(), 1);
        c.validate().unwrap();
        // bad values: clap's exit status 2
        for bad in ["0", "-1", "x", "1.5", "10001", ""] {
            let err = with(&["--duration", "1", "--pairs", bad]).unwrap_err();
            assert_eq!(err.exit_code(), 2, "--pairs {bad:?}");
        }
        // refused before sampling (exit status 2 in main): without --report,
        // with a command, or windows shorter than 10 periods
        let no_report = parse(&["--mechanism", "perf", "--duration", "1", "--pairs", "4"]).unwrap();
        assert!(no_report.validate().unwrap_err().contains("give --report"));
        let command = with(&["--pairs", "4", "--", "true"]).unwrap();
        assert!(command.validate().unwrap_err().contains("needs --duration"));
        let short = with(&["--duration", "0.05"]).unwrap(); // 5 ms windows at 1 kHz
        let why = short.validate().unwrap_err();
        assert!(why.contains("shorter than 10 sampling periods"), "{why}");
        // at 100 Hz a window needs 0.1 s
        assert!(
            with(&["--duration", "0.5", "--pairs", "5", "--frequency", "100"])
                .unwrap()
                .validate()
                .is_ok()
        );
        assert!(
            with(&["--duration", "0.5", "--pairs", "6", "--frequency", "100"])
                .unwrap()
                .validate()
                .is_err()
        );
        // without --report a short run needs no windows
        let plain = parse(&["--mechanism", "perf", "--duration", "0.001"]).unwrap();
        plain.validate().unwrap();
    }

    #[test]
    fn cpu_and_fifo_are_refused_for_ebpf_and_kernel_not_ignored() {
        let in_kernel = Mechanism::all().into_iter().filter(|m| m.in_kernel());
        for mechanism in in_kernel.map(Mechanism::name) {
            for extra in [&["--cpu", "1"][..], &["--fifo"], &["--cpu", "0", "--fifo"]] {
                let a =
                    parse(&[&["--mechanism", mechanism, "--duration", "1"][..], extra].concat())
                        .unwrap();
                let why = a.validate().unwrap_err();
                assert!(why.contains("do not apply"), "{why}");
            }
        }
        let kernel = parse(&["--mechanism", "kernel", "--duration", "1", "--fifo"]).unwrap();
        assert_eq!(
            kernel.validate().unwrap_err(),
            "--fifo place the user-space sampling thread; the kernel mechanism samples in the \
             kernel, on each package's lead CPU, so they do not apply (leave them out)"
        );
        let perf = parse(&[
            "--mechanism",
            "perf",
            "--duration",
            "1",
            "--cpu",
            "1",
            "--fifo",
        ]);
        perf.unwrap().validate().unwrap();
    }

    #[test]
    fn list_needs_neither_a_mechanism_nor_a_duration() {
        let all = parse(&["--list"]).unwrap();
        assert!(all.list && all.mechanism.is_none());
        all.validate().unwrap();
        let one = parse(&["--list", "--mechanism", "msr"]).unwrap();
        assert_eq!(one.mechanism(), Mechanism::Msr);
        one.validate().unwrap();
    }
}
