package netns

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// TaskFiles lists open files with one BPF iterator over every task's file
// table (task_file, Linux 5.8; bpf_sock_from_file, 5.11): the kernel
// reports each nsfs file and each socket outside its holder's network
// namespace, with the socket's namespace. It replaces both the walk of
// every /proc/<pid>/fd and the pidfd_getfd + SIOCGSKNS per socket, so no
// socket is received and none is re-tagged with cellguard's net_cls
// classid. It needs root (CAP_BPF and CAP_PERFMON), the kernel's BTF and
// cellguard in the initial pid namespace.
type TaskFiles struct{}

var _ FileSource = TaskFiles{}

// Kinds of the iterator's records.
const (
	recSocket = 1
	recNSFS   = 2
)

// recSize is one record: tgid, tid, fd, kind, namespace (u32 each), a
// u32 of padding, the file's inode (u64); host byte order.
const recSize = 32

// nsfsMagic is NSFS_MAGIC, the superblock magic of namespace files.
const nsfsMagic = 0x6e736673

// procPIDInitIno is PROC_PID_INIT_INO, the initial pid namespace's inode:
// the iterator's pids are the initial namespace's, /proc's are the
// reader's.
const procPIDInitIno = 0xEFFFFFFC

// OpenFiles loads the iterator, runs it once and closes it again, so
// nothing of it outlives the call.
func (TaskFiles) OpenFiles() (OpenFiles, error) {
	var out OpenFiles
	if err := initialPIDNS(); err != nil {
		return out, err
	}
	// One cache, so that the kernel's BTF is read and indexed once, for
	// the offsets and for the loader's lookup of the attach point: each
	// costs tens of ms of CPU.
	cache := btf.NewCache()
	kern, err := cache.Kernel()
	if err != nil {
		return out, fmt.Errorf("load kernel BTF: %w", err)
	}
	off, err := iterOffsets(kern)
	if err != nil {
		return out, err
	}
	coll, err := ebpf.NewCollectionWithOptions(&ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"cg_counts": {Name: "cg_counts", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2},
			"cg_netns":  {Name: "cg_netns", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: maxNamespaces},
			"cg_mntns":  {Name: "cg_mntns", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: maxNamespaces},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"cg_task_file": iterSpec("cg_task_file", "task_file", fileProgram(off, "cg_counts")),
			"cg_task":      iterSpec("cg_task", "task", taskProgram(off, "cg_counts", "cg_netns", "cg_mntns")),
		},
	}, ebpf.CollectionOptions{Cache: cache, Programs: ebpf.ProgramOptions{KernelTypes: kern}})
	if err != nil {
		return out, fmt.Errorf("load task_file and task iterators: %w", err)
	}
	defer coll.Close()
	b, err := runIter(coll.Programs["cg_task_file"], "task_file")
	if err != nil {
		return out, err
	}
	if out.Files, err = parseRecords(b); err != nil {
		return out, err
	}
	var n uint64
	if err := coll.Maps["cg_counts"].Lookup(uint32(countSockets), &n); err != nil {
		return out, fmt.Errorf("read socket counter: %w", err)
	}
	out.SocketFDs = int(n)
	// The namespaces tasks are in are a second pass over every thread,
	// made only when this one listed a file: Scan needs them to judge a
	// listed file and stops at none. On a cell without a foreign socket or
	// an nsfs file open, the common one, it is skipped (about a third of
	// the iterators' CPU on cellbench's live 10x cell).
	if len(out.Files) == 0 {
		return out, nil
	}
	// A map that filled up leaves them to /proc (NetNS nil), never
	// half-known.
	if _, err := runIter(coll.Programs["cg_task"], "task"); err != nil {
		return out, err
	}
	if err := coll.Maps["cg_counts"].Lookup(uint32(countFull), &n); err != nil {
		return out, fmt.Errorf("read namespace map failures: %w", err)
	}
	if n == 0 {
		out.NetNS, out.MountNS = map[uint64]bool{}, map[uint64]int{}
		var k, v uint32
		for it := coll.Maps["cg_netns"].Iterate(); it.Next(&k, &v); {
			out.NetNS[uint64(k)] = true
		}
		for it := coll.Maps["cg_mntns"].Iterate(); it.Next(&k, &v); {
			out.MountNS[uint64(k)] = int(v)
		}
	}
	return out, nil
}

// maxNamespaces bounds each namespace map: far more network and mount
// namespaces than a cell's containers make (one or two each); past it the
// scan reads /proc instead.
const maxNamespaces = 16384

// Slots of the cg_counts map.
const (
	countSockets = 0 // socket descriptors the task_file pass saw
	countFull    = 1 // namespaces the task pass could not add to its maps
)

