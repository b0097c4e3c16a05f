package e2e

import "testing"

// TestNormalize: only what varies between runs is replaced; a count, a
// status or a label value is left as written, so the golden files still
// see it change.
func TestNormalize(t *testing.T) {
	metrics := `# HELP cellguard_check_duration_seconds How long a check ran.
cellguard_check_duration_seconds{check="cgroup-integrity",phase="watch"} 0.00186455
cellguard_check_findings{check="cgroup-integrity",phase="watch"} 2
cellguard_last_scan_timestamp_seconds 1.796541361097425e+09
cellguard_validate_timestamp_seconds{phase="pre-start"} 1.796541361e+09
cellguard_scan_duration_seconds_bucket{le="0.005"} 1
cellguard_scan_duration_seconds_sum 0.003628912
cellguard_scan_duration_seconds_count 1
cellguard_scan_cpu_seconds_total 0.006131
cellguard_escaped_processes 1
process_open_fds 12
cellguard_runtime_root_present{root="/tmp/x/run/runc"} 1
`
	want := `# HELP cellguard_check_duration_seconds How long a check ran.
cellguard_check_duration_seconds{check="cgroup-integrity",phase="watch"} <duration>
cellguard_check_findings{check="cgroup-integrity",phase="watch"} 2
cellguard_last_scan_timestamp_seconds <timestamp>
cellguard_validate_timestamp_seconds{phase="pre-start"} <timestamp>
cellguard_scan_duration_seconds_bucket{le="0.005"} <duration>
cellguard_scan_duration_seconds_sum <duration>
cellguard_scan_duration_seconds_count 1
cellguard_scan_cpu_seconds_total <duration>
cellguard_escaped_processes 1
process_open_fds <this process>
cellguard_runtime_root_present{root="<root>/run/runc"} 1
`
	if got := string(normalizeMetrics([]byte(metrics), "/tmp/x")); got != want {
		t.Errorf("normalizeMetrics:\n%s\nwant:\n%s", got, want)
	}
	js := `{"duration_seconds": 0.006972632, "pid": "101", "state": "/tmp/x/run/runc/c1/state.json", "generated_at": "2026-12-06T07:15:46.413767787Z", "count": 2}`
	wantJS := `{"duration_seconds": "<duration>", "pid": "101", "state": "<root>/run/runc/c1/state.json", "generated_at": "<time>", "count": 2}`
	if got := string(normalizeJSON([]byte(js), "/tmp/x")); got != wantJS {
		t.Errorf("normalizeJSON:\n%s\nwant:\n%s", got, wantJS)
	}
}
