// SPDX-License-Identifier: GPL-2.0
/*
 * kbench_liveness.c - does an energy-status MSR count energy here?
 *
 * A hypervisor may answer rdmsr of a RAPL MSR with 0, or with a value that
 * never moves: the instruction is real and its latency is worth timing, but
 * it yields no energy. Before an energy counter is timed, this probe gives
 * it one verdict, no-unit, live or frozen (the contract of issue 11, shared
 * with the user-space harnesses; kbench/README.md, "Liveness of the energy
 * counters").
 *
 * It runs in process context on the benchmark CPU (the work_on_cpu worker
 * of kbench_ops.c, before the timed batches): it sleeps between reads with
 * interrupts on, and is bounded by a number of reads and a deadline.
 */
#include <linux/delay.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <asm/msr.h>

#include "kbench.h"
#include "rapl_msrs.h"

static int read_msr(u32 msr, u64 *value)
{
	u32 lo, hi;
	int err = rdmsr_safe(msr, &lo, &hi);

	*value = ((u64)hi << 32) | lo;
	return err;
}

int kbench_read_msr_counter(void *msr, u64 *value)
{
	return read_msr(*(u32 *)msr, value) ? -EIO : 0;
}

int kbench_probe_liveness(u32 msr, u32 unit_msr, struct kbench_probe *probe)
{
	*probe = (struct kbench_probe){};
	probe->unit_faults = read_msr(unit_msr, &probe->unit) != 0;
	if (probe->unit_faults || !probe->unit || !RAPL_ESU(probe->unit)) {
		probe->verdict = KB_NO_UNIT;
		return 0;
	}
	return kbench_probe_counter(kbench_read_msr_counter, &msr, probe);
}

int kbench_probe_counter(kbench_counter_read read, void *counter, struct kbench_probe *probe)
{
	const unsigned int poll_us = KBENCH_LIVENESS_POLL_US;
	const unsigned int max_reads = 1 + KBENCH_LIVENESS_WINDOW_MS * 1000 / poll_us;
	u64 start, deadline, now, value;
	int err;

	might_sleep();
	err = read(counter, &probe->first);
	if (err)
		return err;
	start = ktime_get_ns();
	deadline = start + (u64)KBENCH_LIVENESS_WINDOW_MS * NSEC_PER_MSEC;
	probe->reads = 1;
	probe->last = probe->first;
	probe->verdict = KB_FROZEN;
	do {
		usleep_range(poll_us, poll_us + poll_us / 10);
		err = read(counter, &value);
		if (err)
			return err;
		probe->reads++;
		probe->last = value;
		now = ktime_get_ns();
		if (value != probe->first) {
			probe->verdict = KB_LIVE;
			break;
		}
	} while (probe->reads < max_reads && now < deadline);
	probe->elapsed_us = div_u64(now - start, NSEC_PER_USEC);
	return 0;
}
