package bpfiter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/cloudfoundry/cellguard/src/internal/procfs"
)

// Proc is one process as its /proc/<pid>/stat shows it.
type Proc struct {
	procfs.Stat
	// KThread is a kernel thread: /proc shows its full name (the kthread's
	// full_name), the task keeps 15 bytes of it; read its stat from /proc.
	KThread bool
}

// procRecSize is one record: tgid, ppid, __state, exit_state (u32 each),
// start_boottime (u64), comm (16 bytes), flags (u32) and 4 bytes of
// padding; host byte order.
const procRecSize = 48

// pfKThread is PF_KTHREAD in task_struct.flags.
const pfKThread = 0x00200000

// Procs reads every process (thread group leader) from one BPF task
// iterator: what the validator reads of /proc/<pid>/stat (pid, comm,
// state, ppid, start time), for a cell of 60,000 processes in about 40 ms
// where the reads of their stat files take ten times that. The kernel
// walks its tasks as they are; a process that starts or ends meanwhile
// may be in it or not, as with a listing of /proc.
func Procs(k *Kernel) ([]Proc, error) {
	if err := InitialPIDNS(); err != nil {
		return nil, err
	}
	cache, kern, err := k.Types()
	if err != nil {
		return nil, err
	}
	var o procOffsets
	if err := Offsets(kern, o.fields()); err != nil {
		return nil, err
	}
	// __state is a u32 since Linux 5.14; before it, state was a long.
	stateSize := asm.Word
	if err := Offsets(kern, []Field{At(&o.taskState, "task_struct", 4, "__state")}); err != nil {
		if err := Offsets(kern, []Field{At(&o.taskState, "task_struct", 8, "state")}); err != nil {
			return nil, err
		}
		stateSize = asm.DWord
	}
	// A collection, not a lone program: only a collection takes the cache
	// the attach point is looked up in, instead of reading BTF again.
	coll, err := ebpf.NewCollectionWithOptions(&ebpf.CollectionSpec{
		Programs: map[string]*ebpf.ProgramSpec{"cg_procs": Spec("cg_procs", "task", procsProgram(o, stateSize))},
	}, ebpf.CollectionOptions{Cache: cache, Programs: ebpf.ProgramOptions{KernelTypes: kern}})
	if err != nil {
		return nil, fmt.Errorf("load task iterator: %w", err)
	}
	defer coll.Close()
	b, err := Run(coll.Programs["cg_procs"], "task")
	if err != nil {
		return nil, err
	}
	return parseProcs(b)
}

// procOffsets are what procsProgram reads.
type procOffsets struct {
	ctxMeta, ctxTask, metaSeq                     int16
	taskPID, taskTGID, taskParent, taskState      int16
	taskExitState, taskStart, taskComm, taskFlags int16
}

func (o *procOffsets) fields() []Field {
	return []Field{
		At(&o.ctxMeta, "bpf_iter__task", 8, "meta"),
		At(&o.ctxTask, "bpf_iter__task", 8, "task"),
		At(&o.metaSeq, "bpf_iter_meta", 8, "seq"),
		At(&o.taskPID, "task_struct", 4, "pid"),
		At(&o.taskTGID, "task_struct", 4, "tgid"),
		At(&o.taskParent, "task_struct", 8, "real_parent"),
		At(&o.taskExitState, "task_struct", 4, "exit_state"),
		At(&o.taskStart, "task_struct", 8, "start_boottime"), // Linux 5.5
		At(&o.taskComm, "task_struct", 16, "comm"),
		At(&o.taskFlags, "task_struct", 4, "flags"),
	}
}

