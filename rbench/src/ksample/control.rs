//! The state the module reports when /proc/ksample/control is read, in the
//! format kbench/ksample.h describes beside KSAMPLE_FORMAT.
//!
//! Parsing is strict about what it reads: a wrong first line, a missing
//! key, a bad number or a package line out of order is an error naming the
//! line, since misreading the MSR order would put one domain's energy under
//! another's name. A "key: value" line it does not know is skipped.

use super::MAX_VALUES;
use crate::msr::msr_hex;
use crate::Error;

/// The control file's first line: the format this reader understands.
pub const FORMAT: &str = "# ksample 1";

/// What the last start asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// "start": the energy MSRs are read.
    Read,
    /// "null": the same timers, nothing read.
    Null,
}

/// One package's line pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageState {
    /// Its index: the records' `package`.
    pub index: u32,
    /// Its lead CPU, where its timer runs.
    pub cpu: usize,
    /// The vendor's energy unit MSR.
    pub unit_msr: u32,
    /// What the unit MSR read on the lead CPU; None where the read faulted.
    pub unit: Option<u64>,
    /// The energy MSRs sampled, in the order of a record's value[].
    pub msrs: Vec<u32>,
    /// The energy MSRs left out because they faulted there.
    pub faulting: Vec<u32>,
    /// What its timer did since the last start.
    pub counters: PackageCounters,
}

/// A package's "counters" line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackageCounters {
    /// Timer callbacks run.
    pub fired: u64,
    /// Periods the timer skipped (it fired late by more than a period).
    pub missed: u64,
    /// Records dropped on a full ring.
    pub overruns: u64,
    /// MSR reads that faulted.
    pub read_faults: u64,
    /// Total time in the callback, ns.
    pub busy_ns: u64,
    /// Largest time of one callback, ns.
    pub max_busy_ns: u64,
    /// The seq of the next record.
    pub next_seq: u64,
    /// Records queued now.
    pub queued: u64,
}

/// The whole control file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Whether the timers run.
    pub running: bool,
    /// The last start's mode.
    pub mode: Mode,
    /// The last start's rate (0 before any).
    pub rate_hz: u32,
    /// sizeof(struct ksample_record).
    pub record_size: usize,
    /// Records queued per package at most.
    pub ring_records: u64,
    /// Every package, in index order.
    pub packages: Vec<PackageState>,
}

impl Status {
    /// The callbacks' total time over every package, ns.
    pub fn busy_ns(&self) -> u64 {
        self.packages.iter().map(|p| p.counters.busy_ns).sum()
    }
}

/// Per wanted (package, MSR), the package and the index of the MSR in its
/// records' value[], as the last start laid them out; an error naming an
/// MSR the module does not read (it faulted at that start).
pub fn value_slots(status: &Status, wanted: &[(u32, u32)]) -> Result<Vec<(u32, usize)>, Error> {
    wanted
        .iter()
        .map(|&(package, msr)| {
            (status.packages.iter())
                .find(|p| p.index == package)
                .and_then(|p| p.msrs.iter().position(|&m| m == msr))
                .filter(|&slot| slot < MAX_VALUES)
                .map(|slot| (package, slot))
                .ok_or_else(|| {
                    Error::Unavailable(format!(
                        "ksample does not read MSR {} of package {package} since its last start \
                         (it faulted there, or the package is gone): leave it out with --domains",
                        msr_hex(msr)
                    ))
                })
        })
        .collect()
}

/// "0x606" (hex) or "5012" (decimal), as the module prints numbers.
fn number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The words of a "package N ..." or "counters N ..." line after its
/// index, as (name, value) pairs.
struct Fields<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Fields<'a> {
    fn of(words: &[&'a str]) -> Result<Fields<'a>, String> {
        if words.len() % 2 != 0 {
            return Err("a name without a value".into());
        }
        Ok(Fields(words.chunks(2).map(|p| (p[0], p[1])).collect()))
    }

    fn text(&self, name: &str) -> Result<&'a str, String> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("no {name}"))
    }

    fn number(&self, name: &str) -> Result<u64, String> {
        let text = self.text(name)?;
        number(text).ok_or_else(|| format!("{name} '{text}' is not a number"))
    }

    /// "0x611,0x639" or "-" (none).
    fn msrs(&self, name: &str) -> Result<Vec<u32>, String> {
        let text = self.text(name)?;
        if text == "-" {
            return Ok(Vec::new());
        }
        let msr = |m| number(m).and_then(|v| u32::try_from(v).ok());
        (text.split(',').map(msr).collect::<Option<_>>())
            .ok_or_else(|| format!("{name} '{text}' is not a list of MSRs or -"))
    }
}

