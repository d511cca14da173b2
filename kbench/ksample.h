/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ksample.h - the interface of the ksample module (the in-kernel sampler,
 * Diamond & Stoico's Ref_Rapl_Kernel design), shared by the module and by
 * user space (kbench-read; rbench's raplbench-sample mirrors the record).
 *
 * Files (root-only; opening either also needs CAP_SYS_RAWIO, as
 * /dev/cpu/N/msr does):
 *
 *   /proc/ksample/control  0600
 *     write, one command per write(2), a trailing newline allowed:
 *       "start <hz>"   sample every package at <hz> (1..10000), reading its
 *                      energy MSRs; EBUSY while the process that started
 *                      the running timers lives (once it is gone, killed
 *                      before it could stop them, the start takes over)
 *       "null <hz>"    the same timers and records, no MSR read (nvalues 0):
 *                      the null sampler the real one is compared with
 *       "stop"         stop every timer (idempotent); queued records stay
 *                      readable until the next start
 *     anything else, a rate out of 1..10000 or trailing words: EINVAL,
 *     and nothing changes. A start empties the rings and numbers records
 *     from 0 again; it fails with ENXIO if a package's lead CPU is offline
 *     (every timer it armed is stopped again).
 *     read: the state, "key: value" lines, then one "package" and one
 *     "counters" line per package (KSAMPLE_FORMAT below).
 *
 *   /proc/ksample/records  0400
 *     read(2) returns whole struct ksample_record (native endianness), as
 *     many as fit in the buffer, oldest first, package 0's queue before
 *     package 1's; a record read is consumed. 0 when none is queued (it never
 *     blocks), EINVAL for a buffer smaller than one record. Readers are
 *     serialised. Poll it about every 100 ms: 2 system calls per 100 records
 *     at 1 kHz.
 *
 * Module parameter: ring_records, records queued per package (a power of
 * two, 64..1048576, default 16384: 16 s at 1 kHz, 1.6 s at 10 kHz). When a
 * package's ring is full the new record is dropped and counted (overruns);
 * its seq is still used, so a gap in seq is exactly the records lost.
 */
#ifndef KSAMPLE_H
#define KSAMPLE_H

#include <linux/types.h>

#define KSAMPLE_RATE_MIN 1
#define KSAMPLE_RATE_MAX 10000
#define KSAMPLE_MAX_MSRS 6		/* value slots in a record */
#define KSAMPLE_RING_MIN 64
#define KSAMPLE_RING_MAX 1048576
#define KSAMPLE_RING_DEFAULT 16384

/* First line of the control file; bump with any change of the record or of the lines. */
#define KSAMPLE_FORMAT "# ksample 1"

/*
 * The control file, read (one example; every number is decimal unless 0x):
 *
 *   # ksample 1
 *   state: running                   (or stopped)
 *   mode: read                       (or null; the last start's)
 *   rate_hz: 1000                    (the last start's; 0 before any)
 *   owner_pid: 4242                  (the process of the last start; 0 before any)
 *   record_size: 88
 *   ring_records: 16384
 *   packages: 1
 *   package 0 cpu 0 unit_msr 0x606 unit 0xa0e03 msrs 0x611,0x639,0x641,0x619,0x64d faulting -
 *   counters 0 fired 5012 missed 3 overruns 0 read_faults 0 busy_ns 2345678 max_busy_ns 2100 next_seq 5012 queued 12
 *
 * package: its index (records' .package), its lead CPU (where its timer
 * runs), the vendor's energy unit MSR and what it read on the lead CPU at
 * the last start (or at load; "unit fault" if reading it faulted), the
 * allow-listed energy MSRs sampled, in the order of a record's value[]
 * ("-" if none), and those left out because they faulted there ("-" if none).
 * counters (since the last start): timer callbacks run, periods the timer
 * skipped (it fired late by more than a period), records dropped on a full
 * ring, MSR reads that faulted, total and largest time in the callback,
 * the seq of the next record, records queued now.
 */

/* One sample of one package: 88 bytes, no padding. */
struct ksample_record {
	__u64 seq;		/* per package, from 0 at each start; +1 per callback */
	__u64 time_ns;		/* CLOCK_MONOTONIC just before the reads */
	__u64 missed;		/* periods this package's timer skipped since the start */
	__u32 busy_ns;		/* this callback's own time, from entry to the push */
	__u16 package;		/* the control file's "package N" */
	__u16 cpu;		/* the CPU the callback ran on */
	__u32 faults;		/* bit i: value[i] faulted in this read (it is 0) */
	__u32 nvalues;		/* valid value[] entries: the package's msrs; 0 in null mode */
	__u64 value[KSAMPLE_MAX_MSRS];	/* raw MSR values, the package's msrs order */
};

#endif
