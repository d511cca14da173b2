//! What a result row is about, in the schema's terms (results/schema.json),
//! and its status: the plan's rows (plan.rs) and raplbench-interfere's
//! experiments carry them.

use serde::Serialize;

use crate::liveness::{Liveness, Verdict};

/// Where a row's figure comes from, in the schema's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowMeta {
    /// Access path id: powercap, msr-dev, perf, ebpf-lookup, ebpf-mmap, sampler, ...
    pub path: String,
    /// Operation: pread, open-read-close, read, group-read, lookup, load; for
    /// the sampler, the mechanism.
    pub op: String,
    /// What was read (file, MSR address, event label); None when unknown.
    pub target: Option<String>,
    /// CPU the measuring thread is pinned to.
    pub cpu: Option<usize>,
    /// CPU whose counter is read; None if the counter belongs to no CPU.
    pub target_cpu: Option<usize>,
    /// None, or why a substitute is measured.
    pub stand_in: Option<String>,
    /// The worst verdict on the energy counters the row reads; None for
    /// stand-ins, instruction paths, overheads, unavailable rows.
    pub liveness: Option<Verdict>,
    /// None when live or without verdict; else one line per counter that
    /// is not live, joined by "; ".
    pub liveness_note: Option<String>,
}

impl RowMeta {
    /// Sets `liveness` and `liveness_note` from a verdict (None: no verdict).
    pub fn with_liveness(mut self, liveness: Option<Liveness>) -> RowMeta {
        self.liveness = liveness.as_ref().map(|l| l.verdict);
        self.liveness_note = liveness.and_then(|l| l.note);
        self
    }
}

/// The status of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured.
    Ok,
    /// The machine lacks what the row needs; its reason says what.
    Unavailable,
    /// It should have worked and failed; its reason says how.
    Error,
}
