//! rbench: the access paths of raplbench in Rust, for its Criterion harness
//! (`benches/paths.rs`) and its 1 kHz sampler (the `raplbench-sample`
//! binary of this crate).
//!
//! Each mechanism discovers what the machine offers and reads it through
//! one trait, [`CounterSource`]: [`powercap::PowercapSource`] (energy_uj
//! files), [`msr::MsrSource`] (/dev/cpu/N/msr), [`perf::PerfSource`] (perf
//! events); [`paths::ebpf`] reads the slots of the in-kernel
//! [`ebpf::BpfSampler`]. Where the real counter is missing, discovery
//! returns a stand-in of the same kernel route and
//! [`CounterSource::stand_in`] says so, in the same words as the C++
//! harness (ubench). [`discovery`] is the one discovery per mechanism
//! (counters, routes, packages, units, and their [`liveness`] verdicts)
//! that the benchmarks, the sampler and the tests share; [`roots`] says
//! where it looks (and the variables that point it at fixtures). [`delta`]
//! turns readings into wrap-corrected differences.
//!
//! The Criterion harness runs a [`plan::Plan`]: every access path of
//! [`paths`] (one module each, listed once there) plans its rows, each a
//! thing to read or the reason it cannot run; the benchmark opens and
//! times each row alike, in the rounds of [`schedule`], under the row's id
//! in the plan it writes beside its output ([`row_meta`]).
//! The sampler writes raw windows (results/sampler.py builds their rows);
//! [`registry`] holds its mechanisms. [`victim`] is the probe that measures
//! what reads cost the CPU they target (the `raplbench-victim` binary).

#![warn(missing_docs)]

pub mod child;
pub mod clock;
pub mod cpu;
pub mod delta;
pub mod discovery;
pub mod ebpf;
pub mod error;
pub mod hint;
pub mod interfere;
pub mod ksample;
pub mod liveness;
pub mod msr;
pub mod paths;
pub mod perf;
pub mod plan;
pub mod powercap;
pub mod registry;
pub mod roots;
pub mod row_meta;
mod say;
pub mod schedule;
pub mod signals;
mod source;
pub mod summary;
mod sysfs;
#[cfg(test)]
mod testutil;
pub mod victim;

pub use error::Error;
pub use source::{CounterSource, Domain, Joined};
