package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Duration is a time.Duration written as "30s" (Go's grammar,
// time.ParseDuration) or a number of seconds.
type Duration struct {
	time.Duration
	// written is the JSON as written; empty when the key is absent, null
	// or "" (the default). Validate judges it under its key, so a bad
	// duration does not stop the decoding of the rest of the file.
	written string
	err     error
}

// maxSeconds is the largest number of seconds a time.Duration holds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// UnmarshalJSON keeps what was written and why it is no duration, for
// Validate to report under the key. It fails on nothing: every duration
// in the config is a timeout, an age or a budget, so a negative one is a
// mistake, and a number too large for time.Duration would wrap to one.
func (d *Duration) UnmarshalJSON(b []byte) error {
	*d = Duration{}
	if bytes.Equal(b, []byte("null")) || bytes.Equal(b, []byte(`""`)) {
		return nil
	}
	d.written = string(b)
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		switch {
		case err != nil:
			d.err = err
		case v < 0:
			d.err = errors.New("must not be negative")
		}
		d.Duration = v
		return nil
	}
	var n float64
	if err := json.Unmarshal(b, &n); err != nil {
		d.err = errors.New(`not a string such as "90s" nor a number of seconds`)
		return nil
	}
	if n < 0 || n > float64(maxSeconds) {
		d.err = fmt.Errorf("want 0 to %d seconds", maxSeconds)
		return nil
	}
	d.Duration = time.Duration(n * float64(time.Second))
	return nil
}

// MarshalJSON writes the duration as it was written, so a config written
// back is the one the operator wrote; one set in code as "30s"; none as
// "" (the default).
func (d Duration) MarshalJSON() ([]byte, error) {
	switch {
	case d.written != "":
		return []byte(d.written), nil
	case d.Duration == 0:
		return []byte(`""`), nil
	}
	return json.Marshal(d.String())
}

// durationRule is what a duration key accepts besides Go's grammar.
type durationRule struct{ min, max time.Duration }

// Bounds of drain.budget and validator.budget: from 1s, so the checks can
// run at all, to 1h, far below what an operator waits for (the agent waits
// for a drain and a pre-start forever).
var budgetRule = durationRule{min: time.Second, max: time.Hour}

// Bounds of validator.probe_timeout: a healthy runtime answers --version
// in milliseconds, so below 1s would only make versions unknown; a probe
// is per binary, run one after another, so minutes would spend the
// validation's budget on one binary.
var probeRule = durationRule{min: time.Second, max: 5 * time.Minute}

// anyPositive is every other duration's rule: written, it is above zero
// (an absent one is the default; a written "0s" would hide that).
var anyPositive = durationRule{}

// bounds is the rule in words: "from 1s to 1h" or "above zero".
func (r durationRule) bounds() string {
	if r.max > 0 {
		return fmt.Sprintf("from %s to %s", short(r.min), short(r.max))
	}
	return "above zero"
}

// short is a whole duration as an operator writes it: "1h", not "1h0m0s".
func short(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// judgeDuration: what UnmarshalJSON kept, by the key's rule.
func (ps *problems) judgeDuration(key string, d Duration, r durationRule) {
	value := d.written
	if value == "" {
		if d.Duration == 0 {
			return // absent: the default
		}
		value = quote(d.String()) // set in code (a flag)
	}
	switch {
	case d.err != nil:
		ps.add(key, value, `%v: want Go's form such as "90s" or "1m30s", %s; leave it out for the default`, d.err, r.bounds())
	case d.Duration <= 0, r.min > 0 && d.Duration < r.min, r.max > 0 && d.Duration > r.max:
		ps.add(key, value, "must be %s; leave it out for the default", r.bounds())
	}
}
