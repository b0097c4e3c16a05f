// cellfarm spawns the processes of a live synthetic cell for `cellbench run
// --live`: host processes in one cgroup, then per container an init in a
// pid namespace of its own with its other processes, in that container's
// cgroup of every hierarchy. Every process sleeps until cellfarm is told to
// stop (SIGTERM or SIGINT, or its parent dying), when it kills what it
// started, by pid, and reaps it.
//
// It is C, not Go: a forked copy of a small static C program costs a few
// pages, and a cell of 60,000 processes has to fit beside the benchmark. A
// Go child cannot run without exec.
//
// usage: cellfarm PREFIX CONTAINERS PROCS HOSTPROCS HIERARCHY-DIR...
// prints "c INDEX INIT-PID" per container, then "ready".
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t *kids;
static int nkids;

static void stop(int sig) {
	(void)sig;
	for (int i = 0; i < nkids; i++) kill(kids[i], SIGKILL);
	// An init's death kills its whole pid namespace before it is reaped.
	while (wait(NULL) > 0 || errno == EINTR) {}
	_exit(0);
}

static void fail(const char *what, const char *arg) {
	fprintf(stderr, "cellfarm: %s %s: %s\n", what, arg, strerror(errno));
	stop(0);
}

// join moves cellfarm into leaf (relative to each hierarchy) so that what
// it forks next starts there.
static void join(int nh, char **hier, const char *leaf) {
	char path[4096], pid[32];
	int n = snprintf(pid, sizeof pid, "%d", getpid());
	for (int i = 0; i < nh; i++) {
		snprintf(path, sizeof path, "%s/%s/cgroup.procs", hier[i], leaf);
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, pid, n) != n) fail("join", path);
		close(fd);
	}
}

// sleep_forever is every process's life: it dies with its parent, so that
// cellfarm killed outright still takes its cell with it.
static void sleep_forever(void) {
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) pause();
}

int main(int argc, char **argv) {
	if (argc < 6) {
		fprintf(stderr, "usage: cellfarm PREFIX CONTAINERS PROCS HOSTPROCS HIERARCHY-DIR...\n");
		return 2;
	}
	const char *prefix = argv[1];
	int containers = atoi(argv[2]), procs = atoi(argv[3]), hostprocs = atoi(argv[4]);
	int nh = argc - 5;
	char **hier = argv + 5;
	kids = calloc(containers + hostprocs, sizeof(pid_t));
	if (!kids) return 1;
	struct sigaction sa = {.sa_handler = stop};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1) stop(0); // the parent died before the line above

	char leaf[4096];
	snprintf(leaf, sizeof leaf, "%s-host", prefix);
	join(nh, hier, leaf);
	for (int i = 0; i < hostprocs; i++) {
		pid_t p = fork();
		if (p == 0) sleep_forever();
		if (p < 0) fail("fork", "host process");
		kids[nkids++] = p;
	}
	for (int c = 0; c < containers; c++) {
		snprintf(leaf, sizeof leaf, "%s/c%06d", prefix, c);
		join(nh, hier, leaf);
		// fork into a new pid namespace: the child is its pid 1.
		pid_t p = syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0);
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (int j = 1; j < procs; j++) {
				pid_t q = fork();
				if (q == 0) sleep_forever();
				if (q < 0) _exit(1);
			}
			sleep_forever();
		}
		if (p < 0) fail("clone", leaf);
		kids[nkids++] = p;
		printf("c %d %d\n", c, p);
	}
	snprintf(leaf, sizeof leaf, "%s-host", prefix);
	join(nh, hier, leaf);
	printf("ready\n");
	fflush(stdout);
	sleep_forever();
}