fn small<T: TryFrom<u64>>(value: u64, name: &str) -> Result<T, String> {
    T::try_from(value).map_err(|_| format!("{name} {value} is out of range"))
}

fn package_line(index: u32, f: &Fields) -> Result<PackageState, String> {
    let unit = match f.text("unit")? {
        "fault" => None,
        text => {
            Some(number(text).ok_or_else(|| format!("unit '{text}' is not a number or fault"))?)
        }
    };
    Ok(PackageState {
        index,
        cpu: small(f.number("cpu")?, "cpu")?,
        unit_msr: small(f.number("unit_msr")?, "unit_msr")?,
        unit,
        msrs: f.msrs("msrs")?,
        faulting: f.msrs("faulting")?,
        counters: PackageCounters::default(),
    })
}

fn counters_line(f: &Fields) -> Result<PackageCounters, String> {
    Ok(PackageCounters {
        fired: f.number("fired")?,
        missed: f.number("missed")?,
        overruns: f.number("overruns")?,
        read_faults: f.number("read_faults")?,
        busy_ns: f.number("busy_ns")?,
        max_busy_ns: f.number("max_busy_ns")?,
        next_seq: f.number("next_seq")?,
        queued: f.number("queued")?,
    })
}

/// The key: value lines read so far.
#[derive(Default)]
struct Keys {
    state: Option<bool>,
    mode: Option<Mode>,
    rate_hz: Option<u32>,
    record_size: Option<usize>,
    ring_records: Option<u64>,
    packages: Option<usize>,
}

impl Keys {
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let num = || number(value).ok_or_else(|| format!("{key} '{value}' is not a number"));
        match key {
            "state" => {
                self.state = Some(match value {
                    "running" => true,
                    "stopped" => false,
                    _ => return Err(format!("state '{value}' is not running or stopped")),
                })
            }
            "mode" => {
                self.mode = Some(match value {
                    "read" => Mode::Read,
                    "null" => Mode::Null,
                    _ => return Err(format!("mode '{value}' is not read or null")),
                })
            }
            "rate_hz" => self.rate_hz = Some(small(num()?, key)?),
            "record_size" => self.record_size = Some(small(num()?, key)?),
            "ring_records" => self.ring_records = Some(num()?),
            "packages" => self.packages = Some(small(num()?, key)?),
            _ => {} // a key this reader does not need
        }
        Ok(())
    }
}

fn missing(key: &str) -> String {
    format!("no '{key}:' line")
}

