//! CLOCK_MONOTONIC, the clock every timestamp of the suite is on (the
//! samplers' deadlines and samples, the kernel's ktime_get_ns, the victim
//! probe's TSC calibration), and the parsing of the binaries' numeric
//! options (--duration in seconds).

/// CLOCK_MONOTONIC now, in ns.
pub fn monotonic_ns() -> u64 {
    let mut ts = timespec(0);
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `ns` as a timespec (an absolute CLOCK_MONOTONIC time or a timeout).
pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// `text` as a finite number for which `fits` holds, else None (each
/// option gives its own message).
pub fn parse_finite(text: &str, fits: impl Fn(f64) -> bool) -> Option<f64> {
    text.parse::<f64>()
        .ok()
        .filter(|&x| x.is_finite() && fits(x))
}

/// A --duration: seconds in (0, 86400] (raplbench-sample's and
/// raplbench-victim's), or why not.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    parse_finite(text, |s| s > 0.0 && s <= 86_400.0)
        .ok_or_else(|| format!("'{text}' is not a number of seconds in (0, 86400]"))
}
