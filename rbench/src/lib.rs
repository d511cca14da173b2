//! rbench: the access paths of raplbench in Rust, for its Criterion harness
//! (`benches/paths.rs`) and its 1 kHz sampler (the `raplbench-sample`
//! binary of this crate).
//!
//! Each mechanism reads through one trait, [`CounterSource`]; [`discovery`]
//! finds what each would read here, and [`plan::Plan`] holds the rows both
//! harnesses time, planned by one module of [`paths`] per access path. What
//! each module holds: rbench/README.md, "The library".

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
pub mod target_load;
#[cfg(test)]
mod testutil;
pub mod victim;

pub use error::Error;
pub use source::{CounterSource, Domain, Joined};