func iterSpec(name, attachTo string, insns asm.Instructions) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{
		Name:         name,
		Type:         ebpf.Tracing,
		AttachType:   ebpf.AttachTraceIter,
		AttachTo:     attachTo,
		Instructions: insns,
		// bpf_seq_write and bpf_sock_from_file are GPL-only helpers, so
		// the kernel loads only a program that declares a GPL-compatible
		// license. These few instructions, written here, are offered as
		// BSD or GPL, as Apache-2.0 projects (Cilium, Tetragon) declare
		// their BPF programs; the Go code that writes them stays Apache-2.0.
		License: "Dual BSD/GPL",
	}
}

// runIter runs the iterator prog once, to its end, and returns what it
// wrote; the link is closed before it returns.
func runIter(prog *ebpf.Program, name string) ([]byte, error) {
	it, err := link.AttachIter(link.IterOptions{Program: prog})
	if err != nil {
		return nil, fmt.Errorf("attach %s iterator: %w", name, err)
	}
	defer it.Close()
	rd, err := it.Open()
	if err != nil {
		return nil, fmt.Errorf("open %s iterator: %w", name, err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read %s iterator: %w", name, err)
	}
	return b, nil
}

// initialPIDNS refuses a reader outside the initial pid namespace, or one
// whose /proc is another namespace's: the pids would not be /proc's.
func initialPIDNS() error {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return fmt.Errorf("read own pid namespace: %w", err)
	}
	if l != "pid:["+strconv.FormatUint(procPIDInitIno, 10)+"]" {
		return fmt.Errorf("cellguard is in %s, not the initial pid namespace: the iterator's pids would not be /proc's", l)
	}
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return fmt.Errorf("/proc is not this pid namespace's (/proc/self is %q, %v)", self, err)
	}
	return nil
}

// parseRecords decodes the iterator's output. A thread with a file table
// of its own (unshare(CLONE_FILES)) is named by its tid, as /proc/<tid>/fd
// names that table.
func parseRecords(b []byte) ([]OpenFile, error) {
	if len(b)%recSize != 0 {
		return nil, fmt.Errorf("read task_file iterator: %d bytes, not whole %d-byte records", len(b), recSize)
	}
	out := make([]OpenFile, 0, len(b)/recSize)
	for ; len(b) > 0; b = b[recSize:] {
		tgid, tid := binary.NativeEndian.Uint32(b[0:]), binary.NativeEndian.Uint32(b[4:])
		f := OpenFile{PID: int(tgid), FD: int(binary.NativeEndian.Uint32(b[8:])),
			NS: uint64(binary.NativeEndian.Uint32(b[16:])), Inode: binary.NativeEndian.Uint64(b[24:])}
		if tid != tgid {
			f.PID = int(tid)
		}
		switch binary.NativeEndian.Uint32(b[12:]) {
		case recSocket:
			f.Kind = "socket"
		case recNSFS:
			f.Kind, f.NS = "nsfs", f.Inode // an nsfs inode is its namespace's
		default:
			return nil, fmt.Errorf("read task_file iterator: record kind %d", binary.NativeEndian.Uint32(b[12:]))
		}
		out = append(out, f)
	}
	return out, nil
}

// offsets are the kernel structures' field offsets the program reads,
// from the running kernel's BTF (the layout differs between builds).
type offsets struct {
	metaSeq, taskTGID, taskPID, taskNSProxy, nsproxyNet, netInum int16
	socketSk, sockNet, fileInode, inodeIno, inodeSb, sbMagic     int16
	ctxMeta, ctxTask, ctxFD, ctxFile                             int16
	taskCtxTask, nsproxyMnt, mntInum                             int16
}

// btfField is one offset to find: a path through named members (anonymous
// structs and unions are searched through) and the size of the last.
type btfField struct {
	dst  *int16
	typ  string
	path []string
	size uint32
}

