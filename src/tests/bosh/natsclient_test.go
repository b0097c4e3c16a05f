package bosh

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// The director's side of the agent's message bus, for tests that talk to a
// real agent without a director: certificates as director.sh makes them
// (a NATS CA; the server's CN default.nats.bosh-internal, which bosh-agent
// v2.759.0 requires, mbus/nats_handler.go VerifyPeerCertificate, and the
// gateway's IP as SAN; client certificates for the agent and the test) and
// a NATS client that sends the agent a message and reads its reply, as the
// director's agent client does (a request on agent.<id>, the reply on an
// inbox subject).

type pki struct {
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	caPEM []byte
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cellguard test NATS CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &pki{ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for cn (a server's with ips, else a client's)
// and returns it and its key in PEM.
func (p *pki) issue(t *testing.T, cn string, ips ...net.IP) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(ips) > 0 {
		tmpl.IPAddresses, tmpl.DNSNames = ips, []string{cn}
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// natsClient speaks NATS's text protocol (INFO, CONNECT, SUB, PUB, MSG,
// PING/PONG) over TLS with a client certificate: enough for one request at a
// time.
type natsClient struct {
	c   net.Conn
	r   *bufio.Reader
	sid int
}

func dialNATS(nsPath, addr string, cfg *tls.Config) (*natsClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := sdbox.DialNetns(ctx, nsPath, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial nats %s: %w", addr, err)
	}
	_ = raw.SetDeadline(time.Now().Add(30 * time.Second))
	// The server's INFO comes in the clear; then TLS.
	info, err := bufio.NewReader(raw).ReadString('\n')
	if err != nil || !strings.HasPrefix(info, "INFO ") {
		raw.Close()
		return nil, fmt.Errorf("nats %s: want INFO, got %q: %v", addr, info, err)
	}
	tc := tls.Client(raw, cfg)
	n := &natsClient{c: tc, r: bufio.NewReader(tc)}
	if _, err := fmt.Fprintf(tc, "CONNECT {\"verbose\":false,\"pedantic\":false,\"tls_required\":true,\"name\":\"cellguard-qemu-cpi-test\"}\r\nPING\r\n"); err != nil {
		tc.Close()
		return nil, fmt.Errorf("nats %s: connect: %w", addr, err)
	}
	if _, err := n.await(func(line string) bool { return line == "PONG" }); err != nil {
		tc.Close()
		return nil, fmt.Errorf("nats %s: connect: %w", addr, err)
	}
	_ = tc.SetDeadline(time.Time{})
	return n, nil
}

// await reads until match says a line (without its CRLF) is the one; it
// answers the server's PINGs and returns a MSG's payload when match took
// a MSG line.
func (n *natsClient) await(match func(line string) bool) ([]byte, error) {
	for {
		line, err := n.r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "PING":
			if _, err := fmt.Fprintf(n.c, "PONG\r\n"); err != nil {
				return nil, err
			}
			continue
		case strings.HasPrefix(line, "-ERR"):
			return nil, fmt.Errorf("nats: %s", line)
		}
		var payload []byte
		if strings.HasPrefix(line, "MSG ") {
			f := strings.Fields(line)
			size, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				return nil, fmt.Errorf("nats: bad MSG line %q", line)
			}
			payload = make([]byte, size+2)
			if _, err := io.ReadFull(n.r, payload); err != nil {
				return nil, err
			}
			payload = payload[:size]
		}
		if match(line) {
			return payload, nil
		}
	}
}

// request publishes the message body(inbox) on subject, where inbox is a
// fresh subject the reply is read from (the agent replies to the message's
// reply_to, not to NATS's reply subject), and returns the first reply, or an
// error after timeout.
func (n *natsClient) request(subject string, body func(inbox string) []byte, timeout time.Duration) ([]byte, error) {
	n.sid++
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	inbox := "director.cellguard-test." + hex.EncodeToString(b)
	payload := body(inbox)
	_ = n.c.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = n.c.SetDeadline(time.Time{}) }()
	if _, err := fmt.Fprintf(n.c, "SUB %s %d\r\nPUB %s %s %d\r\n%s\r\n", inbox, n.sid, subject, inbox, len(payload), payload); err != nil {
		return nil, err
	}
	defer fmt.Fprintf(n.c, "UNSUB %d\r\n", n.sid)
	return n.await(func(line string) bool { return strings.HasPrefix(line, "MSG "+inbox+" ") })
}

func (n *natsClient) Close() error { return n.c.Close() }
