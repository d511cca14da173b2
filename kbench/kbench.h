/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kbench.h - shared declarations of the kbench module: the operations it
 * times (kbench_ops.c) and the files that expose them (kbench_main.c).
 */
#ifndef KBENCH_H
#define KBENCH_H

#include <linux/types.h>

/* Bounds of the control interface (/sys/kernel/kbench/). */
#define KBENCH_ITERATIONS_MIN 1
#define KBENCH_ITERATIONS_MAX 1000000
#define KBENCH_BATCHES_MIN 1
#define KBENCH_BATCHES_MAX 1000
#define KBENCH_IRQ_OFF_BUDGET_US 1000	/* at most ~1 ms with interrupts off per batch */

enum kbench_kind { KB_NOP, KB_MOV, KB_CPUID, KB_RDTSC, KB_RDMSR };

/* One operation, one /proc/kbench file. */
struct kbench_op {
	const char *file;	/* file name under /proc/kbench, e.g. "rdmsr_0x611" */
	const char *name;	/* op as printed, e.g. "rdmsr:0x611" */
	enum kbench_kind kind;
	u32 arg;		/* cpuid leaf or MSR address */
	int small, large;	/* the two unroll factors timed per iteration */
};

/* What one run of an operation measured. */
struct kbench_result {
	int cpu;
	unsigned int iterations;	/* per batch, after the interrupts-off cap */
	unsigned int batches;
	bool unsupported;		/* rdmsr faulted: the MSR does not exist here */
	s64 *milli_cycles;		/* per batch: cycles per op x 1000, overhead removed */
};

/* The operations of this CPU's vendor; sets *count. */
const struct kbench_op *kbench_ops(int *count);

/*
 * Times `op` on `cpu`: `batches` batches of `iterations` iterations (capped
 * so that one batch keeps interrupts off for at most about 1 ms). Fills
 * res->milli_cycles, which must hold `batches` entries. Returns 0 or a
 * negative errno (-EINVAL for an offline CPU).
 */
int kbench_run(const struct kbench_op *op, int cpu, unsigned int iterations,
	       unsigned int batches, struct kbench_result *res);

#endif
