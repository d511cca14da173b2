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
#define KBENCH_IRQ_OFF_BUDGET_US 1000	/* interrupts off per batch: 1 ms, plus at most
					 * one iteration (the deadline is checked
					 * after each) */

/*
 * The liveness probe of an energy counter (docs: kbench/README.md). RAPL
 * updates its energy status about every 976 us, so a counter is read every
 * 1 ms (sleeping in between) and one that has not changed in 100 ms (about
 * 100 updates) is frozen. At most 1 + window / poll reads (101) and about
 * the window plus one poll, whichever comes first.
 */
#define KBENCH_LIVENESS_POLL_US 1000
#define KBENCH_LIVENESS_WINDOW_MS 100

/* One operation, one /proc/kbench file. */
struct kbench_op {
	const char *file;	/* file name under /proc/kbench, e.g. "rdmsr_0x611" */
	const char *name;	/* op as printed, e.g. "rdmsr:0x611" */
	/* one batch (kbench_ops.c: DEFINE_OP_TIMER) */
	s64 (*time)(u32 arg, unsigned int iterations, u64 deadline, unsigned int *errs);
	u32 arg;		/* cpuid leaf or MSR address */
	int small, large;	/* the two unroll factors timed per iteration */
	u32 unit_msr;		/* an energy-status counter: its vendor's energy unit
				 * MSR; 0 for every other operation */
};

/* The verdict on an energy counter, as the report prints it. */
enum kbench_liveness { KB_LIVENESS_NONE, KB_LIVE, KB_FROZEN, KB_NO_UNIT };

/* What the liveness probe of an energy counter saw. */
struct kbench_probe {
	enum kbench_liveness verdict;	/* KB_LIVENESS_NONE: not an energy counter */
	bool unit_faults;		/* no-unit: reading the unit MSR faulted */
	u64 unit;			/* no-unit: what the unit MSR read */
	unsigned int reads;		/* live/frozen: counter reads, the first included */
	u64 elapsed_us;			/* live/frozen: from the first read to the last */
	u64 first, last;		/* live/frozen: the first and the last value read */
};

/* What one run of an operation measured. */
struct kbench_result {
	int cpu;
	unsigned int iterations;	/* per batch, after the interrupts-off cap */
	unsigned int batches;		/* measured: milli_cycles[0..batches) */
	unsigned int cut;		/* stopped at the interrupts-off deadline, not measured */
	bool unsupported;		/* rdmsr faulted: the MSR does not exist here */
	struct kbench_probe probe;	/* energy counters: the liveness probe */
	s64 *milli_cycles;		/* per batch: cycles per op x 1000, overhead removed */
};

/* The operations of this CPU's vendor; sets *count. */
const struct kbench_op *kbench_ops(int *count);

/*
 * The liveness probe of energy counter `msr` whose unit MSR is `unit_msr`,
 * on the calling CPU: process context only (it sleeps, interrupts stay on),
 * never inside a timed batch. Checks the unit first (0, an ESU of 0 or a
 * fault: KB_NO_UNIT), then reads the counter every KBENCH_LIVENESS_POLL_US
 * until it changes (KB_LIVE) or KBENCH_LIVENESS_WINDOW_MS pass (KB_FROZEN).
 * Returns 0, or -EIO if reading the counter faulted (no verdict: the MSR is
 * unsupported).
 */
int kbench_probe_liveness(u32 msr, u32 unit_msr, struct kbench_probe *probe);

/* Reads one counter into *value; 0 or a negative errno. */
typedef int (*kbench_counter_read)(void *counter, u64 *value);

/* The reader of an MSR counter (`counter` points to the u32 address), with
 * rdmsr_safe: -EIO if it faults. */
int kbench_read_msr_counter(void *counter, u64 *value);

/* The probe's second half, the unit already checked: polls `read` and fills
 * the live/frozen fields of *probe. Same context rules; returns 0 or the
 * errno of a failed read. A parameter, so the self-test can feed it fakes. */
int kbench_probe_counter(kbench_counter_read read, void *counter, struct kbench_probe *probe);

#ifdef KBENCH_SELFTEST
/* Test builds only (make KBENCH_SELFTEST=1, the QEMU boot test): at load,
 * runs the counter probe on fake counters and on MSR 0x10, and logs the
 * verdicts, since an emulator has no RAPL counter to reach that code. */
void kbench_selftest(void);
#else
static inline void kbench_selftest(void) {}
#endif

/*
 * Times `op` on `cpu`: `batches` batches of `iterations` iterations (capped
 * so that one batch keeps interrupts off for about 0.5 ms; a batch still
 * running at 1 ms stops after its current iteration and is cut). Fills
 * res->milli_cycles (room for `batches` entries) with the res->batches
 * batches that ran to the end; res->cut counts the others. Returns 0 or a
 * negative errno (-ENXIO for an offline CPU).
 */
int kbench_run(const struct kbench_op *op, int cpu, unsigned int iterations,
	       unsigned int batches, struct kbench_result *res);

#endif