func iterOffsets(kern *btf.Spec) (offsets, error) {
	var o offsets
	fields := []btfField{
		{&o.ctxMeta, "bpf_iter__task_file", []string{"meta"}, 8},
		{&o.ctxTask, "bpf_iter__task_file", []string{"task"}, 8},
		{&o.ctxFD, "bpf_iter__task_file", []string{"fd"}, 4},
		{&o.ctxFile, "bpf_iter__task_file", []string{"file"}, 8},
		{&o.taskCtxTask, "bpf_iter__task", []string{"task"}, 8},
		{&o.nsproxyMnt, "nsproxy", []string{"mnt_ns"}, 8},
		{&o.mntInum, "mnt_namespace", []string{"ns", "inum"}, 4},
		{&o.metaSeq, "bpf_iter_meta", []string{"seq"}, 8},
		{&o.taskTGID, "task_struct", []string{"tgid"}, 4},
		{&o.taskPID, "task_struct", []string{"pid"}, 4},
		{&o.taskNSProxy, "task_struct", []string{"nsproxy"}, 8},
		{&o.nsproxyNet, "nsproxy", []string{"net_ns"}, 8},
		{&o.netInum, "net", []string{"ns", "inum"}, 4},
		{&o.socketSk, "socket", []string{"sk"}, 8},
		{&o.sockNet, "sock", []string{"__sk_common", "skc_net", "net"}, 8},
		{&o.fileInode, "file", []string{"f_inode"}, 8},
		{&o.inodeIno, "inode", []string{"i_ino"}, 8},
		{&o.inodeSb, "inode", []string{"i_sb"}, 8},
		{&o.sbMagic, "super_block", []string{"s_magic"}, 8},
	}
	for _, f := range fields {
		var s *btf.Struct
		if err := kern.TypeByName(f.typ, &s); err != nil {
			return o, fmt.Errorf("find struct %s in kernel BTF: %w", f.typ, err)
		}
		off, size, err := memberOffset(s, f.path)
		if err != nil {
			return o, fmt.Errorf("find %s.%v in kernel BTF: %w", f.typ, f.path, err)
		}
		if size != f.size || off > 1<<15-1 {
			return o, fmt.Errorf("find %s.%v in kernel BTF: %d bytes at offset %d, want %d bytes within 32 KiB", f.typ, f.path, size, off, f.size)
		}
		*f.dst = int16(off)
	}
	return o, nil
}

// memberOffset is the byte offset and size of path in t.
func memberOffset(t btf.Type, path []string) (uint32, uint32, error) {
	var off uint32
	for _, name := range path {
		m, at, ok := findMember(t, name)
		if !ok {
			return 0, 0, fmt.Errorf("no member %s", name)
		}
		if m.BitfieldSize != 0 {
			return 0, 0, fmt.Errorf("member %s is a bitfield", name)
		}
		off += at
		t = btf.UnderlyingType(m.Type)
	}
	size, err := btf.Sizeof(t)
	if err != nil {
		return 0, 0, fmt.Errorf("size of %v: %w", path, err)
	}
	return off, uint32(size), nil
}

// findMember finds name in a struct or union, looking inside anonymous
// members, and returns its byte offset from t.
func findMember(t btf.Type, name string) (btf.Member, uint32, bool) {
	var members []btf.Member
	switch c := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		members = c.Members
	case *btf.Union:
		members = c.Members
	default:
		return btf.Member{}, 0, false
	}
	for _, m := range members {
		if m.Name == name {
			return m, m.Offset.Bytes(), true
		}
		if m.Name == "" {
			if in, at, ok := findMember(m.Type, name); ok {
				return in, m.Offset.Bytes() + at, true
			}
		}
	}
	return btf.Member{}, 0, false
}

// fileProgram is the task_file iterator, per file f of task t:
//
//	if f is a socket s:  count it; if s's netns != t's netns: emit (socket, s's netns)
//	else if f's superblock is nsfs: emit (nsfs)
//
// Pointers come from BTF-typed loads, which the verifier checks against
// the kernel's types and turns into faulting-safe reads; the record is
// written with bpf_seq_write. R6 ctx, R7 file, R8 task, R9 socket, then
// the socket's namespace.
func fileProgram(o offsets, counts string) asm.Instructions {
	const rec = -recSize // the record on the stack
	const key = rec - 8  // the counter map's key
	prog := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, o.ctxFile, asm.DWord),
		asm.JEq.Imm(asm.R7, 0, "exit"),
		asm.LoadMem(asm.R8, asm.R6, o.ctxTask, asm.DWord),
		asm.JEq.Imm(asm.R8, 0, "exit"),

		asm.Mov.Reg(asm.R1, asm.R7),
		asm.FnSockFromFile.Call(),
		asm.JEq.Imm(asm.R0, 0, "nsfs"),
		asm.Mov.Reg(asm.R9, asm.R0),
	}
	prog = append(prog, countUp(counts, key, countSockets, "counted")...)
	prog = append(prog, asm.Instructions{
		asm.LoadMem(asm.R1, asm.R9, o.socketSk, asm.DWord).WithSymbol("counted"),
		asm.JEq.Imm(asm.R1, 0, "exit"),
		asm.LoadMem(asm.R1, asm.R1, o.sockNet, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "exit"),
		asm.LoadMem(asm.R9, asm.R1, o.netInum, asm.Word),
		asm.Mov.Imm(asm.R2, 0), // a task without nsproxy (exiting) is in no namespace
		asm.LoadMem(asm.R1, asm.R8, o.taskNSProxy, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "compare"),
		asm.LoadMem(asm.R1, asm.R1, o.nsproxyNet, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "compare"),
		asm.LoadMem(asm.R2, asm.R1, o.netInum, asm.Word),
		asm.JEq.Reg(asm.R9, asm.R2, "exit").WithSymbol("compare"),
		asm.StoreImm(asm.R10, rec+12, recSocket, asm.Word),
		asm.StoreMem(asm.R10, rec+16, asm.R9, asm.Word),
		asm.Ja.Label("emit"),

		asm.LoadMem(asm.R1, asm.R7, o.fileInode, asm.DWord).WithSymbol("nsfs"),
		asm.JEq.Imm(asm.R1, 0, "exit"),
		asm.LoadMem(asm.R1, asm.R1, o.inodeSb, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "exit"),
		asm.LoadMem(asm.R1, asm.R1, o.sbMagic, asm.DWord),
		asm.JNE.Imm(asm.R1, nsfsMagic, "exit"),
		asm.StoreImm(asm.R10, rec+12, recNSFS, asm.Word),
		asm.StoreImm(asm.R10, rec+16, 0, asm.Word),

		asm.LoadMem(asm.R1, asm.R8, o.taskTGID, asm.Word).WithSymbol("emit"),
		asm.StoreMem(asm.R10, rec, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R8, o.taskPID, asm.Word),
		asm.StoreMem(asm.R10, rec+4, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R6, o.ctxFD, asm.DWord),
		asm.StoreMem(asm.R10, rec+8, asm.R1, asm.Word),
		asm.StoreImm(asm.R10, rec+20, 0, asm.Word),
		asm.Mov.Imm(asm.R2, 0),
		asm.LoadMem(asm.R1, asm.R7, o.fileInode, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "ino"),
		asm.LoadMem(asm.R2, asm.R1, o.inodeIno, asm.DWord),
		asm.StoreMem(asm.R10, rec+24, asm.R2, asm.DWord).WithSymbol("ino"),
		asm.LoadMem(asm.R1, asm.R6, o.ctxMeta, asm.DWord),
		asm.LoadMem(asm.R1, asm.R1, o.metaSeq, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, rec),
		asm.Mov.Imm(asm.R3, recSize),
		asm.FnSeqWrite.Call(),

		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	}...)
	return prog
}

