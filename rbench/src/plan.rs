//! What the Criterion harness measures on this machine: for every access
//! path, the rows ubench registers (same ops, targets, placements and
//! stand_in words, so rows of the two harnesses pair up), each with what to
//! read, or the reason it cannot run. The benchmark only runs the plan.
//!
//! Each path plans its own rows ([`crate::paths`]); a runnable row carries
//! what it [`Reads`], which the benchmark opens (after pinning the thread)
//! into a [`Reader`] and times one [`Reader::read`] per iteration.

use std::fmt;

use crate::cpu::Placement;
use crate::hint::do_not_optimize;
use crate::liveness::Liveness;
use crate::manifest::{Manifest, RowMeta};
use crate::paths::{Machine, PATHS};
use crate::{CounterSource, Error};

/// One operation of a row, ready to be timed.
pub trait Reader {
    /// One operation (one timed iteration).
    fn read(&mut self) -> Result<(), Error>;

    /// `n` operations in a row, stopping at the first that fails: the
    /// timed loop. Called through the trait object once per sample, it
    /// calls [`Reader::read`] statically, so no indirect call is timed.
    fn read_n(&mut self, n: u64) -> Result<(), Error> {
        for _ in 0..n {
            self.read()?;
        }
        Ok(())
    }

    /// Once the measurement ended: why its reads were no data (the row is
    /// then an error, not a figure), or None.
    fn no_data(&mut self) -> Option<String> {
        None
    }
}

/// What a runnable row reads, opened lazily: the benchmark pins its thread
/// to the row's CPU first. Criterion does not expose its command-line
/// filter, so the benchmark pins, opens and reads once every runnable row,
/// also those the filter leaves out (Criterion then times nothing, and the
/// manifest still lists the row as measured).
pub trait Reads: fmt::Debug + TestDowncast {
    /// Opens it (an error makes the row unavailable, with the reason).
    fn open(&self) -> Result<Box<dyn Reader + '_>, Error>;
}

/// `Any` in the crate's unit tests, so they can see what a row reads
/// ([`Planned::reads_as`]); in every other build, no bound at all.
#[cfg(test)]
pub trait TestDowncast: std::any::Any {}
#[cfg(test)]
impl<T: std::any::Any> TestDowncast for T {}
/// `Any` in the crate's unit tests, so they can see what a row reads; in
/// every other build, no bound at all.
#[cfg(not(test))]
pub trait TestDowncast {}
#[cfg(not(test))]
impl<T: ?Sized> TestDowncast for T {}

/// A [`Reader`] of a [`CounterSource`]: one read of every domain per
/// operation, as the sampler reads.
pub struct SourceReader<S> {
    /// The open source.
    source: S,
    /// Its values, one per domain.
    out: Vec<u64>,
}

impl<S: CounterSource + 'static> SourceReader<S> {
    /// Reads `source`, boxed as a [`Reader`].
    pub fn boxed(source: S) -> Box<dyn Reader> {
        let out = vec![0u64; source.domains().len()];
        Box::new(SourceReader { source, out })
    }
}

impl<S: CounterSource> Reader for SourceReader<S> {
    #[inline(always)] // into read_n, the timed loop
    fn read(&mut self) -> Result<(), Error> {
        let result = self.source.read(&mut self.out);
        do_not_optimize(&self.out[..]);
        result
    }
}

/// One row of the plan: a benchmark to run, or why it cannot.
#[derive(Debug)]
pub struct Planned {
    /// The row's place in the results schema.
    pub meta: RowMeta,
    /// What to read, or the reason the row is unavailable.
    pub reads: Result<Box<dyn Reads>, String>,
}

impl Planned {
    /// A row to measure.
    pub fn run(meta: RowMeta, reads: impl Reads + 'static) -> Planned {
        Planned {
            meta,
            reads: Ok(Box::new(reads)),
        }
    }

    /// A row that cannot run here, with a reason a person can act on.
    pub fn unavailable(meta: RowMeta, reason: impl Into<String>) -> Planned {
        Planned {
            meta,
            reads: Err(reason.into()),
        }
    }

    /// Why the row cannot run, or None.
    pub fn reason(&self) -> Option<&str> {
        self.reads.as_ref().err().map(String::as_str)
    }

