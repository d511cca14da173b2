/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rapl_msrs.h - the RAPL MSR table: the one place for the MSRs raplbench
 * reads, their names, domains and energy unit rules (issue 31).
 *
 * Who reads it:
 *   - kbench (kbench_ops.c: the allow-list it times) and ksample
 *     (ksample_sampler.c: the energy MSRs it samples) include it;
 *   - rbench's build.rs (rbench/build/rapl_msrs.rs) parses it into
 *     $OUT_DIR/rapl_msrs.rs, which rbench/src/msr/registers.rs includes
 *     (RAPL_MSR_INTEL_PKG is rbench::msr::addr::INTEL_PKG there);
 *   - Python reads it through results/rapl_msrs.py (the labels of the
 *     report and the plots).
 * So: plain macros only (no types, no code), valid in the kernel and in user
 * space, and one table row per line, "RAPL_MSR(...)" or
 * "RAPL_FIXED_DRAM_MODEL(...)", with no comma inside a field, so the
 * readers parse it with one regular expression. Add an MSR here and nowhere
 * else; results/test_rapl_msrs.py fails if a table of addresses appears in
 * another source file.
 *
 * RAPL_MSR(name, addr, vendor, kind, domain, reg, label)
 *   name      C identifier suffix: RAPL_MSR_<name> is the address
 *   addr      lowercase hex: "rdmsr:" #addr is kbench's op name
 *   vendor    INTEL or AMD (AMD's rows also serve Hygon)
 *   kind      UNIT       the vendor's energy unit MSR
 *             ENERGY     an energy status counter (probed for liveness,
 *                        sampled by ksample and rbench)
 *             REFERENCE  not RAPL: a cheap MSR kbench times for comparison
 *   domain    what an ENERGY counter measures ("package", "core",
 *             "uncore", "dram", "psys"); "" otherwise
 *   reg       the SDM / PPR register name
 *   label     the name the report and the plots show
 * The order is the order of kbench's allow-list, of ksample's records and
 * of rbench's rows: keep it.
 *
 * Unit rules. An energy status counter is RAPL_ENERGY_COUNTER_BITS (32) wide
 * (bits 63:32 reserved) and counts in the energy status unit of its
 * vendor's UNIT MSR: ESU = bits 12:8 (RAPL_ESU), one count = 1/2^ESU J.
 * Exception: on the Intel server parts listed by RAPL_FIXED_DRAM_MODEL
 * (family 6), the DRAM domain counts in a fixed 2^-RAPL_FIXED_DRAM_ESU J
 * (15.3 uJ) whatever ESU says: the models Linux's
 * drivers/powercap/intel_rapl_common.c gives rapl_defaults_hsw_server or
 * rapl_defaults_spr_server (both set dram_domain_energy_unit).
 */
#ifndef RAPL_MSRS_H
#define RAPL_MSRS_H

#define RAPL_MSR_TABLE(RAPL_MSR) \
	RAPL_MSR(INTEL_UNIT, 0x606, INTEL, UNIT, "", "MSR_RAPL_POWER_UNIT", "power unit") \
	RAPL_MSR(INTEL_PKG, 0x611, INTEL, ENERGY, "package", "MSR_PKG_ENERGY_STATUS", "PKG energy") \
	RAPL_MSR(INTEL_PP0, 0x639, INTEL, ENERGY, "core", "MSR_PP0_ENERGY_STATUS", "PP0 energy") \
	RAPL_MSR(INTEL_PP1, 0x641, INTEL, ENERGY, "uncore", "MSR_PP1_ENERGY_STATUS", "PP1 energy") \
	RAPL_MSR(INTEL_DRAM, 0x619, INTEL, ENERGY, "dram", "MSR_DRAM_ENERGY_STATUS", "DRAM energy") \
	RAPL_MSR(INTEL_PSYS, 0x64d, INTEL, ENERGY, "psys", "MSR_PLATFORM_ENERGY_STATUS", "PSYS energy") \
	RAPL_MSR(INTEL_TSC, 0x10, INTEL, REFERENCE, "", "IA32_TIME_STAMP_COUNTER", "TSC") \
	RAPL_MSR(INTEL_PLATFORM_ID, 0x17, INTEL, REFERENCE, "", "IA32_PLATFORM_ID", "platform ID") \
	RAPL_MSR(INTEL_THERM_STATUS, 0x19c, INTEL, REFERENCE, "", "IA32_THERM_STATUS", "thermal status") \
	RAPL_MSR(AMD_UNIT, 0xc0010299, AMD, UNIT, "", "MSR_AMD_RAPL_POWER_UNIT", "power unit") \
	RAPL_MSR(AMD_CORE, 0xc001029a, AMD, ENERGY, "core", "MSR_AMD_CORE_ENERGY_STATUS", "core energy") \
	RAPL_MSR(AMD_PKG, 0xc001029b, AMD, ENERGY, "package", "MSR_AMD_PKG_ENERGY_STATUS", "PKG energy")

/* Family 6 models whose DRAM domain counts in the fixed unit. */
#define RAPL_FIXED_DRAM_MODEL_TABLE(RAPL_FIXED_DRAM_MODEL) \
	RAPL_FIXED_DRAM_MODEL(0x3f, "Haswell-X") \
	RAPL_FIXED_DRAM_MODEL(0x4f, "Broadwell-X") \
	RAPL_FIXED_DRAM_MODEL(0x56, "Broadwell-D") \
	RAPL_FIXED_DRAM_MODEL(0x55, "Skylake-X (also Cascade Lake and Cooper Lake)") \
	RAPL_FIXED_DRAM_MODEL(0x57, "Xeon Phi Knights Landing") \
	RAPL_FIXED_DRAM_MODEL(0x85, "Xeon Phi Knights Mill") \
	RAPL_FIXED_DRAM_MODEL(0x6a, "Ice Lake-X") \
	RAPL_FIXED_DRAM_MODEL(0x6c, "Ice Lake-D") \
	RAPL_FIXED_DRAM_MODEL(0x8f, "Sapphire Rapids-X") \
	RAPL_FIXED_DRAM_MODEL(0xcf, "Emerald Rapids-X") \
	RAPL_FIXED_DRAM_MODEL(0xad, "Granite Rapids-X") \
	RAPL_FIXED_DRAM_MODEL(0xae, "Granite Rapids-D")

/* The unit rules (above). Each "#define NAME value" line is also read by
 * build.rs and results/rapl_msrs.py. */
#define RAPL_ENERGY_COUNTER_BITS 32
#define RAPL_ESU_SHIFT 8
#define RAPL_ESU_MASK 0x1f
#define RAPL_FIXED_DRAM_ESU 16
#define RAPL_ESU(unit) (((unit) >> RAPL_ESU_SHIFT) & RAPL_ESU_MASK)

/* RAPL_IF_VENDOR(want, vendor, ...): the tokens for a row of vendor `want`,
 * else nothing (a table user's filter, e.g. RAPL_IF_VENDOR(INTEL, vendor, ...)). */
#define RAPL_IF_VENDOR(want, vendor, ...) RAPL_IF_##want##_##vendor(__VA_ARGS__)
#define RAPL_IF_INTEL_INTEL(...) __VA_ARGS__
#define RAPL_IF_INTEL_AMD(...)
#define RAPL_IF_AMD_INTEL(...)
#define RAPL_IF_AMD_AMD(...) __VA_ARGS__

/* RAPL_MSR_<name>: each address, e.g. RAPL_MSR_INTEL_PKG (0x611). AMD's are
 * above INT_MAX: GNU C (the kernel's) makes the enum unsigned int. */
#define RAPL_MSR_ENUM(name, addr, vendor, kind, domain, reg, label) \
	RAPL_MSR_##name = addr,
enum rapl_msr_addr { RAPL_MSR_TABLE(RAPL_MSR_ENUM) };
#undef RAPL_MSR_ENUM

#endif
