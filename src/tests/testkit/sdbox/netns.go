package sdbox

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// DialContext connects to address inside the box's network namespace (a
// box has only its own loopback). Cheaper than Exec of a client for tests
// and benchmarks that poll a port in the box.
func (b *Box) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return DialNetns(ctx, fmt.Sprintf("/proc/%d/ns/net", b.InitPID), network, address)
}

// DialNetns connects to address inside the network namespace at nsPath (a
// box's, or a lab's /run/netns/NAME): the socket is made on an OS thread
// that has entered the namespace, and stays there after the thread leaves
// it.
func DialNetns(ctx context.Context, nsPath, network, address string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread is never handed back: it dies with this goroutine, so
		// no other goroutine ever runs in the namespace.
		runtime.LockOSThread()
		ns, err := os.Open(nsPath)
		if err != nil {
			done <- result{err: fmt.Errorf("open netns: %w", err)}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("enter netns %s: %w", nsPath, err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, address)
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

// HTTPClient is an http.Client whose connections are made inside the box
// (DialContext), e.g. to read a /metrics endpoint on the box's 127.0.0.1.
// Each request closes its connection: every call makes a new Transport,
// whose idle keep-alive connection nothing would reuse or close, and watch
// serves at most 64 connections for up to its 30 s idle timeout (1131e5f),
// so BenchmarkWatch's polls every 25 ms held them all by its third round
// and /metrics stopped answering it.
func (b *Box) HTTPClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: b.DialContext, DisableKeepAlives: true}}
}
