/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ksample_sampler.h - the in-kernel sampler's packages, timers and rings
 * (ksample_sampler.c), as the module's files (ksample_main.c) use them.
 */
#ifndef KSAMPLE_SAMPLER_H
#define KSAMPLE_SAMPLER_H

#include <linux/hrtimer.h>
#include <linux/seq_file.h>
#include <linux/types.h>

#include "ksample.h"

/*
 * A single-producer single-consumer ring of records: the timer callback
 * pushes at head, the records reader pops at tail; both only grow, the
 * slot is index & mask. Full when head - tail == mask + 1.
 */
struct ksample_ring {
	struct ksample_record *slots;
	u64 mask;
	u64 head;	/* written by the callback (release), read by the reader (acquire) */
	u64 tail;	/* written by the reader (release), read by the callback (acquire) */
};

/* What a package's callback counted since the last start (control file's "counters"). */
struct ksample_counters {
	u64 fired, missed, overruns, read_faults, busy_ns, max_busy_ns, next_seq;
};

/* One package: its lead CPU, what it samples there, its timer and ring. */
struct ksample_package {
	unsigned int index;
	int logical_id;			/* topology_logical_package_id() */
	int cpu;			/* lead CPU: the first online CPU of the package at load */
	u32 unit_msr;
	u64 unit;
	bool unit_faults;
	u32 msrs[KSAMPLE_MAX_MSRS];	/* sampled, in a record's value[] order */
	unsigned int nmsrs;
	u32 faulting[KSAMPLE_MAX_MSRS];	/* allow-listed but faulting on the lead CPU */
	unsigned int nfaulting;
	bool read;			/* false: null mode, no MSR read */
	ktime_t period;
	ktime_t first;			/* the first deadline of the current start */
	struct hrtimer timer;
	struct ksample_counters counters;
	struct ksample_ring ring;
};

/* Finds the packages and allocates their rings of `ring_records`; 0 or -errno. */
int ksample_setup(unsigned int ring_records);
/* Stops sampling and frees everything ksample_setup allocated. */
void ksample_teardown(void);

/* Starts sampling at `hz` (reading the MSRs, or not: null mode); 0,
 * -EBUSY if running, -ENXIO if a lead CPU is offline. Caller holds the lock. */
int ksample_start(unsigned int hz, bool read);
/* Stops every timer and waits for running callbacks. Caller holds the lock. */
void ksample_stop(void);
/* The control file's text. Caller holds the lock. */
void ksample_show(struct seq_file *m);
/* Copies up to `room` queued records to `buf`, oldest first, package by
 * package, and consumes what it copied; the number copied, or -EFAULT if
 * not even one could be. Caller holds the lock. */
ssize_t ksample_pop(char __user *buf, size_t room);

#endif
