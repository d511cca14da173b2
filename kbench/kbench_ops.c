// SPDX-License-Identifier: GPL-2.0
/*
 * kbench_ops.c - time one instruction in a kernel loop.
 *
 * nanoBench's method: each iteration runs the instruction `small` times,
 * then `large` times, between serialised TSC reads, and over a batch
 * cycles per op = (cycles(large) - cycles(small)) / (iterations * (large -
 * small)): the loop and the TSC reads cancel (kbench/README.md, "Method").
 * "cycles" are TSC cycles.
 *
 * MSRs are read with rdmsr_safe only, from the vendor's allow-list below
 * (rapl_msrs.h); an MSR whose first read faults is reported unsupported and
 * never timed. An energy-status MSR (an op with a unit_msr) is first given
 * a liveness verdict (kbench_liveness.c), in the same worker, before
 * calibration and outside every interrupts-off section: it sleeps, for at
 * most ~100 ms.
 */
#include <linux/cpumask.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/workqueue.h>
#include <asm/msr.h>
#include <asm/processor.h>
#include <asm/tsc.h>

#include "kbench.h"
#include "rapl_msrs.h"

/* Unroll factors: nop/mov are sub-cycle and need long blocks; cpuid and
 * rdmsr take hundreds of cycles (thousands under emulation). */
#define FAST_SMALL 32
#define FAST_LARGE (32 + 512)
#define TSC_SMALL 4
#define TSC_LARGE (4 + 64)
#define SLOW_SMALL 1
#define SLOW_LARGE (1 + 8)

/* cpuid through inline asm: the kernel's cpuid() helpers moved between headers */
static __always_inline void kb_cpuid(u32 leaf)
{
	u32 a = leaf, b, c = 0, d;

	asm volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) :: "memory");
}

static __always_inline int rdmsr_once(u32 msr)
{
	u32 lo, hi;

	return rdmsr_safe(msr, &lo, &hi);
}

/* n copies of an instruction, unrolled by the assembler */
#define NOPS(n) asm volatile(".rept %c0\n\tnop\n\t.endr" :: "i"(n))
#define MOVS(n) asm volatile(".rept %c0\n\tmov %%rax, %%rdx\n\t.endr" :: "i"(n) : "rdx")
#define RDTSCS(n) asm volatile(".rept %c0\n\trdtsc\n\t.endr" :: "i"(n) : "eax", "edx")
/* SLOW_LARGE (1 + 8) copies of a C statement; SLOW_SMALL is the statement itself */
#define NINE(x) x x x x x x x x x

/* What a batch returns when the TSC passed its deadline: not a measurement. */
#define KBENCH_CUT S64_MIN
#define NO_DEADLINE U64_MAX

/*
 * time_<kind>(arg, iterations, deadline, errs): one batch, returns
 * cycles(large blocks) - cycles(small blocks), or KBENCH_CUT as soon as an
 * iteration ends past `deadline` (TSC); *errs counts faulting rdmsr. Both
 * loops check the deadline once per iteration, so the check costs the same
 * in both and cancels out like the rest of the loop.
 */
#define DEFINE_OP_TIMER(kind, small_block, large_block)				\
static noinline s64 time_##kind(u32 arg, unsigned int iterations,		\
				u64 deadline, unsigned int *errs)		\
{										\
	u64 t0, t1, t2;								\
	unsigned int i;								\
										\
	t0 = rdtsc_ordered();							\
	for (i = 0; i < iterations; i++) {					\
		small_block;							\
		if (unlikely(rdtsc() > deadline))				\
			return KBENCH_CUT;					\
	}									\
	t1 = rdtsc_ordered();							\
	for (i = 0; i < iterations; i++) {					\
		large_block;							\
		if (unlikely(rdtsc() > deadline))				\
			return KBENCH_CUT;					\
	}									\
	t2 = rdtsc_ordered();							\
	return (s64)(t2 - t1) - (s64)(t1 - t0);					\
}

DEFINE_OP_TIMER(nop, NOPS(FAST_SMALL), NOPS(FAST_LARGE))
DEFINE_OP_TIMER(mov, MOVS(FAST_SMALL), MOVS(FAST_LARGE))
DEFINE_OP_TIMER(rdtsc, RDTSCS(TSC_SMALL), RDTSCS(TSC_LARGE))
DEFINE_OP_TIMER(cpuid, kb_cpuid(arg);, NINE(kb_cpuid(arg);))
DEFINE_OP_TIMER(rdmsr, *errs += !!rdmsr_once(arg);, NINE(*errs += !!rdmsr_once(arg);))

