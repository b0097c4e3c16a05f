package bpfiter

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
)

// Kernel is the running kernel's BTF, read once and shared by the
// iterators of one run: reading and indexing it costs tens of ms of CPU
// (13-20 ms to load /sys/kernel/btf/vmlinux, 5-13 to index it here). The
// zero value is ready; drop it with the run, so that a long-lived caller
// (watch) does not keep the types.
type Kernel struct {
	once  sync.Once
	cache *btf.Cache
	spec  *btf.Spec
	err   error
}

// Types returns the kernel's BTF and the cache to load programs with.
func (k *Kernel) Types() (*btf.Cache, *btf.Spec, error) {
	k.once.Do(func() {
		k.cache = btf.NewCache()
		if k.spec, k.err = k.cache.Kernel(); k.err != nil {
			k.err = fmt.Errorf("load kernel BTF: %w", k.err)
		}
	})
	return k.cache, k.spec, k.err
}

// Spec is a BPF iterator program attached to attachTo ("task", "task_file").
func Spec(name, attachTo string, insns asm.Instructions) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{
		Name:         name,
		Type:         ebpf.Tracing,
		AttachType:   ebpf.AttachTraceIter,
		AttachTo:     attachTo,
		Instructions: insns,
		// bpf_seq_write, bpf_probe_read_kernel and bpf_sock_from_file are
		// GPL-only helpers, so the kernel loads only a program that
		// declares a GPL-compatible license. These few instructions,
		// written here, are offered as BSD or GPL, as Apache-2.0 projects
		// (Cilium, Tetragon) declare their BPF programs; the Go code that
		// writes them stays Apache-2.0.
		License: "Dual BSD/GPL",
	}
}

// Run runs the iterator prog once, to its end, and returns what it wrote;
// the link is closed before it returns.
func Run(prog *ebpf.Program, name string) ([]byte, error) {
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

// WriteRecord ends an iterator program: bpf_seq_write of the size bytes
// at fp+rec to the iterator's seq_file (ctx at R6, the context's meta and
// the meta's seq at ctxMeta and metaSeq), then return 0. Its first
// instruction may be labelled.
func WriteRecord(ctxMeta, metaSeq int16, rec, size int32) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R1, asm.R6, ctxMeta, asm.DWord),
		asm.LoadMem(asm.R1, asm.R1, metaSeq, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, rec),
		asm.Mov.Imm(asm.R3, size),
		asm.FnSeqWrite.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	}
}

// procPIDInitIno is PROC_PID_INIT_INO, the initial pid namespace's inode:
// an iterator's pids are the initial namespace's, /proc's are the
// reader's.
const procPIDInitIno = 0xEFFFFFFC

// InitialPIDNS refuses a reader outside the initial pid namespace, or one
// whose /proc is another namespace's: the pids would not be /proc's.
func InitialPIDNS() error {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return fmt.Errorf("read own pid namespace: %w", err)
	}
	if l != "pid:["+strconv.FormatUint(procPIDInitIno, 10)+"]" {
		return fmt.Errorf("cellguard is in %s, not the initial pid namespace: an iterator's pids would not be /proc's", l)
	}
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return fmt.Errorf("/proc is not this pid namespace's (/proc/self is %q, %v)", self, err)
	}
	return nil
}

// Field is one offset to find in the kernel's BTF: a path through named
// members of struct Type (anonymous structs and unions are searched
// through) and the size the program reads there.
type Field struct {
	Dst  *int16
	Type string
	Path []string
	Size uint32
}

// At is the Field at path in struct typ, size bytes, stored to dst.
func At(dst *int16, typ string, size uint32, path ...string) Field {
	return Field{Dst: dst, Type: typ, Path: path, Size: size}
}

// Offsets sets each field's Dst, or says which the kernel does not have.
func Offsets(kern *btf.Spec, fields []Field) error {
	for _, f := range fields {
		var s *btf.Struct
		if err := kern.TypeByName(f.Type, &s); err != nil {
			return fmt.Errorf("find struct %s in kernel BTF: %w", f.Type, err)
		}
		off, size, err := memberOffset(s, f.Path)
		if err != nil {
			return fmt.Errorf("find %s.%v in kernel BTF: %w", f.Type, f.Path, err)
		}
		if size != f.Size || off > 1<<15-1 {
			return fmt.Errorf("find %s.%v in kernel BTF: %d bytes at offset %d, want %d bytes within 32 KiB", f.Type, f.Path, size, off, f.Size)
		}
		*f.Dst = int16(off)
	}
	return nil
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
