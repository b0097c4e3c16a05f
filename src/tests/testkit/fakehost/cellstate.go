package fakehost

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// allowedSyscalls is the seccomp allowlist of the state files: the x86_64
// syscalls minus those Docker's default profile (which Garden ships) denies.
// It is most of a real state file's size, and the validator decodes past it.
var allowedSyscalls = strings.Fields(`
	read write open close stat fstat lstat poll lseek mmap mprotect munmap brk rt_sigaction
	rt_sigprocmask rt_sigreturn ioctl pread64 pwrite64 readv writev access pipe select sched_yield
	mremap msync mincore madvise shmget shmat shmctl dup dup2 pause nanosleep getitimer alarm
	setitimer getpid sendfile socket connect accept sendto recvfrom sendmsg recvmsg shutdown
	bind listen getsockname getpeername socketpair setsockopt getsockopt clone fork vfork execve
	exit wait4 kill uname semget semop semctl shmdt msgget msgsnd msgrcv msgctl fcntl flock
	fsync fdatasync truncate ftruncate getdents getcwd chdir fchdir rename mkdir rmdir creat
	link unlink symlink readlink chmod fchmod chown fchown lchown umask gettimeofday getrlimit
	getrusage sysinfo times getuid syslog getgid setuid setgid geteuid getegid setpgid getppid
	getpgrp setsid setreuid setregid getgroups setgroups setresuid getresuid setresgid getresgid
	getpgid setfsuid setfsgid getsid capget capset rt_sigpending rt_sigtimedwait rt_sigqueueinfo
	rt_sigsuspend sigaltstack utime mknod personality statfs fstatfs getpriority setpriority
	sched_setparam sched_getparam sched_setscheduler sched_getscheduler sched_get_priority_max
	sched_get_priority_min sched_rr_get_interval mlock munlock mlockall munlockall modify_ldt
	prctl arch_prctl setrlimit chroot sync sethostname setdomainname gettid readahead
	setxattr lsetxattr fsetxattr getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr
	removexattr lremovexattr fremovexattr tkill time futex sched_setaffinity sched_getaffinity
	set_thread_area io_setup io_destroy io_getevents io_submit io_cancel get_thread_area
	epoll_create epoll_ctl_old epoll_wait_old remap_file_pages getdents64 set_tid_address
	restart_syscall semtimedop fadvise64 timer_create timer_settime timer_gettime timer_getoverrun
	timer_delete clock_gettime clock_getres clock_nanosleep exit_group epoll_wait epoll_ctl
	tgkill utimes mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr waitid
	ioprio_set ioprio_get inotify_init inotify_add_watch inotify_rm_watch migrate_pages openat
	mkdirat mknodat fchownat futimesat newfstatat unlinkat renameat linkat symlinkat readlinkat
	fchmodat faccessat pselect6 ppoll set_robust_list get_robust_list splice tee sync_file_range
	vmsplice utimensat epoll_pwait signalfd timerfd_create eventfd fallocate timerfd_settime
	timerfd_gettime accept4 signalfd4 eventfd2 epoll_create1 dup3 pipe2 inotify_init1 preadv
	pwritev rt_tgsigqueueinfo recvmmsg fanotify_init fanotify_mark prlimit64 syncfs sendmmsg
	getcpu sched_setattr sched_getattr renameat2 seccomp getrandom memfd_create execveat
	membarrier mlock2 copy_file_range preadv2 pwritev2 pkey_mprotect pkey_alloc pkey_free
	statx io_pgetevents rseq pidfd_send_signal io_uring_setup io_uring_enter io_uring_register
	pidfd_open clone3 close_range openat2 pidfd_getfd faccessat2 process_madvise epoll_pwait2
	mount_setattr quotactl_fd landlock_create_ruleset landlock_add_rule landlock_restrict_self
	memfd_secret process_mrelease futex_waitv set_mempolicy_home_node
`)

// template is a runc state.json with placeholders for what differs per
// container, rendered once and then filled by byte copies.
type template struct{ parts [][]byte }

const (
	phID    = "@@ID@@"
	phPID   = "@@PID@@"
	phStart = "@@START@@"
)

