package fleetsummary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Instance is one instance's errand result as bosh-cli printed it.
type Instance struct {
	Name     string `json:"instance"` // group/id
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"-"`
	Stderr   string `json:"-"`
}

// ErrNoErrandTable means the input holds no run-errand result table.
var ErrNoErrandTable = errors.New("no bosh run-errand result table")

// ErrNotJSON means the input is not bosh-cli's --json document: its
// terminal and pipe tables print each instance's streams as free text,
// where nothing tells cellguard's lines from a tenant's.
var ErrNotJSON = errors.New("not bosh --json output")

// ParseErrand reads `bosh --json run-errand`'s document, and nothing else.
func ParseErrand(b []byte) ([]Instance, error) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil, ErrNoErrandTable
	}
	if t[0] != '{' {
		return nil, ErrNotJSON
	}
	return parseJSON(t)
}

// parseJSON reads `bosh --json run-errand`: ui/json_ui.go's document, whose
// errand table (cmd/run_errand.go) has the keys instance, exit_code,
// stdout and stderr.
func parseJSON(b []byte) ([]Instance, error) {
	var doc struct {
		Tables []struct {
			Content string
			Rows    []map[string]string
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parse bosh --json output: %w", err)
	}
	for _, t := range doc.Tables {
		if t.Content != "errand(s)" {
			continue
		}
		var out []Instance
		for _, r := range t.Rows {
			code, err := strconv.Atoi(r["exit_code"])
			if err != nil {
				return nil, fmt.Errorf("parse exit code of %s: %w", r["instance"], err)
			}
			out = append(out, Instance{Name: r["instance"], ExitCode: code, Stdout: r["stdout"], Stderr: r["stderr"]})
		}
		return out, nil
	}
	return nil, ErrNoErrandTable
}
