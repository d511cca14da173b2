// SPDX-License-Identifier: GPL-2.0
/*
 * kbench-read - the user-space side of the kbench module. Statically linked
 * so it runs in a bare busybox initramfs as well as natively.
 *
 *   kbench-read report [READS [REPS]]
 *       every /proc/kbench/<op> report, then the round trip of reading
 *       /proc/kbench/stamp and /sys/kernel/kbench/stamp from the benchmark
 *       CPU: REPS repetitions (default 20) of READS reads (default 1000),
 *       each repetition the mean TSC cycles per read() minus the cycles spent
 *       inside the module's show().
 *   kbench-read write FILE VALUE   write VALUE to FILE, print ok or the errno name
 *   kbench-read read-as UID FILE   as UID (and GID UID), open and read FILE; ok or errno name
 *   kbench-read write-while-reading OPFILE FILE VALUE
 *       while a child reads OPFILE (a benchmark, holding the module's lock),
 *       a second child writes VALUE to FILE; once that writer is seen blocked
 *       inside write() with the reader still running, it gets a signal. Prints
 *       the write's outcome, ok or the errno name (EINTR: the waiting writer
 *       was interrupted), or "never blocked" if in 5 tries the benchmark ended
 *       before the writer was seen waiting
 *   kbench-read machine            the files and cpuid leaves results/machine.py reads
 *   kbench-read load-cycles KO N PARAMS
 *       N times: load the module KO with PARAMS (finit_module, as insmod), and
 *       if /proc/kbench/nop is there, unload it (delete_module, as rmmod).
 *       Prints "load-unload cycles: K of N", K the cycles that did all three.
 *       The boot test's 100 cycles in one process: an insmod and an rmmod
 *       process per cycle cost 60 ms of the 130 under QEMU/TCG
 *
 * Output sections start with "=== <kind> <name>" lines (parsed by
 * results/kbench.py); "=== end" closes the output.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

#define PROC_DIR "/proc/kbench"
#define PROC_STAMP PROC_DIR "/stamp"
#define SYS_STAMP "/sys/kernel/kbench/stamp"
#define SYS_CPU "/sys/kernel/kbench/cpu"

/* The name of an errno the module's files return ("EINVAL"), else its message. */
static const char *errno_name(int err)
{
	static const int named[] = {EINVAL, EACCES, EPERM, ENOENT, EIO, ENODEV, ERANGE, ENXIO, EINTR, EBUSY};

	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (err == named[i])
			return strerrorname_np(err);
	return strerror(err);
}

/* Write `value` to `path`: 0 or the errno. */
static int write_text(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY);
	int err = fd < 0 || write(fd, value, strlen(value)) < 0 ? errno : 0;

	if (fd >= 0)
		close(fd);
	return err;
}

/* The first `len - 1` bytes of `path`, or an empty string; 0 or the errno. */
static int read_text(const char *path, char *text, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, text, len - 1);
	int err = n < 0 ? errno : 0;

	if (fd >= 0)
		close(fd);
	text[n > 0 ? n : 0] = '\0';
	return err;
}

/* Copies FILE to stdout; 0 or errno. */
static int cat(const char *path)
{
	char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	int err = n < 0 ? errno : 0;
	close(fd);
	return err;
}

static int is_op_file(const struct dirent *e)
{
	return e->d_name[0] != '.' && strcmp(e->d_name, "stamp") != 0;
}