#define OP(file_, name_, kind_, arg_, small_, large_) \
	{ .file = file_, .name = name_, .time = time_##kind_, .arg = arg_, .small = small_, .large = large_ }
#define COMMON_OPS \
	OP("nop", "nop", nop, 0, FAST_SMALL, FAST_LARGE), \
	OP("mov", "mov", mov, 0, FAST_SMALL, FAST_LARGE), \
	OP("cpuid_0x0", "cpuid:0x0", cpuid, 0x0, SLOW_SMALL, SLOW_LARGE), \
	OP("cpuid_0x1", "cpuid:0x1", cpuid, 0x1, SLOW_SMALL, SLOW_LARGE), \
	OP("rdtsc", "rdtsc", rdtsc, 0, TSC_SMALL, TSC_LARGE)

/*
 * The allow-list: the MSRs of rapl_msrs.h of this CPU's vendor, in its
 * order: the energy unit MSR, the energy-status counters (probed for
 * liveness against that unit MSR) and a few cheap reference MSRs. Op names
 * spell the table's address: "rdmsr:0x611", file "rdmsr_0x611".
 */
#define UNIT_MSR_OF_UNIT(vendor_) 0
#define UNIT_MSR_OF_ENERGY(vendor_) RAPL_MSR_##vendor_##_UNIT
#define UNIT_MSR_OF_REFERENCE(vendor_) 0
#define MSR_OP(addr_, vendor_, kind_) \
	{ .file = "rdmsr_" #addr_, .name = "rdmsr:" #addr_, .time = time_rdmsr, .arg = addr_, \
	  .small = SLOW_SMALL, .large = SLOW_LARGE, .unit_msr = UNIT_MSR_OF_##kind_(vendor_) },
#define INTEL_OP(name_, addr_, vendor_, kind_, domain_, reg_, label_) \
	RAPL_IF_VENDOR(INTEL, vendor_, MSR_OP(addr_, vendor_, kind_))
#define AMD_OP(name_, addr_, vendor_, kind_, domain_, reg_, label_) \
	RAPL_IF_VENDOR(AMD, vendor_, MSR_OP(addr_, vendor_, kind_))

static const struct kbench_op intel_ops[] = { COMMON_OPS, RAPL_MSR_TABLE(INTEL_OP) };
static const struct kbench_op amd_ops[] = { COMMON_OPS, RAPL_MSR_TABLE(AMD_OP) };
static const struct kbench_op other_ops[] = { COMMON_OPS };

const struct kbench_op *kbench_ops(int *count)
{
	switch (boot_cpu_data.x86_vendor) {
	case X86_VENDOR_INTEL:
		*count = ARRAY_SIZE(intel_ops);
		return intel_ops;
	case X86_VENDOR_AMD:
	case X86_VENDOR_HYGON:
		*count = ARRAY_SIZE(amd_ops);
		return amd_ops;
	default:
		*count = ARRAY_SIZE(other_ops);
		return other_ops;
	}
}

struct run_ctx {
	const struct kbench_op *op;
	unsigned int iterations, batches;
	struct kbench_result *res;
};

/* Cycles of one iteration (both blocks), with interrupts off; the second of
 * two runs, so cold caches (or an emulator translating the code) do not
 * inflate it. */
static u64 calibrate(const struct kbench_op *op)
{
	unsigned long flags;
	unsigned int errs = 0, run;
	u64 t0 = 0, t1 = 0;

	for (run = 0; run < 2; run++) {
		local_irq_save(flags);
		t0 = rdtsc_ordered();
		op->time(op->arg, 1, NO_DEADLINE, &errs);	/* one iteration: bounded by itself */
		t1 = rdtsc_ordered();
		local_irq_restore(flags);
	}
	return t1 - t0;
}

static long run_on_cpu(void *arg)
{
	struct run_ctx *ctx = arg;
	const struct kbench_op *op = ctx->op;
	struct kbench_result *res = ctx->res;
	u64 budget = (u64)tsc_khz * KBENCH_IRQ_OFF_BUDGET_US / 1000;
	u64 per_iteration;
	int b;

	/* every count 0, no verdict (KB_LIVENESS_NONE) */
	*res = (struct kbench_result){ .cpu = smp_processor_id(), .milli_cycles = res->milli_cycles };
	/* an MSR that faults at its first read, or while its liveness is probed
	 * (which sleeps: here, before any batch, with interrupts and preemption on) */
	if ((op->time == time_rdmsr && rdmsr_once(op->arg)) ||
	    (op->unit_msr && kbench_probe_liveness(op->arg, op->unit_msr, &res->probe))) {
		res->unsupported = true;
		res->probe.verdict = KB_LIVENESS_NONE;
		return 0;
	}

	/* cap iterations so one batch takes half the interrupts-off budget by
	 * the calibration: the deadline, at the whole budget, then cuts only a
	 * batch slowed to twice its expected time, not one a little over it */
	per_iteration = max_t(u64, calibrate(op), 1);
	res->iterations = min_t(u64, ctx->iterations, max_t(u64, budget / 2 / per_iteration, 1));

	/* batch -1 warms up caches and branch predictors and is not reported */
	for (b = -1; b < (int)ctx->batches; b++) {
		unsigned long flags;
		unsigned int errs = 0;
		s64 cycles;

		get_cpu();
		local_irq_save(flags);
		cycles = op->time(op->arg, res->iterations, rdtsc() + budget, &errs);
		local_irq_restore(flags);
		put_cpu();

		if (errs) {	/* the MSR faulted after a first good read */
			res->unsupported = true;
			return 0;
		}
		if (b >= 0 && cycles == KBENCH_CUT)
			res->cut++;
		else if (b >= 0)
			res->milli_cycles[res->batches++] =
				div64_s64(cycles * 1000, (s64)res->iterations * (op->large - op->small));
		cond_resched();
	}
	return 0;
}

int kbench_run(const struct kbench_op *op, int cpu, unsigned int iterations,
	       unsigned int batches, struct kbench_result *res)
{
	struct run_ctx ctx = { .op = op, .iterations = iterations, .batches = batches, .res = res };
	long ret;

	/* in a worker bound to `cpu`, with CPU hotplug held off; an offline
	 * CPU is ENXIO, as /dev/cpu/N/msr says (arch/x86/kernel/msr.c) */
	ret = work_on_cpu_safe(cpu, run_on_cpu, &ctx);
	return ret == -ENODEV ? -ENXIO : ret;
}
