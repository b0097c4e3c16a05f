package snapshot

import "testing"

func TestPIDIndex(t *testing.T) {
	members := func(lists ...[]int) []Members {
		ms := make([]Members, len(lists))
		for i, l := range lists {
			ms[i].Listed = [][]int{l}
			ms[i].index()
		}
		return ms
	}
	testCases := []struct {
		name    string
		members []Members
		dense   bool
		want    map[int]int // pid -> container; absent pids are asked too
		absent  []int
	}{
		{name: "dense, the first container wins", members: members([]int{100, 101, 105}, []int{105, 106}, nil),
			dense: true, want: map[int]int{100: 0, 101: 0, 105: 0, 106: 1}, absent: []int{0, 99, 102, 107, 1 << 30}},
		{name: "sparse falls back to a map", members: members([]int{7}, []int{4_000_000}),
			want: map[int]int{7: 0, 4_000_000: 1}, absent: []int{8, 3_999_999}},
		{name: "nothing listed", members: members(nil, nil), absent: []int{1, 2}},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			x := newPIDIndex(tc.members)
			if (x.dense != nil) != tc.dense {
				t.Fatalf("dense %v, want %v", x.dense != nil, tc.dense)
			}
			for pid, want := range tc.want {
				if got, ok := x.get(pid); !ok || got != want {
					t.Errorf("get(%d) = %d, %v; want %d, true", pid, got, ok, want)
				}
			}
			for _, pid := range tc.absent {
				if _, ok := x.get(pid); ok {
					t.Errorf("get(%d) found a container", pid)
				}
			}
		})
	}
}
