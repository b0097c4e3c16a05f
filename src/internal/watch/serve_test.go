package watch

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// certAuthority signs certificates the way cf-deployment's variables do:
// metric_scraper_ca, a server certificate for the job (cellguard_metrics_tls,
// server_auth) and the prom scraper's client certificate
// (prom_scraper_scrape_tls, client_auth). RSA, as CredHub generates them.
type certAuthority struct {
	cert *x509.Certificate
	key  *rsa.PrivateKey
}

func newCA(t *testing.T, cn string) certAuthority {
	t.Helper()
	c, k := signCert(t, nil, cn, true, nil, time.Now().Add(time.Hour))
	return certAuthority{c, k}
}

// issue signs a leaf for cn with the given extended key usage, valid until notAfter.
func (ca certAuthority) issue(t *testing.T, cn string, usage x509.ExtKeyUsage, notAfter time.Time) tls.Certificate {
	t.Helper()
	c, k := signCert(t, &ca, cn, false, []x509.ExtKeyUsage{usage}, notAfter)
	return tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: k, Leaf: c}
}

func signCert(t *testing.T, parent *certAuthority, cn string, isCA bool, usage []x509.ExtKeyUsage, notAfter time.Time) (*x509.Certificate, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter,
		IsCA: isCA, BasicConstraintsValid: true, ExtKeyUsage: usage,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	if isCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		tmpl.DNSNames = []string{cn}
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// writeTLSFiles writes the server's certificate and key and the client CA
// as the job renders them (config/certs/metrics.crt, .key, metrics_ca.crt).
func writeTLSFiles(t *testing.T, srv tls.Certificate, clientCA *x509.Certificate) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	f := TLSFiles{Cert: filepath.Join(dir, "metrics.crt"), Key: filepath.Join(dir, "metrics.key"), CA: filepath.Join(dir, "metrics_ca.crt")}
	key, err := x509.MarshalPKCS8PrivateKey(srv.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	for path, block := range map[string]*pem.Block{
		f.Cert: {Type: "CERTIFICATE", Bytes: srv.Certificate[0]},
		f.Key:  {Type: "PRIVATE KEY", Bytes: key},
		f.CA:   {Type: "CERTIFICATE", Bytes: clientCA.Raw},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runWatch runs the watcher until the test ends.
func runWatch(t *testing.T, fx *fixture) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { fx.w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// /metrics over mutual TLS with CF's policy (tlsconfig's internal-service
// defaults, as go-metric-registry serves every CF job's metrics): a
// scraper with a certificate from metric_scraper_ca gets the metrics over
// TLS 1.3 or 1.2 with CF's ciphers; no certificate, another CA's, TLS 1.1
// or a TLS 1.2 cipher outside the policy is refused in the handshake.
func TestMutualTLS(t *testing.T) {
	scraperCA := newCA(t, "metricScraperCA")
	otherCA := newCA(t, "otherCA")
	later := time.Now().Add(time.Hour)
	files := writeTLSFiles(t, scraperCA.issue(t, "cellguard_metrics", x509.ExtKeyUsageServerAuth, later), scraperCA.cert)
	addr := freeAddr(t)
	fx := newFixture(t, func(c *Config) { c.Listen = addr; c.TLS = &files })
	runWatch(t, fx)
	waitFor(t, func() bool { return testutil.ToFloat64(fx.w.m.ListenerUp) == 1 })

	scraper := scraperCA.issue(t, "prom_scraper", x509.ExtKeyUsageClientAuth, later)
	stranger := otherCA.issue(t, "prom_scraper", x509.ExtKeyUsageClientAuth, later)
	roots := x509.NewCertPool()
	roots.AddCert(scraperCA.cert)
	testCases := []struct {
		name    string
		certs   []tls.Certificate
		version uint16   // the only version the client offers; 0: 1.2 and 1.3
		ciphers []uint16 // TLS 1.2 suites the client offers; nil: Go's
		ok      bool
	}{
		{name: "scraper with a metric_scraper_ca certificate", certs: []tls.Certificate{scraper}, ok: true},
		{name: "scraper over TLS 1.2 with a CF cipher", certs: []tls.Certificate{scraper}, version: tls.VersionTLS12,
			ciphers: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}, ok: true},
		{name: "no client certificate"},
		{name: "certificate from another CA", certs: []tls.Certificate{stranger}},
		{name: "TLS 1.1 client", certs: []tls.Certificate{scraper}, version: tls.VersionTLS11},
		{name: "TLS 1.2 cipher outside CF's policy", certs: []tls.Certificate{scraper}, version: tls.VersionTLS12,
			ciphers: []uint16{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305}},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			conf := &tls.Config{RootCAs: roots, ServerName: "cellguard_metrics", Certificates: tc.certs,
				MinVersion: tc.version, MaxVersion: tc.version, CipherSuites: tc.ciphers}
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: conf, DisableKeepAlives: true}}
			resp, err := c.Get("https://" + addr + "/metrics")
			if err == nil {
				defer resp.Body.Close()
				var b []byte
				if b, err = io.ReadAll(resp.Body); err == nil && !strings.Contains(string(b), "cellguard_scans_total") {
					err = errors.New("no metrics in the answer")
				}
			}
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && err == nil:
				t.Fatal("got the metrics")
			case !tc.ok && !strings.Contains(err.Error(), "tls:"):
				// refused, but not by the handshake (the listener down?)
				t.Fatalf("want a TLS refusal, got: %v", err)
			}
		})
	}
}

// An expired server certificate is refused when watch binds, as a missing
// one is: logged, listener_up 0, retried; never served to scrapers.
func TestExpiredServerCertificateIsNotServed(t *testing.T) {
	ca := newCA(t, "metricScraperCA")
	files := writeTLSFiles(t, ca.issue(t, "cellguard_metrics", x509.ExtKeyUsageServerAuth, time.Now().Add(-time.Hour)), ca.cert)
	addr := freeAddr(t)
	fx := newFixture(t, func(c *Config) { c.Listen = addr; c.TLS = &files })
	runWatch(t, fx)
	waitFor(t, func() bool { return count(fx.messages(), "metrics-listen-failed") > 0 })
	if got := testutil.ToFloat64(fx.w.m.ListenerUp); got != 0 {
		t.Errorf("listener_up = %v with an expired certificate", got)
	}
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s accepts connections with an expired certificate", addr)
	}
}