static void report_ops(void)
{
	struct dirent **names;
	/* alphasort compares with strcoll: strcmp in the C locale this runs in */
	int n = scandir(PROC_DIR, &names, is_op_file, alphasort);

	if (n < 0) {
		printf("=== error %s\n%s\n", PROC_DIR, errno_name(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", PROC_DIR, names[i]->d_name);
		printf("=== op %s\n", path);
		fflush(stdout);
		int err = cat(path);
		if (err)
			printf("error: %s\n", errno_name(err));
		free(names[i]);
	}
	free(names);
}

static inline uint64_t tsc_now(void)
{
	unsigned int aux;

	return __rdtscp(&aux);	/* waits for earlier instructions */
}

/* Round trips of pread(fd, 0) of a stamp file, minus the time inside show(). */
static void report_roundtrip(const char *path, int reads, int reps)
{
	char buf[128];
	int fd = open(path, O_RDONLY);

	printf("=== roundtrip %s\n", path);
	if (fd < 0) {
		printf("error: %s\n", errno_name(errno));
		return;
	}
	printf("reads: %d\n", reads);
	for (int i = 0; i < reads / 10; i++)	/* warm up */
		if (pread(fd, buf, sizeof(buf) - 1, 0) < 0)
			break;
	for (int r = 0; r < reps; r++) {
		double sum = 0;

		for (int i = 0; i < reads; i++) {
			unsigned long long enter, leave;
			uint64_t t0 = tsc_now();
			ssize_t len = pread(fd, buf, sizeof(buf) - 1, 0);
			uint64_t t1 = tsc_now();

			if (len <= 0) {
				printf("error: %s\n", len < 0 ? errno_name(errno) : "empty read");
				goto out;
			}
			buf[len] = '\0';
			if (sscanf(buf, "%llu %llu", &enter, &leave) != 2) {
				printf("error: malformed stamp '%s'\n", buf);
				goto out;
			}
			sum += (double)(t1 - t0) - (double)(leave - enter);
		}
		printf("rep %d: %.3f\n", r, sum / reads);
	}
out:
	close(fd);
}

/* Pins to the CPU the module benchmarks on, so the round trips are comparable. */
static void pin_to_bench_cpu(void)
{
	char text[32];

	read_text(SYS_CPU, text, sizeof(text));	/* CPU 0 if it cannot be read */
	int cpu = atoi(text);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) == 0)
		printf("=== pinned %d\n", cpu);
}

static int cmd_report(int reads, int reps)
{
	report_ops();
	pin_to_bench_cpu();
	report_roundtrip(PROC_STAMP, reads, reps);
	report_roundtrip(SYS_STAMP, reads, reps);
	printf("=== end\n");
	return 0;
}

static int cmd_write(const char *path, const char *value)
{
	int err = write_text(path, value);

	printf("write %s %s: %s\n", path, value, err ? errno_name(err) : "ok");
	return 0;
}

static int cmd_read_as(const char *uid_text, const char *path)
{
	uid_t uid = (uid_t)atoi(uid_text);
	char buf[256];

	if (setgid(uid) != 0 || setuid(uid) != 0) {
		printf("read-as %s %s: cannot drop privileges: %s\n", uid_text, path,
		       errno_name(errno));
		return 1;
	}
	int err = read_text(path, buf, sizeof(buf));
	printf("read-as %s %s: %s\n", uid_text, path, err ? errno_name(err) : "ok");
	return 0;
}

