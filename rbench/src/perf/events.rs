//! One perf event as sysfs describes it (which events there are is
//! discovery's: crate::discovery), and the label of a set of them.

use crate::Domain;

/// One perf event as sysfs describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfEventSpec {
    /// "power/energy-pkg/".
    pub name: String,
    /// perf_event_attr.type (the PMU's `type`).
    pub type_: u32,
    /// perf_event_attr.config, encoded through the PMU's format directory.
    pub config: u64,
    /// count * scale is in `unit`.
    pub scale: f64,
    /// "Joules", or empty.
    pub unit: String,
    /// The PMU's cpumask, else every online CPU.
    pub cpus: Vec<usize>,
}

impl PerfEventSpec {
    /// The event name without its PMU: "energy-pkg" for "power/energy-pkg/".
    pub fn short_name(&self) -> &str {
        let inner = self.name.trim_end_matches('/');
        inner.split_once('/').map_or(inner, |(_, event)| event)
    }

    /// The counter this event is as read at `source` ("cpu0", "package-0"):
    /// named by its short name, never wrapping before u64::MAX, in joules
    /// per count the scale of an event counted in Joules, else 0.0 (not
    /// energy).
    pub fn domain(&self, source: String) -> Domain {
        Domain {
            source,
            name: self.short_name().to_string(),
            joules_per_unit: if self.unit == "Joules" {
                self.scale
            } else {
                0.0
            },
            max: u64::MAX,
        }
    }
}

/// The events' common label: "msr/tsc/", or "power/{energy-pkg,energy-ram}/"
/// in the events' order (the target of perf and eBPF result rows).
pub fn events_label(events: &[PerfEventSpec]) -> String {
    match events {
        [] => String::new(),
        [one] => one.name.clone(),
        [first, ..] => {
            let pmu = first.name.split('/').next().unwrap_or("");
            let names: Vec<&str> = events.iter().map(PerfEventSpec::short_name).collect();
            format!("{pmu}/{{{}}}/", names.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str) -> PerfEventSpec {
        PerfEventSpec {
            name: name.into(),
            type_: 23,
            config: 0,
            scale: 1.0,
            unit: "Joules".into(),
            cpus: vec![0],
        }
    }

    #[test]
    fn labels() {
        let (pkg, ram) = (event("power/energy-pkg/"), event("power/energy-ram/"));
        assert_eq!(
            events_label(std::slice::from_ref(&pkg)),
            "power/energy-pkg/"
        );
        assert_eq!(events_label(&[pkg, ram]), "power/{energy-pkg,energy-ram}/");
        assert_eq!(events_label(&[]), "");
        assert_eq!(event("power/energy-pkg/").short_name(), "energy-pkg");
    }
}
