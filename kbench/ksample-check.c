// SPDX-License-Identifier: GPL-2.0
/*
 * ksample-check - drains the ksample module and checks its records, for the
 * QEMU boot test (kbench/qemu/guest-test.sh). Statically linked, like
 * kbench-read, to run in a bare busybox initramfs.
 *
 *   ksample-check drain LABEL MODE HZ SECONDS INTERVAL_MS
 *       writes "MODE HZ" (MODE start or null) to /proc/ksample/control,
 *       reads /proc/ksample/records every INTERVAL_MS until SECONDS pass,
 *       writes "stop", reads what is left, then prints one
 *       "LABEL <what>: <value>" line per figure: the records read, the seq
 *       numbers missing between them (gaps) or repeated or going back
 *       (duplicates), the seqs never read (next_seq - records: the gaps
 *       and the drops after the last record read), times that did not
 *       advance, the module's own
 *       counters (fired, overruns, missed, next_seq, summed over packages),
 *       the rate the records' times give, the largest busy_ns, and the
 *       nvalues seen, and the reads and polls (drains until empty) it took
 *       with the records the first read of each poll returned. A failed
 *       start prints "LABEL start: <errno name>".
 *
 * Every seq must be read or counted: never read = overruns, gaps <= overruns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ksample.h"

#define CONTROL "/proc/ksample/control"
#define RECORDS "/proc/ksample/records"
#define MAX_PACKAGES 64
#define BUFFER_RECORDS 4096

struct package_seen {
	uint64_t next_seq;	/* the seq expected next */
	uint64_t last_time;
	int any;
};

struct totals {
	uint64_t reads, polls, first_reads, records, lost, duplicates, time_regressions, max_busy;
	uint64_t first_time, last_time;
	int nvalues_min, nvalues_max;
	struct package_seen seen[MAX_PACKAGES];
};

static int write_command(const char *command)
{
	int fd = open(CONTROL, O_WRONLY);
	int err = fd < 0 || write(fd, command, strlen(command)) < 0 ? errno : 0;

	if (fd >= 0)
		close(fd);
	return err;
}

static void take(struct totals *t, const struct ksample_record *r)
{
	struct package_seen *p = &t->seen[r->package % MAX_PACKAGES];

	t->records++;
	if (r->seq < p->next_seq)
		t->duplicates++;
	else
		t->lost += r->seq - p->next_seq;
	if (r->seq + 1 > p->next_seq)
		p->next_seq = r->seq + 1;
	if (p->any && r->time_ns <= p->last_time)
		t->time_regressions++;
	p->last_time = r->time_ns;
	p->any = 1;
	if (!t->first_time || r->time_ns < t->first_time)
		t->first_time = r->time_ns;
	if (r->time_ns > t->last_time)
		t->last_time = r->time_ns;
	if (r->busy_ns > t->max_busy)
		t->max_busy = r->busy_ns;
	if (t->nvalues_min < 0 || (int)r->nvalues < t->nvalues_min)
		t->nvalues_min = (int)r->nvalues;
	if ((int)r->nvalues > t->nvalues_max)
		t->nvalues_max = (int)r->nvalues;
}

/*
 * Reads until the module has nothing queued; 0 or errno. The first read
 * takes what queued since the last poll; later ones only what arrived
 * during the reads before them, more of them the slower the CPU.
 */
static int drain(int fd, struct totals *t, struct ksample_record *buf)
{
	t->polls++;
	for (int first = 1;; first = 0) {
		ssize_t n = read(fd, buf, BUFFER_RECORDS * sizeof(*buf));

		if (n <= 0)
			return n < 0 ? errno : 0;
		t->reads++;
		if (first)
			t->first_reads += (size_t)n / sizeof(*buf);
		for (size_t i = 0; i < (size_t)n / sizeof(*buf); i++)
			take(t, &buf[i]);
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sums a counter of every "counters N ..." line of the control file. */
static uint64_t counter(const char *control, const char *name)
{
	char key[48];
	uint64_t sum = 0;

	snprintf(key, sizeof(key), " %s ", name);
	for (const char *line = control; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *at;

		if (strncmp(line, "counters ", 9) != 0)
			continue;
		at = strstr(line, key);
		if (at && at < strchr(line, '\n'))
			sum += strtoull(at + strlen(key), NULL, 10);
	}
	return sum;
}

static int cmd_drain(const char *label, const char *mode, int hz, int seconds, int interval_ms)
{
	static struct ksample_record buf[BUFFER_RECORDS];
	static char control[16384];
	struct totals t = { .nvalues_min = -1 };
	struct timespec pause = { interval_ms / 1000, (long)(interval_ms % 1000) * 1000000L };
	char command[32];
	uint64_t end;
	int fd, err, cfd;
	ssize_t n;

	fd = open(RECORDS, O_RDONLY);
	if (fd < 0) {
		printf("%s open: %s\n", label, strerror(errno));
		return 1;
	}
	snprintf(command, sizeof(command), "%s %d\n", mode, hz);
	err = write_command(command);
	if (err) {
		printf("%s start: %s\n", label, err == EBUSY ? "EBUSY" : err == EINVAL ? "EINVAL" : strerror(err));
		close(fd);
		return 1;
	}
	end = now_ns() + (uint64_t)seconds * 1000000000ull;
	err = 0;
	while (!err && now_ns() < end) {
		nanosleep(&pause, NULL);
		err = drain(fd, &t, buf);
	}
	write_command("stop");
	if (!err)
		err = drain(fd, &t, buf);
	close(fd);
	if (err)
		printf("%s read: %s\n", label, strerror(err));

	cfd = open(CONTROL, O_RDONLY);
	n = cfd < 0 ? -1 : read(cfd, control, sizeof(control) - 1);
	control[n > 0 ? n : 0] = '\0';
	if (cfd >= 0)
		close(cfd);

	printf("%s reads: %llu\n", label, (unsigned long long)t.reads);
	printf("%s polls: %llu\n", label, (unsigned long long)t.polls);
	printf("%s first reads: %llu\n", label, (unsigned long long)t.first_reads);
	printf("%s records: %llu\n", label, (unsigned long long)t.records);
	printf("%s gaps: %llu\n", label, (unsigned long long)t.lost);
	printf("%s never read: %llu\n", label,
	       (unsigned long long)(counter(control, "next_seq") - t.records));
	printf("%s duplicates: %llu\n", label, (unsigned long long)t.duplicates);
	printf("%s time regressions: %llu\n", label, (unsigned long long)t.time_regressions);
	printf("%s fired: %llu\n", label, (unsigned long long)counter(control, "fired"));
	printf("%s overruns: %llu\n", label, (unsigned long long)counter(control, "overruns"));
	printf("%s missed: %llu\n", label, (unsigned long long)counter(control, "missed"));
	printf("%s next_seq: %llu\n", label, (unsigned long long)counter(control, "next_seq"));
	printf("%s queued after: %llu\n", label, (unsigned long long)counter(control, "queued"));
	printf("%s max busy_ns: %llu\n", label, (unsigned long long)t.max_busy);
	printf("%s rate_hz: %.1f\n", label, t.records > 1 && t.last_time > t.first_time
	       ? (double)(t.records + t.lost - 1) * 1e9 / (double)(t.last_time - t.first_time) : 0.0);
	printf("%s nvalues: %d..%d\n", label, t.nvalues_min, t.nvalues_max);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 7 && strcmp(argv[1], "drain") == 0)
		return cmd_drain(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	fprintf(stderr, "usage: ksample-check drain LABEL start|null HZ SECONDS INTERVAL_MS\n");
	return 2;
}