    /// What the row reads, if it runs and reads a `T` (for tests).
    #[cfg(test)]
    pub fn reads_as<T: Reads>(&self) -> Option<&T> {
        let reads: &dyn std::any::Any = &**self.reads.as_ref().ok()?;
        reads.downcast_ref()
    }

    /// The Criterion parameter `"<target>@<placement label>"`.
    pub fn parameter(&self) -> String {
        let placement = Placement {
            cpu: self.meta.cpu.unwrap_or(0),
            target_cpu: self.meta.target_cpu,
        };
        format!(
            "{}@{}",
            self.meta.target.as_deref().unwrap_or(""),
            placement.label()
        )
    }

    /// The Criterion full id `"<path>/<op>/<target>@<placement label>"`.
    pub fn full_id(&self) -> String {
        format!("{}/{}/{}", self.meta.path, self.meta.op, self.parameter())
    }
}

/// The row meta of a latency row (an empty target is none).
pub fn meta(
    path: &str,
    op: &str,
    target: Option<&str>,
    placement: Option<Placement>,
    stand_in: Option<&str>,
    liveness: Option<Liveness>,
) -> RowMeta {
    RowMeta {
        path: path.to_string(),
        op: op.to_string(),
        target: target.filter(|t| !t.is_empty()).map(str::to_string),
        cpu: placement.map(|p| p.cpu),
        target_cpu: placement.and_then(|p| p.target_cpu),
        stand_in: stand_in.map(str::to_string),
        liveness: None,
        liveness_note: None,
    }
    .with_liveness(liveness)
}

/// The whole plan. What its rows read and must keep running meanwhile is
/// held by the rows (the eBPF rows share the BPF sampler through an `Arc`:
/// it stops with the last of them).
#[derive(Default)]
pub struct Plan {
    /// Every row, path by path in the order of [`PATHS`].
    pub rows: Vec<Planned>,
}

impl Plan {
    /// Every path on this machine (or on the fixtures the environment
    /// names, see [`crate::roots`]): probes the counters' liveness and
    /// starts the BPF sampler.
    pub fn for_this_machine() -> Plan {
        Plan::on(&Machine::from_env())
    }

    /// Every path of [`PATHS`] on `machine`, in that order.
    pub fn on(machine: &Machine) -> Plan {
        let mut plan = Plan::default();
        for path in PATHS {
            path(machine, &mut plan);
        }
        plan
    }

    /// The manifest of the plan before anything runs: every runnable row
    /// "ok" with its benchmark id, the others unavailable with the reason.
    pub fn manifest(&self) -> Manifest {
        let mut manifest = Manifest::default();
        for row in &self.rows {
            match &row.reads {
                Ok(_) => manifest.add_measured(&row.full_id(), &row.meta),
                Err(reason) => manifest.add_unavailable(&row.meta, reason),
            }
        }
        manifest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Status;
    use crate::paths::Machine;
    use crate::roots::Roots;
    use crate::testutil::{testdata_sys, two_packages_sys, TempDir};
    use std::time::Duration;

    #[test]
    fn a_fixture_machine_plans_every_path_in_order() {
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
        let plan = Plan::on(&machine);
        // each path's first row, in order (runnable eBPF rows alternate
        // lookup and load at every placement, so paths recur)
        let mut paths: Vec<&str> = Vec::new();
        for row in &plan.rows {
            if !paths.contains(&row.meta.path.as_str()) {
                paths.push(&row.meta.path);
            }
        }
        assert_eq!(
            paths,
            ["powercap", "msr-dev", "perf", "ebpf-lookup", "ebpf-mmap"]
        );
        let manifest = plan.manifest();
        assert_eq!(manifest.rows.len(), plan.rows.len());
        for (row, planned) in manifest.rows.iter().zip(&plan.rows) {
            match planned.reason() {
                None => {
                    assert_eq!(row.status, Status::Ok);
                    assert_eq!(row.bench.as_deref(), Some(planned.full_id().as_str()));
                }
                Some(reason) => {
                    assert_eq!(row.status, Status::Unavailable);
                    assert_eq!(row.reason.as_deref(), Some(reason));
                    assert_eq!(row.bench, None);
                }
            }
        }
        // the fixture's msr root is empty: no device, no cpuid stand-in
        let msr = plan.rows.iter().find(|r| r.meta.path == "msr-dev").unwrap();
        assert!(msr
            .reason()
            .unwrap()
            .contains(" missing: load the msr module"));
    }
}
