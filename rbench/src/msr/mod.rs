//! Path "msr-dev": RAPL energy MSRs read through the msr driver's character
//! device /dev/cpu/N/msr.
//!
//! The device contract (arch/x86/kernel/msr.c): a pread of 8 bytes at file
//! offset ADDR returns MSR ADDR of CPU N, read on that CPU (an IPI when the
//! reader runs elsewhere). Errors: EIO when rdmsr faults (MSR not
//! implemented), EPERM/EACCES without CAP_SYS_RAWIO, ENXIO when CPU N is
//! offline. A fixture is a sparse file holding values at the MSR offsets,
//! read by the same code; a read beyond its end is short and reported as EIO.
//!
//! Where /dev/cpu/N/msr is missing, discovery reads /dev/cpu/N/cpuid as the
//! stand-in: the same per-CPU character device route (pread at an offset,
//! the instruction run on CPU N via smp_call_function_single) with cpuid
//! leaf 0 for rdmsr.

mod registers;

pub use registers::addr;
pub use registers::{
    domain_joules_per_unit, energy_unit_joules, has_fixed_dram_unit, msr_hex, rapl_energy_msr,
    rapl_energy_msrs, unit_msr, RaplMsr, ENERGY_COUNTER_MAX, FIXED_DRAM_JOULES_PER_UNIT,
};

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;

use crate::{CounterSource, Domain, Error};

/// `<root>/<cpu>/msr`.
pub fn msr_device_path(root: &Path, cpu: usize) -> PathBuf {
    root.join(cpu.to_string()).join("msr")
}

/// A register read through a per-CPU device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Register {
    /// An MSR of /dev/cpu/N/msr: 8 bytes at offset ADDR.
    Msr(u32),
    /// A cpuid leaf of /dev/cpu/N/cpuid: 16 bytes (EAX, EBX, ECX, EDX) at
    /// offset LEAF; the value is EAX.
    CpuidLeaf(u32),
}

impl Register {
    /// The register as result rows name it: "0x611", or "cpuid:0x0".
    pub fn target(self) -> String {
        match self {
            Register::Msr(addr) => msr_hex(addr),
            Register::CpuidLeaf(leaf) => format!("cpuid:{leaf:#x}"),
        }
    }
}

/// The error of a failed MSR device call, in words a person can act on.
fn device_error(errno: Errno, path: &str, addr: u32) -> Error {
    match errno {
        Errno::ENOENT | Errno::ENODEV => Error::MsrMissing {
            path: path.to_string(),
        },
        Errno::EACCES | Errno::EPERM => Error::MsrPermission {
            path: path.to_string(),
            errno,
        },
        Errno::EIO => Error::MsrFault { addr },
        Errno::ENXIO => Error::CpuOffline {
            path: path.to_string(),
        },
        errno => Error::Os {
            what: path.to_string(),
            errno,
        },
    }
}

/// An open /dev/cpu/N/msr or /dev/cpu/N/cpuid (or a fixture file).
pub struct MsrDevice {
    /// The device, read-only.
    file: File,
    /// Its path, for errors.
    path: String,
}

impl MsrDevice {
    /// Opens the device read-only.
    pub fn open(path: &Path) -> Result<MsrDevice, Error> {
        let display = path.to_string_lossy().into_owned();
        match File::open(path) {
            Ok(file) => Ok(MsrDevice {
                file,
                path: display,
            }),
            Err(e) => Err(match e.raw_os_error() {
                Some(errno) => device_error(Errno::from_raw(errno), &display, 0),
                // std's one error here without an errno
                None => Error::Unavailable(format!("{display}: path contains a NUL byte")),
            }),
        }
    }

    /// pread of `buf.len()` bytes at `offset`; a short read is EIO.
    fn pread_exact(&self, buf: &mut [u8], offset: u64, addr: u32) -> Result<(), Error> {
        let errno = match self.file.read_at(buf, offset) {
            Ok(n) if n == buf.len() => return Ok(()),
            Ok(_) => Errno::EIO,
            Err(e) => Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
        };
        Err(device_error(errno, &self.path, addr))
    }

    /// Reads MSR `addr` (8 bytes at offset `addr`).
    pub fn read_msr(&self, addr: u32) -> Result<u64, Error> {
        let mut buf = [0u8; 8];
        self.pread_exact(&mut buf, u64::from(addr), addr)?;
        Ok(u64::from_ne_bytes(buf))
    }