// procsProgram is the task iterator, per task t that leads its thread
// group (pid == tgid, as /proc lists them): emit tgid, the real parent's
// tgid (stat's ppid: 0 for one without), __state, exit_state,
// start_boottime, comm and flags; WriteRecord's "exit" ends the others.
// R6 ctx, R8 the task.
func procsProgram(o procOffsets, stateSize asm.Size) asm.Instructions {
	const rec = -procRecSize
	return append(asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R8, asm.R6, o.ctxTask, asm.DWord),
		asm.JEq.Imm(asm.R8, 0, "exit"),
		asm.LoadMem(asm.R1, asm.R8, o.taskPID, asm.Word),
		asm.LoadMem(asm.R2, asm.R8, o.taskTGID, asm.Word),
		asm.JNE.Reg(asm.R1, asm.R2, "exit"),
		asm.StoreMem(asm.R10, rec, asm.R2, asm.Word),

		asm.Mov.Imm(asm.R2, 0),
		asm.LoadMem(asm.R1, asm.R8, o.taskParent, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "ppid"),
		asm.LoadMem(asm.R2, asm.R1, o.taskTGID, asm.Word),
		asm.StoreMem(asm.R10, rec+4, asm.R2, asm.Word).WithSymbol("ppid"),

		asm.LoadMem(asm.R1, asm.R8, o.taskState, stateSize),
		asm.StoreMem(asm.R10, rec+8, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R8, o.taskExitState, asm.Word),
		asm.StoreMem(asm.R10, rec+12, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R8, o.taskStart, asm.DWord),
		asm.StoreMem(asm.R10, rec+16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R8, o.taskFlags, asm.Word),
		asm.StoreMem(asm.R10, rec+40, asm.R1, asm.Word),
		asm.StoreImm(asm.R10, rec+44, 0, asm.Word),
		// bpf_probe_read_kernel(rec+24, 16, &t->comm): zeroed if it fails.
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, rec+24),
		asm.Mov.Imm(asm.R2, 16),
		asm.Mov.Reg(asm.R3, asm.R8),
		asm.Add.Imm(asm.R3, int32(o.taskComm)),
		asm.FnProbeReadKernel.Call(),
	}, WriteRecord(o.ctxMeta, o.metaSeq, rec, procRecSize)...)
}

// nsPerTick converts start_boottime to stat's field 22, clock ticks
// (nsec_to_clock_t, USER_HZ).
const nsPerTick = uint64(time.Second) / procfs.UserHZ

func parseProcs(b []byte) ([]Proc, error) {
	if len(b)%procRecSize != 0 {
		return nil, fmt.Errorf("read task iterator: %d bytes, not whole %d-byte records", len(b), procRecSize)
	}
	out := make([]Proc, 0, len(b)/procRecSize)
	comms := map[string]string{} // a cell runs thousands of processes under a few names
	for ; len(b) > 0; b = b[procRecSize:] {
		name := b[24:40]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		comm, ok := comms[string(name)]
		if !ok {
			comm = strings.Clone(string(name))
			comms[comm] = comm
		}
		out = append(out, Proc{
			Stat: procfs.Stat{
				PID:       int(binary.NativeEndian.Uint32(b)),
				PPID:      int(binary.NativeEndian.Uint32(b[4:])),
				State:     stateLetter(binary.NativeEndian.Uint32(b[8:]), binary.NativeEndian.Uint32(b[12:])),
				StartTime: binary.NativeEndian.Uint64(b[16:]) / nsPerTick,
				Comm:      comm,
			},
			KThread: binary.NativeEndian.Uint32(b[40:])&pfKThread != 0,
		})
	}
	return out, nil
}

// stateLetter is stat's state, as the kernel derives it (task_state_index,
// task_state_array): the lowest bit set of (__state | exit_state) within
// TASK_REPORT picks one of "RSDTtXZPI"; an idle kernel thread (TASK_IDLE)
// is I, a sleeping lock waiter (TASK_RTLOCK_WAIT) D. TestProcsMatchProc
// holds it to /proc's letters.
func stateLetter(state, exitState uint32) byte {
	const (
		taskReport     = 0x7f
		taskIdle       = 0x402
		taskRTLockWait = 0x1000
	)
	s := (state | exitState) & taskReport
	switch state {
	case taskIdle:
		s = taskReport + 1
	case taskRTLockWait:
		s = 2 // TASK_UNINTERRUPTIBLE
	}
	i := 0
	for ; s != 0; s >>= 1 {
		i++
	}
	return "RSDTtXZPI"[i]
}
