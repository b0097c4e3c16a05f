package watch

import "time"

// The siege helper drops idle connections within half a second, so that
// a scraper queued behind 192 of them is answered within seconds.
func init() {
	helperSetup = func() {
		readHeaderTimeout, readTimeout, idleTimeout = 500*time.Millisecond, time.Second, 500*time.Millisecond
	}
}
