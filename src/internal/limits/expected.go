package limits

import (
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/runcstate"
)

// Resources are the limits runc recorded in state.json's config.cgroups,
// decoded with the rest of the state (runcstate).
type Resources = runcstate.Resources

// Want is one recorded limit as the kernel would print it in one cgroup
// file, after runc's conversions.
type Want struct {
	Limit      string // how a finding names it: "memory", "cpu weight"
	Controller string // v2 controller or v1 hierarchy key: memory, cpu, io, blkio, pids
	File       string // memory.max
	Value      string // Normalize(File, what runc wrote)
	Default    string // the kernel's value in a new cgroup, normalized
	// AltFile and AltValue are the other file runc may have written
	// instead (io.bfq.weight where BFQ is loaded: fs2/io.go setIo).
	AltFile, AltValue string
	// Optional is set when runc itself tolerates the file's absence
	// (memory.swap.max "max" or "0" without swap accounting: fs2/memory.go).
	Optional bool
}

// Files are every file Expected may name, for readers.
func (w Want) Files() []string {
	if w.AltFile != "" {
		return []string{w.File, w.AltFile}
	}
	return []string{w.File}
}

// Expected is what r asks of the kernel, per file: on cgroup v2
// (unified) as fs2's setters write it, else as v1's fs setters do. A limit
// r does not set yields nothing.
func Expected(unified bool, r Resources) []Want {
	if unified {
		return expectedV2(r)
	}
	return expectedV1(r)
}

func expectedV2(r Resources) []Want {
	var ws []Want
	if r.Memory != 0 {
		ws = append(ws, Want{Limit: "memory", Controller: "memory", File: "memory.max", Value: Normalize("memory.max", numToStr(r.Memory)), Default: "max"})
	}
	if swap, ok := swapV2(r.MemorySwap, r.Memory); ok {
		ws = append(ws, Want{Limit: "swap", Controller: "memory", File: "memory.swap.max", Value: Normalize("memory.swap.max", swap), Default: "max",
			Optional: swap == "max" || swap == "0"})
	}
	if p := r.PidsLimit; p != nil && *p != 0 {
		// 0 is "unset" in runc before the pointer (and "1" after it):
		// never judge what may not have been recorded.
		ws = append(ws, Want{Limit: "pids", Controller: "pids", File: "pids.max", Value: numToStr(*p), Default: "max"})
	}
	if r.CpuWeight != 0 {
		// fs2 writes CpuWeight only; specconv converted the spec's shares.
		ws = append(ws, Want{Limit: "cpu weight", Controller: "cpu", File: "cpu.weight", Value: strconv.FormatUint(r.CpuWeight, 10), Default: "100"})
	}
	if r.CpuQuota != 0 || r.CpuPeriod != 0 {
		quota, period := "max", r.CpuPeriod
		if r.CpuQuota > 0 {
			quota = strconv.FormatInt(r.CpuQuota, 10)
		}
		if period == 0 {
			period = 100000
		}
		ws = append(ws, Want{Limit: "cpu quota", Controller: "cpu", File: "cpu.max", Value: quota + " " + strconv.FormatUint(period, 10), Default: "max 100000"})
	}
	if r.BlkioWeight != 0 {
		ws = append(ws, Want{Limit: "io weight", Controller: "io", File: "io.weight", Value: strconv.FormatUint(blkioToIOWeight(r.BlkioWeight), 10), Default: "100",
			AltFile: "io.bfq.weight", AltValue: strconv.FormatUint(uint64(r.BlkioWeight), 10)})
	}
	return ws
}