static int cmd_load_cycles(const char *ko, const char *n_text, const char *params)
{
	int n = atoi(n_text), ok = 0, i;
	int fd = open(ko, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		printf("load-unload cycles: cannot open %s: %s\n", ko, errno_name(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		/* the kernel reads the whole file from offset 0 at each load */
		if (syscall(SYS_finit_module, fd, params, 0) != 0) {
			fprintf(stderr, "load-cycles: load %d: %s\n", i, strerror(errno));
			continue;
		}
		if (access(PROC_DIR "/nop", F_OK) != 0)
			continue;
		if (syscall(SYS_delete_module, "kbench", O_NONBLOCK) != 0) {
			fprintf(stderr, "load-cycles: unload %d: %s\n", i, strerror(errno));
			continue;
		}
		ok++;
	}
	close(fd);
	printf("load-unload cycles: %d of %d\n", ok, n);
	return 0;
}

/* The first `len - 1` bytes of /proc/PID/NAME, or an empty string. */
static void read_proc(pid_t pid, const char *name, char *text, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	read_text(path, text, len);
}

/* The scheduler state letter of process `pid` ("pid (comm) S ..."), or 0. */
static char proc_state(pid_t pid)
{
	char text[512], *end;

	read_proc(pid, "stat", text, sizeof(text));
	end = strrchr(text, ')');
	return end && end[1] == ' ' ? end[2] : 0;
}

/* Whether `pid` sleeps interruptibly inside write(2): /proc/PID/syscall
 * starts with the number of the system call a blocked task is in. */
static int blocked_in_write(pid_t pid)
{
	char text[256];

	if (proc_state(pid) != 'S')
		return 0;
	read_proc(pid, "syscall", text, sizeof(text));
	return text[0] && strtol(text, NULL, 10) == SYS_write;
}

static void ignore_signal(int sig)
{
	(void)sig;
}

/* Poll every millisecond, for up to 10 s, until `done` holds. */
#define POLL_UNTIL(done)							\
	for (int polls_ = 0; polls_ < 10000 && !(done); polls_++)		\
		usleep(1000)

/* The writer child: write `value` to `path`; the exit status is the errno
 * (0: written). No SA_RESTART, so a signal ends a blocked write with EINTR. */
static void writer_child(const char *path, const char *value)
{
	struct sigaction action = {.sa_handler = ignore_signal};

	sigaction(SIGUSR1, &action, NULL);
	_exit(write_text(path, value) & 0xff);
}

/* One try: returns 1 and sets *err when the writer was seen blocked behind
 * the running benchmark and signalled, 0 when the benchmark ended first. */
static int try_interrupting(const char *opfile, const char *path, const char *value, int *err)
{
	pid_t reader, writer;
	int status = 0, signalled = 0;

	reader = fork();
	if (reader < 0)
		return -1;
	if (reader == 0) {
		char buf[4096];
		int fd = open(opfile, O_RDONLY);

		while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	/* the reader waits uninterruptibly (D) while the module's worker runs;
	 * Z or no state: it has already finished */
	POLL_UNTIL(strchr("DZ", proc_state(reader)));
	writer = fork();
	if (writer == 0)
		writer_child(path, value);
	if (writer > 0) {
		POLL_UNTIL(blocked_in_write(writer) || proc_state(reader) != 'D');
		if (blocked_in_write(writer) && proc_state(reader) == 'D') {
			kill(writer, SIGUSR1);
			signalled = 1;
		}
		waitpid(writer, &status, 0);
		*err = WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
	}
	waitpid(reader, NULL, 0);
	return writer < 0 ? -1 : signalled;
}

static int cmd_write_while_reading(const char *opfile, const char *path, const char *value)
{
	char before[64];
	int err = 0;

	read_text(path, before, sizeof(before));
	for (int attempt = 0; attempt < 5; attempt++) {
		int got = try_interrupting(opfile, path, value, &err);

		if (got < 0) {
			printf("write-while-reading %s: cannot fork: %s\n", path, errno_name(errno));
			return 1;
		}
		if (got) {
			printf("write-while-reading %s: %s\n", path, err ? errno_name(err) : "ok");
			return 0;
		}
		/* the benchmark ended first and the write went through: undo it,
		 * so the next try runs the same benchmark */
		if (before[0])
			write_text(path, before);
	}
	printf("write-while-reading %s: never blocked\n", path);
	return 0;
}

static int cmd_machine(void)
{
	static const char *files[] = {
		"/proc/cpuinfo", "/proc/sys/kernel/osrelease", "/proc/sys/kernel/hostname",
		"/sys/devices/system/cpu/smt/active",
	};
	const char *vulns = "/sys/devices/system/cpu/vulnerabilities";
	/* the leaves results/machine.py reads (records 16 bytes apart in its cpuid file) */
	const unsigned int leaves[] = {0x0, 0x15, 0x40000000, 0x40000010};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		printf("=== file %s\n", files[i]);
		cat(files[i]);
	}
	DIR *dir = opendir(vulns);
	for (struct dirent *e; dir && (e = readdir(dir));) {
		char path[512];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", vulns, e->d_name);
		printf("=== file %s\n", path);
		cat(path);
	}
	if (dir)
		closedir(dir);
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		unsigned int a, b, c, d;

		__cpuid_count(leaves[i], 0, a, b, c, d);
		printf("=== cpuid 0x%x 0x%x 0x%x 0x%x 0x%x\n", leaves[i], a, b, c, d);
	}
	printf("=== end\n");
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: kbench-read report [READS [REPS]] | write FILE VALUE | "
			"read-as UID FILE | write-while-reading OPFILE FILE VALUE | machine | "
			"load-cycles KO N PARAMS\n");
	return 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "report") == 0) {
		int reads = argc > 2 ? atoi(argv[2]) : 1000;
		int reps = argc > 3 ? atoi(argv[3]) : 20;

		if (reads < 1 || reps < 1)
			return usage();
		return cmd_report(reads, reps);
	}
	if (argc == 4 && strcmp(argv[1], "write") == 0)
		return cmd_write(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "read-as") == 0)
		return cmd_read_as(argv[2], argv[3]);
	if (argc == 5 && strcmp(argv[1], "write-while-reading") == 0)
		return cmd_write_while_reading(argv[2], argv[3], argv[4]);
	if (argc == 2 && strcmp(argv[1], "machine") == 0)
		return cmd_machine();
	if (argc == 5 && strcmp(argv[1], "load-cycles") == 0)
		return cmd_load_cycles(argv[2], argv[3], argv[4]);
	return usage();
}
