package netns

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/internal/bpfiter"
)

// TaskFiles lists open files with one BPF iterator over every task's file
// table (task_file, Linux 5.8; bpf_sock_from_file, 5.11): the kernel
// reports each nsfs file and each socket outside its holder's network
// namespace, with the socket's namespace. It replaces both the walk of
// every /proc/<pid>/fd and the pidfd_getfd + SIOCGSKNS per socket, so no
// socket is received and none is re-tagged with cellguard's net_cls
// classid. It needs root (CAP_BPF and CAP_PERFMON), the kernel's BTF and
// cellguard in the initial pid namespace.
type TaskFiles struct {
	// Kernel is the kernel's BTF, shared with the run's other iterators;
	// nil reads it for this listing alone.
	Kernel *bpfiter.Kernel
}

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

// OpenFiles loads the iterator, runs it once and closes it again, so
// nothing of it outlives the call.
func (t TaskFiles) OpenFiles() (OpenFiles, error) {
	var out OpenFiles
	if err := bpfiter.InitialPIDNS(); err != nil {
		return out, err
	}
	// One cache, so that the kernel's BTF is read and indexed once, for
	// the offsets and for the loader's lookup of the attach point: each
	// costs tens of ms of CPU.
	k := t.Kernel
	if k == nil {
		k = &bpfiter.Kernel{}
	}
	cache, kern, err := k.Types()
	if err != nil {
		return out, err
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
			"cg_task_file": bpfiter.Spec("cg_task_file", "task_file", fileProgram(off, "cg_counts")),
			"cg_task":      bpfiter.Spec("cg_task", "task", taskProgram(off, "cg_counts", "cg_netns", "cg_mntns")),
		},
	}, ebpf.CollectionOptions{Cache: cache, Programs: ebpf.ProgramOptions{KernelTypes: kern}})
	if err != nil {
		return out, fmt.Errorf("load task_file and task iterators: %w", err)
	}
	defer coll.Close()
	b, err := bpfiter.Run(coll.Programs["cg_task_file"], "task_file")
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
	if _, err := bpfiter.Run(coll.Programs["cg_task"], "task"); err != nil {
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

func iterOffsets(kern *btf.Spec) (offsets, error) {
	var o offsets
	fields := []bpfiter.Field{
		bpfiter.At(&o.ctxMeta, "bpf_iter__task_file", 8, "meta"),
		bpfiter.At(&o.ctxTask, "bpf_iter__task_file", 8, "task"),
		bpfiter.At(&o.ctxFD, "bpf_iter__task_file", 4, "fd"),
		bpfiter.At(&o.ctxFile, "bpf_iter__task_file", 8, "file"),
		bpfiter.At(&o.taskCtxTask, "bpf_iter__task", 8, "task"),
		bpfiter.At(&o.nsproxyMnt, "nsproxy", 8, "mnt_ns"),
		bpfiter.At(&o.mntInum, "mnt_namespace", 4, "ns", "inum"),
		bpfiter.At(&o.metaSeq, "bpf_iter_meta", 8, "seq"),
		bpfiter.At(&o.taskTGID, "task_struct", 4, "tgid"),
		bpfiter.At(&o.taskPID, "task_struct", 4, "pid"),
		bpfiter.At(&o.taskNSProxy, "task_struct", 8, "nsproxy"),
		bpfiter.At(&o.nsproxyNet, "nsproxy", 8, "net_ns"),
		bpfiter.At(&o.netInum, "net", 4, "ns", "inum"),
		bpfiter.At(&o.socketSk, "socket", 8, "sk"),
		bpfiter.At(&o.sockNet, "sock", 8, "__sk_common", "skc_net", "net"),
		bpfiter.At(&o.fileInode, "file", 8, "f_inode"),
		bpfiter.At(&o.inodeIno, "inode", 8, "i_ino"),
		bpfiter.At(&o.inodeSb, "inode", 8, "i_sb"),
		bpfiter.At(&o.sbMagic, "super_block", 8, "s_magic"),
	}
	return o, bpfiter.Offsets(kern, fields)
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
	}...)
	return append(prog, bpfiter.WriteRecord(o.ctxMeta, o.metaSeq, rec, recSize)...)
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
