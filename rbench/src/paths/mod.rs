//! The access paths of the Criterion harness, one module each, and the one
//! list of them ([`PATHS`]).
//!
//! A path module plans its rows on a [`Machine`]: a `pub fn plan(machine:
//! &Machine, plan: &mut Plan)` that appends to `plan.rows` one
//! [`Planned`](crate::plan::Planned)
//! row per (op, target, placement), in ubench's order and words: a row that
//! runs carries what it reads (a type implementing [`crate::plan::Reads`],
//! opened lazily into a [`crate::plan::Reader`] by the benchmark), a row
//! that cannot carries the reason. Anything its rows read that must run
//! meanwhile is held by the rows themselves (the eBPF rows share the BPF
//! sampler through an `Arc`).
//!
//! Adding a path: a new file `paths/<name>.rs` with its `plan` (and its
//! tests), and its name in the `paths!` list below. Nothing else changes in
//! the crate: the plan, the manifest and the benchmark run every path alike.
//! (The results side lists the path id in results/schema.json.)

use std::cell::OnceCell;
use std::time::Duration;

use crate::cpu::Cpus;
use crate::discovery::{perf_counters, Counters};
use crate::liveness::LIVENESS_WINDOW;
use crate::plan::Plan;
use crate::roots::Roots;
use crate::Error;

/// Declares the path modules and [`PATHS`], in the order of the plan's (and
/// the manifest's) rows.
macro_rules! paths {
    ($($name:ident),* $(,)?) => {
        $(pub mod $name;)*

        /// Every path's planner, in the order of the plan's rows.
        pub const PATHS: &[fn(&Machine, &mut Plan)] = &[$($name::plan),*];
    };
}

paths!(powercap, msr_dev, perf, ebpf);

/// What the paths are planned on: where the kernel's interfaces are, how
/// long counters are probed, and the discoveries paths share (found once,
/// when the first path asks). (How long the eBPF path watches its slots is
/// the slot check's: [`crate::ebpf::slot_check::SLOT_CHECK`].)
pub struct Machine {
    /// The powercap, msr device, PMU and CPU directories.
    pub roots: Roots,
    /// How long each counter set is probed for liveness.
    pub window: Duration,
    /// The perf discovery, probed (the perf and eBPF paths read the same
    /// events).
    perf: OnceCell<Result<Counters, Error>>,
}

impl Machine {
    /// A machine whose interfaces are under `roots`.
    pub fn new(roots: Roots, window: Duration) -> Machine {
        Machine {
            roots,
            window,
            perf: OnceCell::new(),
        }
    }

    /// This machine, or the fixtures the environment names
    /// ([`crate::roots`]), with the default probe windows.
    pub fn from_env() -> Machine {
        Machine::new(Roots::from_env(), LIVENESS_WINDOW)
    }

    /// The CPUs under the CPU root: the rows' placements.
    pub fn cpus(&self) -> Cpus {
        Cpus::at(&self.roots.cpu)
    }

    /// The energy perf events (or their stand-in) on every package, each
    /// probed for liveness for [`Machine::window`]; discovered on the first
    /// call.
    pub fn perf(&self) -> &Result<Counters, Error> {
        self.perf.get_or_init(|| {
            perf_counters(&self.roots.pmu, &self.roots.cpu).map(|mut found| {
                found.probe(self.window);
                found
            })
        })
    }
}
