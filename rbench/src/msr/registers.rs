//! The vendors' RAPL energy MSRs and their energy unit (pure functions).
//!
//! Energy status counters are 32 bits (bits 63:32 reserved). Each counts in
//! the energy status unit of the unit MSR (Intel 0x606 MSR_RAPL_POWER_UNIT,
//! AMD 0xC0010299): ESU = bits 12:8, one unit = 1/2^ESU J. Exception: on
//! Intel server parts the DRAM domain counts in a fixed 2^-16 J (15.3 µJ)
//! whatever ESU says; the models are those Linux's
//! drivers/powercap/intel_rapl_common.c gives rapl_defaults_hsw_server or
//! rapl_defaults_spr_server (both set dram_domain_energy_unit).

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

/// Intel: PKG, PP0, PP1, DRAM, PSYS (ubench's order).
const INTEL_ENERGY_MSRS: [RaplMsr; 5] = [
    RaplMsr {
        addr: 0x611,
        register: "MSR_PKG_ENERGY_STATUS",
        domain: "package",
    },
    RaplMsr {
        addr: 0x639,
        register: "MSR_PP0_ENERGY_STATUS",
        domain: "core",
    },
    RaplMsr {
        addr: 0x641,
        register: "MSR_PP1_ENERGY_STATUS",
        domain: "uncore",
    },
    RaplMsr {
        addr: 0x619,
        register: "MSR_DRAM_ENERGY_STATUS",
        domain: "dram",
    },
    RaplMsr {
        addr: 0x64D,
        register: "MSR_PLATFORM_ENERGY_STATUS",
        domain: "psys",
    },
];

/// AMD (and Hygon): core, package.
const AMD_ENERGY_MSRS: [RaplMsr; 2] = [
    RaplMsr {
        addr: 0xC001_029A,
        register: "MSR_AMD_CORE_ENERGY_STATUS",
        domain: "core",
    },
    RaplMsr {
        addr: 0xC001_029B,
        register: "MSR_AMD_PKG_ENERGY_STATUS",
        domain: "package",
    },
];

/// Intel MSR_DRAM_ENERGY_STATUS.
pub const INTEL_DRAM_ENERGY_MSR: u32 = 0x619;

/// The largest raw value of an energy status counter (32 bits).
pub const ENERGY_COUNTER_MAX: u64 = 0xFFFF_FFFF;

/// 2^-16 J: the fixed DRAM energy unit of Intel server parts.
pub const FIXED_DRAM_JOULES_PER_UNIT: f64 = 1.0 / 65536.0;

/// Family 6 models with the fixed DRAM unit (intel_rapl_common.c:
/// rapl_defaults_hsw_server and rapl_defaults_spr_server).
const FIXED_DRAM_UNIT_MODELS: [u32; 12] = [
    0x3F, // Haswell-X
    0x4F, // Broadwell-X
    0x56, // Broadwell-D
    0x55, // Skylake-X (also Cascade Lake, Cooper Lake)
    0x57, // Xeon Phi Knights Landing
    0x85, // Xeon Phi Knights Mill
    0x6A, // Ice Lake-X
    0x6C, // Ice Lake-D
    0x8F, // Sapphire Rapids-X
    0xCF, // Emerald Rapids-X
    0xAD, // Granite Rapids-X
    0xAE, // Granite Rapids-D
];

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
        CpuVendor::Intel => Some(0x606),
        CpuVendor::Amd => Some(0xC001_0299),
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
    let esu = (unit_msr_value >> 8) & 0x1F;
    1.0 / (1u64 << esu) as f64
}

/// Whether `cpu` counts DRAM energy in the fixed 2^-16 J unit.
pub fn has_fixed_dram_unit(cpu: &CpuSignature) -> bool {
    cpu.vendor == CpuVendor::Intel && cpu.family == 6 && FIXED_DRAM_UNIT_MODELS.contains(&cpu.model)
}

/// Joules per unit of energy MSR `addr` on `cpu`, given the raw unit MSR.
pub fn domain_joules_per_unit(cpu: &CpuSignature, addr: u32, unit_msr_value: u64) -> f64 {
    if addr == INTEL_DRAM_ENERGY_MSR && has_fixed_dram_unit(cpu) {
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
