package limits

import (
	"strings"
	"testing"
)

func TestExpected(t *testing.T) {
	p100, p0, pMax := int64(100), int64(0), int64(-1)
	testCases := []struct {
		name    string
		unified bool
		r       Resources
		want    string // file=value of each Want, in order
	}{
		{"nothing recorded", true, Resources{}, ""},
		{"v2: what runc spec's limits become", true,
			Resources{Memory: 128 << 20, MemorySwap: 192 << 20, PidsLimit: &p100, CpuShares: 512, CpuWeight: 59, CpuQuota: 50000, CpuPeriod: 100000, BlkioWeight: 300},
			"memory.max=134217728 memory.swap.max=67108864 pids.max=100 cpu.weight=59 cpu.max=50000_100000 io.weight=2930"},
		{"v2: shares without cpu_weight are not written by fs2", true, Resources{CpuShares: 512}, ""},
		{"v2: unlimited memory also unlimits swap", true, Resources{Memory: -1}, "memory.max=max memory.swap.max=max"},
		{"v2: swap equal to memory disables it", true, Resources{Memory: 1 << 30, MemorySwap: 1 << 30}, "memory.max=1073741824 memory.swap.max=0"},
		{"v2: swap without memory is refused by runc", true, Resources{MemorySwap: 1 << 30}, ""},
		{"v2: pids 0 may be unset (old runc)", true, Resources{PidsLimit: &p0}, ""},
		{"v2: pids -1 is max", true, Resources{PidsLimit: &pMax}, "pids.max=max"},
		{"v2: a period alone", true, Resources{CpuPeriod: 50000}, "cpu.max=max_50000"},
		{"v1", false, Resources{Memory: 1 << 30, MemorySwap: 2 << 30, CpuShares: 512, CpuWeight: 59, CpuQuota: 50000, CpuPeriod: 100000, BlkioWeight: 300, PidsLimit: &p100},
			"memory.limit_in_bytes=1073741824 memory.memsw.limit_in_bytes=2147483648 pids.max=100 cpu.shares=512 cpu.cfs_quota_us=50000 cpu.cfs_period_us=100000 blkio.weight=300"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, w := range Expected(tc.unified, tc.r) {
				got = append(got, w.File+"="+strings.ReplaceAll(w.Value, " ", "_"))
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("Expected = %q, want %q", s, tc.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ file, in, want string }{
		{"memory.max", "134217728\n", "134217728"},
		{"memory.max", "100000", "98304"},
		{"memory.max", "max\n", "max"},
		{"memory.limit_in_bytes", "9223372036854771712\n", "max"},
		{"io.weight", "default 100\n8:0 200\n", "100"},
		{"io.bfq.weight", "default 300\n", "300"},
		{"io.bfq.weight", "300\n", "300"},
		{"cpu.max", "max 100000\n", "max 100000"},
	} {
		if got := Normalize(tc.file, tc.in); got != tc.want {
			t.Errorf("Normalize(%q, %q) = %q, want %q", tc.file, tc.in, got, tc.want)
		}
	}
}
