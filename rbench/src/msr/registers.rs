//! The vendors' RAPL energy MSRs and their energy unit (pure functions).
//!
//! The table (addresses, register names, domains, the fixed-DRAM-unit
//! models and the unit rules' numbers) is kbench/rapl_msrs.h, read by
//! build.rs into the `addr` constants and the arrays included below; this
//! file holds the rules as code. Energy status counters are 32 bits and
//! count in 1/2^ESU J, ESU = bits 12:8 of the vendor's unit MSR, except
//! DRAM on the Intel server parts of RAPL_FIXED_DRAM_MODEL (a fixed 2^-16 J).

use crate::cpu::{CpuSignature, CpuVendor};

/// One RAPL energy status MSR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaplMsr {
    /// The MSR address.
    pub addr: u32,
    /// The SDM / PPR register name.
    pub register: &'static str,
    /// The domain it measures ("package", "core", "uncore", "dram", "psys").
    pub domain: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/rapl_msrs.rs"));

/// The largest raw value of an energy status counter (32 bits).
pub const ENERGY_COUNTER_MAX: u64 = (1 << RAPL_ENERGY_COUNTER_BITS) - 1;

/// 2^-16 J: the fixed DRAM energy unit of Intel server parts.
pub const FIXED_DRAM_JOULES_PER_UNIT: f64 = 1.0 / (1u64 << RAPL_FIXED_DRAM_ESU) as f64;

/// The energy status MSRs of `vendor`; empty for other vendors.
pub fn rapl_energy_msrs(vendor: CpuVendor) -> &'static [RaplMsr] {
    match vendor {
        CpuVendor::Intel => &INTEL_ENERGY_MSRS,
        CpuVendor::Amd => &AMD_ENERGY_MSRS,
        CpuVendor::Other => &[],
    }
}

/// The energy status MSR at `addr`, of whichever vendor has it.
pub fn rapl_energy_msr(addr: u32) -> Option<&'static RaplMsr> {
    [CpuVendor::Intel, CpuVendor::Amd]
        .into_iter()
        .flat_map(rapl_energy_msrs)
        .find(|m| m.addr == addr)
}

/// The unit MSR of `vendor` (Intel 0x606, AMD 0xC0010299).
pub fn unit_msr(vendor: CpuVendor) -> Option<u32> {
    match vendor {
        CpuVendor::Intel => Some(INTEL_UNIT_MSR),
        CpuVendor::Amd => Some(AMD_UNIT_MSR),
        CpuVendor::Other => None,
    }
}

/// "0x611", "0xc001029b": the spelling of result rows (lowercase hex).
pub fn msr_hex(addr: u32) -> String {
    format!("{addr:#x}")
}

/// Joules per unit from the raw unit MSR: 1/2^ESU with ESU = bits 12:8.
///
/// ```
/// // ESU 14 (0xA0E03: a typical Intel client part): 61 µJ
/// assert_eq!(rbench::msr::energy_unit_joules(0x000A_0E03), 1.0 / 16384.0);
/// ```
pub fn energy_unit_joules(unit_msr_value: u64) -> f64 {
    let esu = (unit_msr_value >> RAPL_ESU_SHIFT) & u64::from(RAPL_ESU_MASK);
    1.0 / (1u64 << esu) as f64
}

/// Whether `cpu` counts DRAM energy in the fixed 2^-16 J unit.
pub fn has_fixed_dram_unit(cpu: &CpuSignature) -> bool {
    cpu.vendor == CpuVendor::Intel && cpu.family == 6 && FIXED_DRAM_UNIT_MODELS.contains(&cpu.model)
}

