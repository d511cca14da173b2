//! The loader of a crate built without the BPF object (no clang, bpftool or
//! kernel BTF at build time): starting says why; nothing else can be reached.

use super::slots::{RbSample, RbSlot};
use super::BpfConfig;
use crate::perf::PerfEventSpec;
use crate::Error;

/// Never constructed.
pub(super) enum Loaded {}

impl Loaded {
    pub(super) fn start(
        _counters: &[PerfEventSpec],
        _config: &BpfConfig,
        _cpus: &[usize],
    ) -> Result<(Loaded, String), Error> {
        Err(Error::Unavailable(env!("RBENCH_BPF_MISSING").to_string()))
    }

    pub(super) fn slot(&self, _cpu: usize) -> Result<*const RbSlot, Error> {
        match *self {}
    }

    pub(super) fn lookup(&self, _cpu: usize, _out: &mut RbSlot) -> Result<(), Error> {
        match *self {}
    }

    pub(super) fn samples_ring_buffer<'cb>(
        &self,
        _on_sample: impl FnMut(&RbSample) + 'cb,
    ) -> Result<libbpf_rs::RingBuffer<'cb>, Error> {
        match *self {}
    }
}