    /// Runs cpuid `leaf` (subleaf 0) on the device's CPU: EAX (the first 4
    /// of the 16 bytes EAX, EBX, ECX, EDX the device reads).
    pub fn read_cpuid_eax(&self, leaf: u32) -> Result<u32, Error> {
        let mut buf = [0u8; 16];
        self.pread_exact(&mut buf, u64::from(leaf), leaf)?;
        Ok(u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]))
    }
}

/// One register of a [`MsrSource`]: which device, which register, what it measures.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisterRead {
    /// /dev/cpu/N/msr, /dev/cpu/N/cpuid, or a fixture file.
    pub device: PathBuf,
    /// The register.
    pub register: Register,
    /// What it measures.
    pub domain: Domain,
}

/// Reads registers through per-CPU devices: the RAPL energy MSRs of every
/// package (on each package's lead CPU), or the cpuid stand-in.
pub struct MsrSource {
    /// Each device once.
    devices: Vec<MsrDevice>,
    /// (index into `devices`, register), in domain order.
    reads: Vec<(usize, Register)>,
    /// What each read measures.
    domains: Vec<Domain>,
}

impl MsrSource {
    /// Opens the devices of `reads` (each once).
    pub fn open(reads: &[RegisterRead]) -> Result<MsrSource, Error> {
        let mut devices: Vec<MsrDevice> = Vec::new();
        let mut indexed = Vec::with_capacity(reads.len());
        for read in reads {
            let path = read.device.to_string_lossy();
            let index = match devices.iter().position(|d| d.path == path) {
                Some(i) => i,
                None => {
                    devices.push(MsrDevice::open(&read.device)?);
                    devices.len() - 1
                }
            };
            indexed.push((index, read.register));
        }
        Ok(MsrSource {
            devices,
            reads: indexed,
            domains: reads.iter().map(|r| r.domain.clone()).collect(),
        })
    }
}

impl CounterSource for MsrSource {
    fn domains(&self) -> &[Domain] {
        &self.domains
    }

    fn read(&mut self, out: &mut [u64]) -> Result<(), Error> {
        for (&(device, register), value) in self.reads.iter().zip(out.iter_mut()) {
            let device = &self.devices[device];
            *value = match register {
                // bits 31:0 count energy, 63:32 are reserved
                Register::Msr(addr) => device.read_msr(addr)? & ENERGY_COUNTER_MAX,
                Register::CpuidLeaf(leaf) => u64::from(device.read_cpuid_eax(leaf)?),
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{write_msr_fixture, TempDir};

    #[test]
    fn reads_values_at_msr_offsets_like_the_device() {
        let root = TempDir::new("msr");
        write_msr_fixture(
            root.path(),
            0,
            &[
                (0x606, 0x000A_0E03),
                (0x611, 0x8A2B_3C4D),
                (0xC001_029B, 0xFFFF_FFF0),
            ],
        );
        let device = MsrDevice::open(&msr_device_path(root.path(), 0)).unwrap();
        assert_eq!(device.read_msr(0x611).unwrap(), 0x8A2B_3C4D);
        assert_eq!(
            energy_unit_joules(device.read_msr(0x606).unwrap()),
            1.0 / 16384.0
        );
        assert_eq!(device.read_msr(0xC001_029B).unwrap(), 0xFFFF_FFF0); // a 3 GiB offset
        assert_eq!(device.read_msr(0x619).unwrap(), 0); // a hole reads as zero
                                                        // beyond the end: a short read, reported like a faulting rdmsr
        assert_eq!(
            device.read_msr(0xC001_0300).unwrap_err().to_string(),
            Error::MsrFault { addr: 0xC001_0300 }.to_string()
        );
    }

    #[test]
    fn a_missing_device_says_to_load_the_msr_module() {
        let root = TempDir::new("msr-missing");
        let missing = MsrDevice::open(&msr_device_path(root.path(), 0))
            .err()
            .unwrap();
        let path = format!("{}/0/msr", root.path().display());
        assert_eq!(
            missing.to_string(),
            format!(
                "{path} missing: load the msr module (modprobe msr; kernel needs CONFIG_X86_MSR)"
            )
        );
    }
}