// taskProgram is the task iterator, per task (every thread) t: t's
// network namespace into netns, and its mount namespace into mntns with
// t's tgid, the first task seen in it; a failed insert (a full map) is
// counted, and the scan then reads /proc instead.
func taskProgram(o offsets, counts, netns, mntns string) asm.Instructions {
	const tgid, netKey, mntKey, key = -4, -8, -12, -16
	prog := asm.Instructions{
		asm.LoadMem(asm.R8, asm.R1, o.taskCtxTask, asm.DWord),
		asm.JEq.Imm(asm.R8, 0, "exit"),
		asm.LoadMem(asm.R9, asm.R8, o.taskNSProxy, asm.DWord),
		asm.JEq.Imm(asm.R9, 0, "exit"), // exiting: /proc shows no namespace either
		asm.LoadMem(asm.R1, asm.R8, o.taskTGID, asm.Word),
		asm.StoreMem(asm.R10, tgid, asm.R1, asm.Word),

		asm.LoadMem(asm.R1, asm.R9, o.nsproxyNet, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "mnt"),
		asm.LoadMem(asm.R1, asm.R1, o.netInum, asm.Word),
		asm.StoreMem(asm.R10, netKey, asm.R1, asm.Word),
	}
	prog = append(prog, mapUpdate(netns, netKey, tgid, ebpf.UpdateAny)...)
	prog = append(prog,
		asm.JSLT.Imm(asm.R0, 0, "full"),

		asm.LoadMem(asm.R1, asm.R9, o.nsproxyMnt, asm.DWord).WithSymbol("mnt"),
		asm.JEq.Imm(asm.R1, 0, "exit"),
		asm.LoadMem(asm.R1, asm.R1, o.mntInum, asm.Word),
		asm.StoreMem(asm.R10, mntKey, asm.R1, asm.Word),
	)
	prog = append(prog, mapUpdate(mntns, mntKey, tgid, ebpf.UpdateNoExist)...)
	prog = append(prog,
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.JEq.Imm(asm.R0, -int32(unix.EEXIST), "exit"),
	)
	full := countUp(counts, key, countFull, "exit")
	full[0] = full[0].WithSymbol("full")
	prog = append(prog, full...)
	return append(prog,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
}

// mapUpdate is bpf_map_update_elem(m, fp+key, fp+val, flags), its result
// in R0.
func mapUpdate(m string, key, val int32, flags ebpf.MapUpdateFlags) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(m),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, key),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, val),
		asm.Mov.Imm(asm.R4, int32(flags)),
		asm.FnMapUpdateElem.Call(),
	}
}

// countUp adds one to counter which of the counts map (its key stored at
// fp+key), then goes on at next; a counter the lookup cannot find is
// skipped.
func countUp(counts string, key int32, which int64, next string) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.R10, int16(key), which, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(counts),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, key),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, next),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
	}
}