// stateTemplate shapes a state.json as runc writes it for a Garden
// container: libcontainer's configs.Config with mounts, devices,
// capabilities, user namespace mappings and seccomp, plus cgroup_paths for
// every hierarchy and namespace_paths.
func stateTemplate() *template {
	caps := []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
		"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"}
	type m = map[string]any
	mount := func(src, dst, dev string, flags int, data string) m {
		return m{"source": src, "destination": dst, "device": dev, "flags": flags, "propagation_flags": nil,
			"data": data, "relabel": "", "rec_attr": nil, "extensions": 0, "premount_cmds": nil, "postmount_cmds": nil}
	}
	mounts := []any{
		mount("proc", "/proc", "proc", 14, ""),
		mount("tmpfs", "/dev", "tmpfs", 16777218, "mode=755,size=65536k"),
		mount("devpts", "/dev/pts", "devpts", 10, "newinstance,ptmxmode=0666,mode=0620,gid=5"),
		mount("shm", "/dev/shm", "tmpfs", 14, "mode=1777,size=65536k"),
		mount("mqueue", "/dev/mqueue", "mqueue", 14, ""),
		mount("sysfs", "/sys", "sysfs", 15, ""),
		mount("cgroup", "/sys/fs/cgroup", "cgroup", 2097167, ""),
		mount("/var/vcap/data/garden/depot/"+phID+"/etc/hosts", "/etc/hosts", "bind", 20480, ""),
		mount("/var/vcap/data/garden/depot/"+phID+"/etc/resolv.conf", "/etc/resolv.conf", "bind", 20480, ""),
		mount("/var/vcap/packages/healthcheck", "/etc/cf-assets/healthcheck", "bind", 20481, ""),
		mount("/var/vcap/data/rep/shared/garden/instance_identity/"+phID, "/etc/cf-instance-credentials", "bind", 20481, ""),
		mount("/var/vcap/packages/proxy", "/etc/cf-assets/envoy", "bind", 20481, ""),
	}
	var devices []any
	for _, d := range []struct {
		path         string
		major, minor int
	}{{"/dev/null", 1, 3}, {"/dev/random", 1, 8}, {"/dev/full", 1, 7}, {"/dev/tty", 5, 0}, {"/dev/zero", 1, 5}, {"/dev/urandom", 1, 9}, {"/dev/fuse", 10, 229}} {
		devices = append(devices, m{"type": 99, "major": d.major, "minor": d.minor, "permissions": "rwm", "allow": true,
			"path": d.path, "file_mode": 438, "uid": 0, "gid": 0})
	}
	var syscalls []any
	for _, n := range allowedSyscalls {
		syscalls = append(syscalls, m{"name": n, "action": 4, "errno_ret": nil, "args": nil})
	}
	cgroupPaths := m{}
	for _, h := range Hierarchies {
		for _, k := range h.Keys {
			cgroupPaths[k] = "/sys/fs/cgroup/" + h.Dir + "/garden/" + phID
		}
	}
	nsPaths := m{}
	var namespaces []any
	for _, t := range []string{"NEWNS", "NEWUTS", "NEWIPC", "NEWPID", "NEWNET", "NEWUSER"} {
		namespaces = append(namespaces, m{"type": t, "path": ""})
		nsPaths[t] = "/proc/" + phPID + "/ns/" + map[string]string{"NEWNS": "mnt", "NEWUTS": "uts", "NEWIPC": "ipc",
			"NEWPID": "pid", "NEWNET": "net", "NEWUSER": "user"}[t]
	}
	idmap := []any{m{"container_id": 0, "host_id": 4294967294, "size": 1}, m{"container_id": 1, "host_id": 1, "size": 4294967293}}
	state := m{
		"id":                 phID,
		"init_process_pid":   phPID,
		"init_process_start": phStart,
		"created":            "2026-11-30T06:08:20.123456789Z",
		"config": m{
			"no_pivot_root": false, "parent_death_signal": 0, "umask": nil, "readonlyfs": false, "rootPropagation": 0,
			"rootfs": "/var/vcap/data/grootfs/store/unprivileged/images/" + phID + "/rootfs",
			"mounts": mounts, "devices": devices, "mount_label": "", "hostname": phID, "domainname": "",
			"namespaces":   namespaces,
			"capabilities": m{"Bounding": caps, "Effective": caps, "Inheritable": caps, "Permitted": caps, "Ambient": nil},
			"networks":     nil, "routes": nil,
			"cgroups": m{"path": "/garden/" + phID, "scope_prefix": "", "Systemd": false, "devices": devices,
				"memory": CellMemory, "memory_swap": CellMemory, "cpu_shares": cellCPUShares, "pids_limit": cellPids,
				"blkio_weight": 0, "freezer": "", "oom_kill_disable": false, "memory_swappiness": nil},
			"oom_score_adj": 0, "uid_mappings": idmap, "gid_mappings": idmap,
			"mask_paths": []string{"/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
				"/proc/sched_debug", "/proc/scsi", "/sys/firmware"},
			"readonly_paths": []string{"/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
			"sysctl":         nil,
			"seccomp": m{"default_action": 2, "default_errno_ret": 1, "architectures": []string{"amd64", "x86", "x32"},
				"flags": nil, "syscalls": syscalls},
			"no_new_privileges": false,
			"hooks":             m{"createContainer": nil, "poststart": nil, "poststop": nil, "prestart": nil},
			"version":           "1.0.2-dev",
			"labels":            []string{"bundle=/var/vcap/data/garden/depot/" + phID},
			"rootless_euid":     false, "rootless_cgroups": false,
		},
		"rootless":             false,
		"cgroup_paths":         cgroupPaths,
		"namespace_paths":      nsPaths,
		"external_descriptors": []string{"/dev/null", "pipe:[93412]", "pipe:[93413]"},
		"intel_rdt_path":       "",
	}
	b, err := json.Marshal(state)
	if err != nil {
		panic(err) // a literal above: cannot fail
	}
	// Numbers were strings with placeholders: unquote them.
	b = bytes.ReplaceAll(b, []byte(`"`+phPID+`"`), []byte(phPID))
	b = bytes.ReplaceAll(b, []byte(`"`+phStart+`"`), []byte(phStart))
	t := &template{}
	for len(b) > 0 {
		i := bytes.Index(b, []byte("@@"))
		if i < 0 {
			t.parts = append(t.parts, b)
			break
		}
		j := bytes.Index(b[i+2:], []byte("@@")) + i + 4
		t.parts = append(t.parts, b[:i], b[i:j])
		b = b[j:]
	}
	return t
}

func (t *template) render(dst []byte, id string, pid int, start uint64) []byte {
	for _, p := range t.parts {
		switch string(p) {
		case phID:
			dst = append(dst, id...)
		case phPID:
			dst = strconv.AppendInt(dst, int64(pid), 10)
		case phStart:
			dst = strconv.AppendUint(dst, start, 10)
		default:
			dst = append(dst, p...)
		}
	}
	return dst
}

// StateJSON is the state.json Generate writes for container id with init
// pid and its start time (clock ticks after boot), for a caller that lays
// out a cell of its own (cellbench's live cell) and rewrites what differs.
func StateJSON(id string, pid int, start uint64) []byte {
	return stateTemplate().render(nil, id, pid, start)
}
