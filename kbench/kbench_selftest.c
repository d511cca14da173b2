// SPDX-License-Identifier: GPL-2.0
/*
 * kbench_selftest.c - exercise the liveness probe's polling loop where no
 * RAPL counter exists (QEMU/TCG reads the unit MSR as 0, so every energy op
 * stops at "no-unit"). Built only with `make KBENCH_SELFTEST=1` (the boot
 * test, kbench/qemu/test), never into a module for a real machine.
 *
 * At load, on CPU 0 in a work_on_cpu worker as the benchmarks do, it runs
 * kbench_probe_counter with the real window and poll on
 *   fake-live    a counter that advances on its 3rd read: live, 3 reads;
 *   fake-frozen  a counter that never advances: frozen after the window;
 *   msr-0x10     IA32_TIME_STAMP_COUNTER through rdmsr_safe (hardware: live;
 *                TCG returns a constant, so frozen there);
 * and logs one line each, which kbench/test_kbench_qemu.py reads from dmesg:
 *   kbench: selftest probe fake-live: live, 3 reads in 2 ms
 * `insmod kbench.ko selftest=0` skips it: the boot test's 100 load/unload
 * cycles (about 0.2 s of probe windows per load under TCG, 20 s in all).
 */
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/moduleparam.h>
#include <linux/printk.h>
#include <linux/workqueue.h>
#include <asm/msr.h>

#include "kbench.h"

static bool selftest = true;
module_param(selftest, bool, 0400);
MODULE_PARM_DESC(selftest, "run the probe self-test at load (default 1; test builds only)");

struct fake_counter {
	unsigned int reads;
	unsigned int advances_at;	/* 0: never */
};

static int read_fake(void *counter, u64 *value)
{
	struct fake_counter *c = counter;

	c->reads++;
	*value = c->advances_at && c->reads >= c->advances_at ? 1 : 0;
	return 0;
}

struct selftest_case {
	const char *name;
	kbench_counter_read read;
	void *counter;		/* what `read` reads */
};

static long probe_one(void *arg)
{
	struct selftest_case *c = arg;
	struct kbench_probe p = {};
	int err = kbench_probe_counter(c->read, c->counter, &p);

	if (err)
		pr_info("kbench: selftest probe %s: error %d\n", c->name, err);
	else
		pr_info("kbench: selftest probe %s: %s, %u reads in %llu ms\n", c->name,
			p.verdict == KB_LIVE ? "live" : "frozen", p.reads,
			div_u64(p.elapsed_us + 500, 1000));
	return 0;
}

void kbench_selftest(void)
{
	struct fake_counter live = { .advances_at = 3 }, frozen = {};
	u32 tsc = MSR_IA32_TSC;	/* through the module's own MSR reader */
	struct selftest_case cases[] = {
		{ .name = "fake-live", .read = read_fake, .counter = &live },
		{ .name = "fake-frozen", .read = read_fake, .counter = &frozen },
		{ .name = "msr-0x10", .read = kbench_read_msr_counter, .counter = &tsc },
	};
	unsigned int i;

	if (!selftest)
		return;
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		work_on_cpu_safe(0, probe_one, &cases[i]);
}
