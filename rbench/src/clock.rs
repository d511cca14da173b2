//! CLOCK_MONOTONIC, the clock every timestamp of the suite is on (the
//! samplers' deadlines and samples, the kernel's ktime_get_ns, the victim
//! probe's TSC calibration), and the binaries' --duration in seconds.

/// CLOCK_MONOTONIC now, in ns.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
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

/// A --duration: seconds in (0, 86400] (raplbench-sample's and
/// raplbench-victim's), or why not.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(s),
        _ => Err(format!("'{text}' is not a number of seconds in (0, 86400]")),
    }
}