/// Joules per unit of energy MSR `addr` on `cpu`, given the raw unit MSR.
pub fn domain_joules_per_unit(cpu: &CpuSignature, addr: u32, unit_msr_value: u64) -> f64 {
    if addr == addr::INTEL_DRAM && has_fixed_dram_unit(cpu) {
        FIXED_DRAM_JOULES_PER_UNIT
    } else {
        energy_unit_joules(unit_msr_value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intel(model: u32) -> CpuSignature {
        CpuSignature {
            vendor: CpuVendor::Intel,
            family: 6,
            model,
        }
    }

    #[test]
    fn vendor_address_lists() {
        let hex = |v| {
            rapl_energy_msrs(v)
                .iter()
                .map(|m| msr_hex(m.addr))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            hex(CpuVendor::Intel),
            ["0x611", "0x639", "0x641", "0x619", "0x64d"]
        );
        assert_eq!(hex(CpuVendor::Amd), ["0xc001029a", "0xc001029b"]);
        assert!(rapl_energy_msrs(CpuVendor::Other).is_empty());
        assert_eq!(unit_msr(CpuVendor::Amd), Some(0xC001_0299));
        assert_eq!(rapl_energy_msr(0x619).map(|m| m.domain), Some("dram"));
        assert_eq!(
            rapl_energy_msr(0xC001_029B).map(|m| m.domain),
            Some("package")
        );
        assert_eq!(rapl_energy_msr(0x606), None);
    }

    #[test]
    fn decodes_the_energy_status_unit() {
        assert_eq!(energy_unit_joules(0x000A_0E03), 1.0 / 16384.0); // ESU 14
        assert_eq!(energy_unit_joules(0x000A_1003), 1.0 / 65536.0); // ESU 16 (AMD, many servers)
        assert_eq!(energy_unit_joules(0), 1.0); // ESU 0
        assert_eq!(energy_unit_joules(0x1F00), 1.0 / 2_147_483_648.0); // ESU 31, the largest
        assert_eq!(energy_unit_joules(0xFFFF_E0FF), 1.0); // only bits 12:8 count
    }

    #[test]
    fn server_parts_count_dram_in_a_fixed_unit() {
        let esu14 = 0x000A_0E03;
        for model in [
            0x3F, 0x4F, 0x56, 0x55, 0x57, 0x85, 0x6A, 0x6C, 0x8F, 0xCF, 0xAD, 0xAE,
        ] {
            assert!(has_fixed_dram_unit(&intel(model)), "model {model:#x}");
            assert_eq!(
                domain_joules_per_unit(&intel(model), 0x619, esu14),
                1.0 / 65536.0
            );
            // the other domains follow ESU
            assert_eq!(
                domain_joules_per_unit(&intel(model), 0x611, esu14),
                1.0 / 16384.0
            );
        }
        // client parts (Skylake 0x5E, Alder Lake 0x97) and other vendors follow ESU
        assert_eq!(
            domain_joules_per_unit(&intel(0x5E), 0x619, esu14),
            1.0 / 16384.0
        );
        assert!(!has_fixed_dram_unit(&intel(0x97)));
        assert!(!has_fixed_dram_unit(&CpuSignature {
            vendor: CpuVendor::Intel,
            family: 0xF,
            model: 0x3F
        }));
        assert!(!has_fixed_dram_unit(&CpuSignature {
            vendor: CpuVendor::Amd,
            family: 6,
            model: 0x3F
        }));
    }

    mod properties {
        use super::super::*;
        use crate::liveness::msr_unit_problem;
        use crate::testutil::fixed_cases;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(fixed_cases(3000))]

            /// Any unit register: ESU (bits 12:8) gives 2^-ESU J exactly,
            /// and the value is an energy unit unless it is 0 or its ESU is.
            #[test]
            fn any_unit_register_decodes_to_a_power_of_two(value: u64) {
                let esu = (value >> 8) & 0x1F;
                let joules = energy_unit_joules(value);
                prop_assert!(joules.is_finite() && joules > 0.0 && joules <= 1.0);
                prop_assert_eq!(joules, 2f64.powi(-(esu as i32)));
                prop_assert_eq!(msr_unit_problem(0x606, value).is_none(), value != 0 && esu != 0);
            }

            /// Only ESU matters: the power and time unit fields do not.
            #[test]
            fn the_other_fields_change_nothing(esu in 0u64..32, other: u64) {
                let value = (other & !0x1F00) | (esu << 8);
                prop_assert_eq!(energy_unit_joules(value), energy_unit_joules(esu << 8));
            }
        }
    }
}