func expectedV1(r Resources) []Want {
	var ws []Want
	if r.Memory != 0 {
		ws = append(ws, Want{Limit: "memory", Controller: "memory", File: "memory.limit_in_bytes", Value: Normalize("memory.limit_in_bytes", strconv.FormatInt(r.Memory, 10)), Default: "max"})
	}
	if r.MemorySwap != 0 {
		ws = append(ws, Want{Limit: "swap", Controller: "memory", File: "memory.memsw.limit_in_bytes", Value: Normalize("memory.memsw.limit_in_bytes", strconv.FormatInt(r.MemorySwap, 10)), Default: "max", Optional: true})
	}
	if p := r.PidsLimit; p != nil && *p != 0 {
		ws = append(ws, Want{Limit: "pids", Controller: "pids", File: "pids.max", Value: numToStr(*p), Default: "max"})
	}
	if r.CpuShares != 0 {
		ws = append(ws, Want{Limit: "cpu shares", Controller: "cpu", File: "cpu.shares", Value: strconv.FormatUint(r.CpuShares, 10), Default: "1024"})
	}
	if r.CpuQuota != 0 {
		ws = append(ws, Want{Limit: "cpu quota", Controller: "cpu", File: "cpu.cfs_quota_us", Value: strconv.FormatInt(r.CpuQuota, 10), Default: "-1"})
	}
	if r.CpuPeriod != 0 {
		ws = append(ws, Want{Limit: "cpu period", Controller: "cpu", File: "cpu.cfs_period_us", Value: strconv.FormatUint(r.CpuPeriod, 10), Default: "100000"})
	}
	if r.BlkioWeight != 0 {
		ws = append(ws, Want{Limit: "io weight", Controller: "blkio", File: "blkio.weight", Value: strconv.FormatUint(uint64(r.BlkioWeight), 10), Default: "500",
			AltFile: "blkio.bfq.weight", AltValue: strconv.FormatUint(uint64(r.BlkioWeight), 10)})
	}
	return ws
}

// numToStr is fs2's: -1 is "max".
func numToStr(v int64) string {
	if v == -1 {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

// swapV2 is ConvertMemorySwapToCgroupV2Value and setMemory's choice of what
// to write: ok false where runc writes nothing (unset, or an error runc
// would have refused at create).
func swapV2(memorySwap, memory int64) (string, bool) {
	switch {
	case memory == -1 && memorySwap == 0:
		return "max", true
	case memorySwap == -1:
		return "max", true
	case memorySwap == 0:
		return "", false
	case memory == -1:
		return strconv.FormatInt(memorySwap, 10), true
	case memory <= 0, memorySwap < memory:
		return "", false
	}
	return strconv.FormatInt(memorySwap-memory, 10), true
}

// blkioToIOWeight is ConvertBlkIOToIOWeightValue: [10, 1000] onto [1, 10000].
func blkioToIOWeight(w uint16) uint64 { return 1 + (uint64(w)-10)*9999/990 }

// pageSize is what the kernel rounds memory limits down to on the hosts
// cellguard runs on (x86_64 and arm64 with 4 KiB pages).
const pageSize = 4096

// v1Unlimited is the smallest value v1's memory files print for "no
// limit" (PAGE_COUNTER_MAX pages: 9223372036854771712 with 4 KiB pages).
const v1Unlimited = 1 << 62

// Normalize turns a cgroup file's content (or a value written to it) into
// the form Want compares: trimmed; memory byte counts rounded down to a
// page, as the kernel stores them, and v1's huge "unlimited" as "max"; the
// default line of a weight file ("default 100", then per-device lines) as
// its number.
func Normalize(file, content string) string {
	s := strings.TrimSpace(content)
	switch {
	case strings.HasPrefix(file, "memory."):
		n, err := strconv.ParseInt(s, 10, 64)
		if err == nil && n >= v1Unlimited || err == nil && n == -1 {
			return "max"
		}
		if err == nil && n > 0 {
			return strconv.FormatInt(n/pageSize*pageSize, 10)
		}
	case file == "io.weight" || strings.HasSuffix(file, "bfq.weight"):
		for _, line := range strings.Split(s, "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "default" {
				return f[1]
			}
		}
	}
	return s
}
