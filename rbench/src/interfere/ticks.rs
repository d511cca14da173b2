//! The sampler's ticks in a window, from its CSV (one line per sample and
//! counter): the distinct `time_ns` values within the window. `time_ns` is
//! CLOCK_MONOTONIC ([`crate::clock`]; for the in-kernel mechanisms the
//! kernel's `ktime_get_ns`, the same clock), so the window's TSC bounds are
//! converted to it first ([`TscClock`]).

/// TSC to CLOCK_MONOTONIC, from one stamp taken together and the TSC
/// frequency the victim's calibration measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TscClock {
    /// CLOCK_MONOTONIC ns at the stamp.
    pub mono_ns: u64,
    /// The TSC at the stamp.
    pub tsc: u64,
    /// TSC frequency, GHz.
    pub tsc_ghz: f64,
}

impl TscClock {
    /// A stamp taken now ([`crate::victim::calibrate::stamp`]).
    pub fn now(tsc_ghz: f64) -> TscClock {
        let (mono_ns, tsc) = crate::victim::calibrate::stamp();
        TscClock {
            mono_ns,
            tsc,
            tsc_ghz,
        }
    }

    /// The CLOCK_MONOTONIC time of TSC value `tsc`, ns.
    pub fn mono_of(&self, tsc: u64) -> u64 {
        let d = (tsc as f64 - self.tsc as f64) / self.tsc_ghz;
        (self.mono_ns as f64 + d).max(0.0).round() as u64
    }
}

/// The distinct `time_ns` values (first column) in `[from_ns, to_ns)` of
/// the CSV `text` (its header skipped). A line whose first field is not a
/// number is an error, with the line.
pub fn count_ticks(text: &str, from_ns: u64, to_ns: u64) -> Result<u64, String> {
    let mut times = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        if (i == 0 && line.starts_with("time_ns")) || line.is_empty() {
            continue;
        }
        let first = line.split(',').next().unwrap_or_default();
        let t: u64 = first
            .parse()
            .map_err(|_| format!("line {}: time_ns '{first}' is not a number", i + 1))?;
        if (from_ns..to_ns).contains(&t) {
            times.insert(t);
        }
    }
    Ok(times.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "time_ns,source,domain,raw,delta_j\n\
        100,package-0,package-0,5,\n\
        100,package-0,dram,7,\n\
        200,package-0,package-0,6,0.1\n\
        200,package-0,dram,8,0.1\n\
        300,package-0,package-0,7,0.1\n\
        250,package-1,package-1,3,\n\
        400,package-0,package-0,8,0.1\n";

    #[test]
    fn ticks_are_distinct_times_in_the_window() {
        assert_eq!(count_ticks(CSV, 0, 1000), Ok(5));
        assert_eq!(count_ticks(CSV, 100, 300), Ok(3)); // 100, 200, 250
        assert_eq!(count_ticks(CSV, 101, 400), Ok(3)); // 200, 250, 300
        assert_eq!(count_ticks(CSV, 500, 600), Ok(0));
        assert_eq!(
            count_ticks("time_ns,source,domain,raw,delta_j\n", 0, 9),
            Ok(0)
        );
    }

    #[test]
    fn a_malformed_line_is_an_error() {
        let err = count_ticks("time_ns,a\n12,x\nabc,y\n", 0, 100).unwrap_err();
        assert!(err.starts_with("line 3:"), "{err}");
    }

    #[test]
    fn tsc_converts_to_monotonic_time() {
        let c = TscClock {
            mono_ns: 1_000,
            tsc: 10_000,
            tsc_ghz: 2.0,
        };
        assert_eq!(c.mono_of(12_000), 2_000);
        assert_eq!(c.mono_of(9_000), 500);
        assert_eq!(c.mono_of(0), 0); // clamped, never negative
    }
}
