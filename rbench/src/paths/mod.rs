//! The access paths, one module each, and the one list of them ([`PATHS`]).
//!
//! Each path module has a `pub fn plan(machine: &Machine, plan: &mut Plan)`
//! that appends one [`Planned`](crate::plan::Planned) row per (op, target,
//! placement). Adding a path: CONTRIBUTING.md, "Adding an access path"
//! (rows that open something no path opens yet also need a branch of
//! [`reads_of`]).

use std::sync::Arc;

use serde_json::Value;

use crate::ebpf::BpfSampler;
use crate::plan::{Machine, Plan, Reads};

/// Declares the path modules and [`PATHS`], in the order of the plan's (and
/// so both harnesses') rows.
macro_rules! paths {
    ($($name:ident),* $(,)?) => {
        $(pub mod $name;)*

        /// Every path's planner, in the order of the plan's rows.
        pub const PATHS: &[fn(&Machine, &mut Plan)] = &[$($name::plan),*];
    };
}

paths!(uinsn, powercap, msr_dev, perf, ebpf);

/// Every path of [`PATHS`] on `machine`, in that order.
pub fn plan_on(machine: &Machine) -> Plan {
    let mut plan = Plan::default();
    for path in PATHS {
        path(machine, &mut plan);
    }
    plan
}

/// Every path on this machine (or on the fixtures the environment names,
/// see [`crate::roots`]): probes the counters' liveness and starts the BPF
/// sampler.
pub fn plan_this_machine() -> Plan {
    plan_on(&Machine::from_env())
}

/// What a runnable row of a plan's JSON reads, from its "open" (the
/// inverse of each path's [`Reads::spec`]): how the Criterion benchmark
/// opens the rows of the run's plan, which another process made. The eBPF
/// rows of one sampler share it (`started`: those started so far).
pub fn reads_of(
    open: &Value,
    started: &mut Vec<(Value, Arc<BpfSampler>)>,
) -> Result<Box<dyn Reads>, String> {
    if let Some(reads) = powercap::PowercapReads::from_spec(open) {
        return Ok(Box::new(reads));
    }
    if let Some(reads) = msr_dev::MsrReads::from_spec(open) {
        return Ok(Box::new(reads));
    }
    if let Some(reads) = perf::PerfReads::from_spec(open) {
        return Ok(Box::new(reads));
    }
    match ebpf::EbpfReads::from_spec(open, started) {
        Some(Ok(reads)) => Ok(Box::new(reads)),
        Some(Err(e)) => Err(e.to_string()),
        None => Err(format!("rbench does not time {open}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::Roots;
    use crate::testutil::{testdata_sys, two_packages_sys, TempDir};
    use std::time::Duration;

    /// The paths of `rows` in the order they first appear.
    fn path_order<'a>(rows: impl Iterator<Item = &'a crate::plan::Planned>) -> Vec<String> {
        let mut paths: Vec<String> = Vec::new();
        for row in rows {
            if !paths.contains(&row.meta.path) {
                paths.push(row.meta.path.clone());
            }
        }
        paths
    }

    #[test]
    fn a_fixture_machine_plans_each_harness_its_registry_paths_in_order() {
        let sys = testdata_sys();
        let empty = TempDir::new("plan-fixture");
        let machine = Machine::new(
            Roots {
                powercap: sys.join("class/powercap"),
                dev_cpu: empty.path().to_path_buf(),
                pmu: sys.join("bus/event_source/devices"),
                cpu: two_packages_sys().join("devices/system/cpu"),
            },
            Duration::from_millis(10),
        );
        let plan = plan_on(&machine);
        for harness in ["gbench", "criterion"] {
            assert_eq!(
                path_order(plan.timed_by(harness)),
                crate::registry::paths_of(harness),
                "{harness}"
            );
        }
        // the fixture's msr root is empty: no device, no cpuid stand-in
        let msr = plan.rows.iter().find(|r| r.meta.path == "msr-dev").unwrap();
        assert!(msr
            .reason()
            .unwrap()
            .contains(" missing: load the msr module"));
        // every runnable row says what to open
        assert!(plan.rows.iter().all(|r| r
            .reads
            .as_ref()
            .map_or(true, |reads| reads.spec().is_object())));
        // each runnable row but the eBPF ones (their sampler cannot start on
        // a fixture) opens again from what its spec says
        let mut started = Vec::new();
        for reads in plan.rows.iter().filter_map(|r| r.reads.as_ref().ok()) {
            let spec = reads.spec();
            if spec.get("bpf").is_none() && spec.get("insn").is_none() {
                let again = reads_of(&spec, &mut started).unwrap().spec();
                assert_eq!(again, spec);
            }
        }
        // each row's id is its own: the harnesses' outputs join to rows by it
        let ids: std::collections::HashSet<String> = plan.rows.iter().map(|r| r.id(None)).collect();
        assert_eq!(ids.len(), plan.rows.len());
    }
}
