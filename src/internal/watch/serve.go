package watch

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"code.cloudfoundry.org/tlsconfig"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
	"golang.org/x/sys/unix"
)

// Backoff bounds for retrying what failed (a bind, a dial).
var (
	RetryMin = 500 * time.Millisecond
	RetryMax = 30 * time.Second
)

// /metrics connections: a scraper sends its request at once and reads the
// answer (a few kB) at once; anything slower or idle longer is dropped, so
// a local user's idle connections hold a slot for seconds, not for ever.
var (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 30 * time.Second
)

// maxConnsCap bounds the connections /metrics serves at once: one or two
// scrapers use one each. More wait in the kernel's backlog, holding none
// of watch's fds.
const maxConnsCap = 64

// maxConns is how many connections /metrics accepts at once: a quarter of
// watch's fd limit at most, so that scans keep the rest whatever is
// connected (1,152 idle connections once took them all, and a scan that
// could not open /proc judged nothing).
func maxConns() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 1
	}
	return int(max(1, min(maxConnsCap, lim.Cur/4)))
}

// serve keeps /metrics up: a port in use or unreadable certificates are
// logged, shown as cellguard_metrics_listener_up 0 (in the textfile) and
// retried with backoff; the scans go on meanwhile.
func (w *Watcher) serve(ctx context.Context) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(w.m.All, promhttp.HandlerOpts{}))
	wait := RetryMin
	for ctx.Err() == nil {
		ln, err := w.listen()
		if err != nil {
			w.m.ListenerUp.Set(0)
			w.log.Error("metrics-listen-failed", err, lager.Data{"address": w.cfg.Listen, "retry_in": wait.String(),
				"hint": "another process holds the port, or the TLS files are missing, unreadable or expired: pick cellguard.watch.listen or fix the files"})
			if !sleep(ctx, wait) {
				return
			}
			wait = min(wait*2, RetryMax)
			continue
		}
		wait = RetryMin
		w.m.ListenerUp.Set(1)
		w.log.Info("metrics-listening", lager.Data{"address": ln.Addr().String(), "tls": w.cfg.TLS != nil, "max_connections": maxConns()})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
			WriteTimeout: writeTimeout, IdleTimeout: idleTimeout,
			// A scraper without a client certificate is the scraper's
			// problem: a debug line, not a line on stderr per attempt.
			ErrorLog: log.New(debugWriter{w.log}, "", 0)}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = srv.Shutdown(sctx)
			cancel()
			return
		case err := <-done:
			w.m.ListenerUp.Set(0)
			w.log.Error("metrics-server-stopped", err, lager.Data{"address": w.cfg.Listen})
		}
	}
}

func (w *Watcher) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", w.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", w.cfg.Listen, err)
	}
	// Capped below TLS: a handshake never finished holds a slot too.
	ln = netutil.LimitListener(ln, maxConns())
	if w.cfg.TLS == nil {
		return ln, nil
	}
	// Read the files on every (re)bind: BOSH renders new ones on deploy.
	conf, err := ServerTLS(*w.cfg.TLS)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return tls.NewListener(ln, conf), nil
}

// ServerTLS is mutual TLS as CF jobs serve metrics to the prom scraper:
// go-metric-registry's WithTLSServer (prometheus.go at 9aea002e) builds
// it with tlsconfig's internal-service defaults (TLS 1.2 or 1.3; on 1.2
// only ECDHE-RSA with AES-GCM, so the key is RSA, as CredHub's are) and a
// client certificate required and verified against CA (metric_scraper_ca).
// tlsconfig also refuses a server certificate that has expired.
func ServerTLS(f TLSFiles) (*tls.Config, error) {
	conf, err := tlsconfig.Build(
		tlsconfig.WithInternalServiceDefaults(),
		tlsconfig.WithIdentityFromFile(f.Cert, f.Key),
	).Server(tlsconfig.WithClientAuthenticationFromFile(f.CA))
	if err != nil {
		return nil, fmt.Errorf("build metrics TLS from %s, %s and %s: %w", f.Cert, f.Key, f.CA, err)
	}
	return conf, nil
}

type debugWriter struct{ l lager.Logger }

func (d debugWriter) Write(p []byte) (int, error) {
	d.l.Debug("metrics-http-error", lager.Data{"error": strings.TrimSpace(string(p))})
	return len(p), nil
}

// sleep waits d or until ctx ends; false means ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
