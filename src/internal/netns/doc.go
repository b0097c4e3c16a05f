// Package netns finds network namespaces that no process is in and no bind
// mount names, kept alive only by an open file: an nsfs descriptor
// (/proc/<pid>/fd/N -> net:[inode]) or a socket created in the namespace
// before its creator left it (seed 003: a monitoring agent's long-lived
// netlink socket kept a deleted pod's namespace, and its ipvlan address,
// alive). Neither lsns nor /proc/*/ns/net shows such a namespace.
//
// A scan lists every process's open files first: a namespace held by a file
// is held by an nsfs file or a socket, and a host where no process holds
// one that could has no leak, so nothing more is read. On the live root a
// BPF iterator over every task's file table (TaskFiles, iter_linux.go)
// lists them in one pass, each socket with its namespace read in the
// kernel, and reports only nsfs files and sockets outside their holder's
// namespace: no fd directory is walked and no socket is received. Where it
// cannot run (no BTF, an older kernel, no CAP_BPF, another pid namespace),
// and under a fixture root, the scan reads every process's fd links
// instead, and what follows settles the sockets. When any file could hold
// one, every process's ns/net link is read (the namespaces some process is
// in need no further look). A socket's namespace is not in /proc: on the fd
// walk the tables of its holder's namespace (/proc/net/tcp, unix,
// netlink...), read once per namespace from inside it, settle most sockets;
// the live Probe asks only the rest one by one, duplicating the socket with
// pidfd_getfd(2) and asking it with ioctl(SIOCGSKNS), which does not stop
// the holder (measured: ~20 µs a socket, shared/harness/FINDINGS.md).
// Receiving a socket re-tags it with the receiver's v1 net_cls classid and
// net_prio index, so it is received only from a thread in its holder's
// cgroups (tags_linux.go), or not at all (ErrNotInspected); on the
// iterator's path only a leak's holder may be, to read what the namespace
// still has. Threads' ns/net links and every mount namespace's mountinfo
// (nsfs bind mounts) are read only when a namespace is held by nothing but
// files; on the iterator's path a second iterator (iter/task) has already
// said which namespaces every thread is in, and one process per mount
// namespace, so nothing is read per process.
// What a leaked namespace still holds (its interfaces and addresses) is
// read by entering it on a locked OS thread that returns to its own
// namespace before it is unlocked, so nothing else of cellguard ever runs
// in it, and nothing in it is changed.
package netns