/// Parses the control file's text; the error names the line and what is
/// wrong with it.
pub fn parse(text: &str) -> Result<Status, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, FORMAT)) => {}
        first => {
            return Err(format!(
                "first line '{}', not '{FORMAT}': the module and this raplbench-sample \
                 disagree on the format (build both from the same tree)",
                first.map_or("", |(_, l)| l).escape_debug()
            ))
        }
    }
    let mut keys = Keys::default();
    let mut packages: Vec<PackageState> = Vec::new();
    for (i, line) in lines {
        let at = |why: String| format!("line {} '{}': {why}", i + 1, line.escape_debug());
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            [kind @ ("package" | "counters"), index, rest @ ..] => {
                let index: u32 = index
                    .parse()
                    .map_err(|_| at(format!("{kind} index '{index}' is not a number")))?;
                let fields = Fields::of(rest).map_err(at)?;
                if *kind == "package" {
                    if index as usize != packages.len() {
                        return Err(at(format!("expected package {}", packages.len())));
                    }
                    packages.push(package_line(index, &fields).map_err(at)?);
                } else {
                    let counters = counters_line(&fields).map_err(at)?;
                    match packages.last_mut() {
                        Some(p) if p.index == index => p.counters = counters,
                        _ => return Err(at("counters of a package not just described".into())),
                    }
                }
            }
            _ => match line.split_once(": ") {
                Some((key, value)) if !key.contains(' ') => {
                    keys.set(key, value.trim()).map_err(at)?
                }
                _ => {
                    return Err(at(
                        "neither 'key: value' nor a package or counters line".into()
                    ))
                }
            },
        }
    }
    let count = keys.packages.ok_or_else(|| missing("packages"))?;
    if count != packages.len() {
        return Err(format!(
            "packages: {count}, but {} package lines",
            packages.len()
        ));
    }
    Ok(Status {
        running: keys.state.ok_or_else(|| missing("state"))?,
        mode: keys.mode.ok_or_else(|| missing("mode"))?,
        rate_hz: keys.rate_hz.ok_or_else(|| missing("rate_hz"))?,
        record_size: keys.record_size.ok_or_else(|| missing("record_size"))?,
        ring_records: keys.ring_records.ok_or_else(|| missing("ring_records"))?,
        packages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ksample::TWO_PACKAGES;

    #[test]
    fn reads_every_line_kind() {
        let s = parse(TWO_PACKAGES).unwrap();
        assert!(s.running);
        assert_eq!(s.mode, Mode::Read);
        assert_eq!(
            (s.rate_hz, s.record_size, s.ring_records),
            (1000, 88, 16384)
        );
        let p0 = &s.packages[0];
        assert_eq!(
            (p0.index, p0.cpu, p0.unit_msr, p0.unit),
            (0, 0, 0x606, Some(0xa0e03))
        );
        assert_eq!(p0.msrs, [0x611, 0x639, 0x641, 0x619, 0x64d]);
        assert!(p0.faulting.is_empty());
        assert_eq!(
            p0.counters,
            PackageCounters {
                fired: 5012,
                missed: 3,
                overruns: 0,
                read_faults: 0,
                busy_ns: 2_345_678,
                max_busy_ns: 2100,
                next_seq: 5012,
                queued: 12,
            }
        );
        let p1 = &s.packages[1];
        assert_eq!((p1.cpu, p1.unit), (28, None));
        assert!(p1.msrs.is_empty());
        assert_eq!(p1.faulting, [0x611, 0x639]);
        assert_eq!((p1.counters.overruns, p1.counters.read_faults), (7, 2));
        assert_eq!(s.busy_ns(), 2_346_678);
    }

    #[test]
    fn stopped_null_and_unknown_keys() {
        let text = TWO_PACKAGES
            .replace("state: running", "state: stopped")
            .replace("mode: read", "mode: null\nfuture_key: 7");
        let s = parse(&text).unwrap();
        assert!(!s.running);
        assert_eq!(s.mode, Mode::Null);
    }

    /// Each broken line is refused with its number and what is wrong.
    #[test]
    fn malformed_text_is_a_clear_error() {
        let cases = [
            ("# ksample 1", "# ksample 2", "first line '# ksample 2', not '# ksample 1'"),
            ("# ksample 1\n", "", "first line 'state: running'"),
            ("state: running", "state: paused", "line 2 'state: paused': state 'paused' is not running or stopped"),
            ("rate_hz: 1000", "rate_hz: fast", "rate_hz 'fast' is not a number"),
            ("packages: 2", "packages: 3", "packages: 3, but 2 package lines"),
            ("ring_records: 16384\n", "", "no 'ring_records:' line"),
            ("unit 0xa0e03", "unit 0xzz", "unit '0xzz' is not a number or fault"),
            ("msrs 0x611,0x639,0x641", "msrs 0x611,,0x641", "msrs '0x611,,0x641,0x619,0x64d' is not a list of MSRs or -"),
            ("cpu 28", "cpux 28", "line 10 'package 1 cpux 28 unit_msr 0x606 unit fault msrs - faulting 0x611,0x639': no cpu"),
            ("busy_ns 1000", "busy_ns -", "busy_ns '-' is not a number"),
            ("queued 0\n", "queued\n", "a name without a value"),
            ("counters 1", "counters 0", "line 11 'counters 0 fired 5011"),
            ("package 1", "package 2", "expected package 1"),
            ("package 0", "package x", "package index 'x' is not a number"),
            ("mode: read", "mode read", "line 3 'mode read': neither 'key: value' nor a package or counters line"),
        ];
        for (from, to, want) in cases {
            assert!(TWO_PACKAGES.contains(from), "{from}");
            let err = parse(&TWO_PACKAGES.replacen(from, to, 1)).unwrap_err();
            assert!(err.contains(want), "{from} -> {to}: {err}");
        }
    }

    #[test]
    fn slots_follow_the_packages_msrs_order() {
        let status = parse(TWO_PACKAGES).unwrap();
        assert_eq!(
            value_slots(&status, &[(0, 0x619), (0, 0x611)]).unwrap(),
            [(0, 3), (0, 0)]
        );
        let err = value_slots(&status, &[(1, 0x611)]).unwrap_err().to_string();
        assert!(
            err.starts_with("ksample does not read MSR 0x611 of package 1"),
            "{err}"
        );
    }
}
