package fleet

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// /metrics over mutual TLS on a cell, with the shipped cf-deployment ops
// files as an operator uses them (add-cellguard-to-diego-cells.yml, then
// cellguard-metrics-tls.yml) on the fleet's cell group named diego-cell
// (diego-cell-ops.yml), and the fleet's settings in shipped-colocated-ops.yml.

// metricsPort is cellguard.watch.listen's default port (127.0.0.1:14875).
const metricsPort = "14875"

// scraperCerts are what CredHub would hold in cf-deployment: the
// metric_scraper_ca, the server certificate cellguard_metrics_tls signed
// by it (RSA, as tlsconfig's internal-service ciphers on TLS 1.2 need), and
// a client certificate of the prom scraper from the same CA. Files in dir.
type scraperCerts struct {
	CA, ClientCert, ClientKey string // PEM files on the host
	Vars                      string // bosh-cli -l file: cellguard_metrics_tls.{ca,certificate,private_key}
}

func makeScraperCerts(dir string) (scraperCerts, error) {
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return scraperCerts{}, fmt.Errorf("metric_scraper_ca key: %w", err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "metric_scraper_ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return scraperCerts{}, fmt.Errorf("metric_scraper_ca: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string) (certPEM, keyPEM []byte, err error) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, nil, fmt.Errorf("%s key: %w", cn, err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", cn, err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), nil
	}
	// As cellguard-metrics-tls.yml's variable asks CredHub for it.
	srvCert, srvKey, err := issue(2, "cellguard_metrics", x509.ExtKeyUsageServerAuth, []string{"cellguard_metrics"})
	if err != nil {
		return scraperCerts{}, err
	}
	cliCert, cliKey, err := issue(3, "prom_scraper", x509.ExtKeyUsageClientAuth, nil)
	if err != nil {
		return scraperCerts{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	c := scraperCerts{CA: filepath.Join(dir, "metric_scraper_ca.crt"), ClientCert: filepath.Join(dir, "prom_scraper.crt"),
		ClientKey: filepath.Join(dir, "prom_scraper.key"), Vars: filepath.Join(dir, "cellguard_metrics_tls.yml")}
	vars, _ := json.Marshal(map[string]map[string]string{"cellguard_metrics_tls": {
		"ca": string(caPEM), "certificate": string(srvCert), "private_key": string(srvKey)}})
	for path, b := range map[string][]byte{c.CA: caPEM, c.ClientCert: cliCert, c.ClientKey: cliKey, c.Vars: vars} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return scraperCerts{}, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return c, nil
}

// scrape is curl in the VM's network namespace (the prom scraper's view
// from the VM: /metrics on loopback) of https://cellguard_metrics:14875/metrics,
// verifying the server against the CA, with the client certificate when
// withClient. It returns the body, or curl's error line.
func scrape(ctx context.Context, vm VM, c scraperCerts, withClient bool) (string, error) {
	args := []string{"-t", vm.InitPID, "-n", "curl", "-sS", "--fail", "--max-time", "5",
		"--resolve", "cellguard_metrics:" + metricsPort + ":127.0.0.1", "--cacert", c.CA}
	if withClient {
		args = append(args, "--cert", c.ClientCert, "--key", c.ClientKey)
	}
	out, err := exec.CommandContext(ctx, "nsenter", append(args, "https://cellguard_metrics:"+metricsPort+"/metrics")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s (%w)", strings.TrimSpace(lastLine(string(out))), err)
	}
	return string(out), nil
}

// metricsTLSScenario: the lane's cell deployed with the shipped ops files
// (cellguard colocated on diego-cell, /metrics over mutual TLS) and
// certificates the test made; a client with the scraper's certificate
// reads /metrics in the VM, one without a client certificate is refused,
// and so is plain HTTP.
func (f *fleet) metricsTLSScenario(ctx context.Context) Scenario {
	var certs scraperCerts
	return Scenario{Name: "metrics scraped over TLS", Steps: []Step{
		{Name: "bosh deploy with add-cellguard-to-diego-cells.yml and cellguard-metrics-tls.yml (shipped), runc " + runcClean,
			Expects: []string{"tls-deploy-succeeds", "tls-scheme-https"},
			Do: func(r *Record) error {
				dir := filepath.Join(f.work, "metrics-tls-"+f.dep)
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return err
				}
				var err error
				if certs, err = makeScraperCerts(dir); err != nil {
					return err
				}
				r.Say("   certificates made by the test: metric_scraper_ca, cellguard_metrics (server_auth, from it), prom_scraper (client_auth, from it), in %s", dir)
				if _, err := f.runcRelease(ctx, r, runcClean); err != nil {
					return err
				}
				urlVars, err := f.releaseURLVars()
				if err != nil {
					return err
				}
				vars := append([]string{"-v", "runc_version=" + runcClean, "-l", certs.Vars}, urlVars...)
				res, err := f.deployVars(ctx, vars, fleetRuncOps, "src/tests/fleet/manifests/diego-cell-ops.yml",
					"manifests/operations/add-cellguard-to-diego-cells.yml",
					"manifests/operations/cellguard-metrics-tls.yml",
					"src/tests/fleet/manifests/shipped-colocated-ops.yml")
				if err != nil {
					return err
				}
				sayTask(r, "bosh deploy", res)
				r.Expect("tls-deploy-succeeds", res.ExitCode == 0, "bosh deploy exited %d", res.ExitCode)
				if res.ExitCode != 0 {
					return fmt.Errorf("bosh deploy exited %d", res.ExitCode)
				}
				f.storeRunc(ctx, r, runcClean)
				vm, err := f.diegoCell()
				if err != nil {
					return err
				}
				cfg, _ := vm.Exec(ctx, "cat", "/var/vcap/jobs/cellguard/config/prom_scraper_config.yml")
				r.Say("   %s: prom_scraper_config.yml: %s", vm.Name, strings.Join(strings.Fields(cfg), " "))
				// The template writes server_name as a JSON string (run 3
				// read `server_name: "cellguard_metrics"`).
				r.Expect("tls-scheme-https", strings.Contains(cfg, "scheme: https") && strings.Contains(cfg, `server_name: "cellguard_metrics"`),
					"the job tells the prom scraper scheme https and server_name cellguard_metrics")
				return nil
			}},
		{Name: "scrape /metrics in the VM: with the prom scraper's client certificate, without one, and over plain HTTP",
			Expects: []string{"tls-scraped", "tls-no-client-cert-refused", "tls-plain-http-refused"},
			Do: func(r *Record) error {
				vm, err := f.diegoCell()
				if err != nil {
					return err
				}
				// watch starts under monit after the deploy: up to a minute.
				var body string
				t0 := time.Now()
				for time.Since(t0) < time.Minute && ctx.Err() == nil {
					if body, err = scrape(ctx, vm, certs, true); err == nil {
						break
					}
					time.Sleep(time.Second)
				}
				lines := linesWith(body, "cellguard_escaped_processes", "cellguard_scans_total")
				for _, l := range lines {
					r.Say("      %s", l)
				}
				r.Expect("tls-scraped", err == nil && len(lines) > 0, "curl --cert prom_scraper.crt https://cellguard_metrics:%s/metrics in %s: %d bytes, %d cellguard lines (error: %v)",
					metricsPort, vm.Name, len(body), len(lines), err)
				_, noCert := scrape(ctx, vm, certs, false)
				r.Expect("tls-no-client-cert-refused", noCert != nil, "without a client certificate: %v", noCert)
				out, perr := exec.CommandContext(ctx, "nsenter", "-t", vm.InitPID, "-n", "curl", "-sS", "--max-time", "5",
					"http://127.0.0.1:"+metricsPort+"/metrics").CombinedOutput()
				plain := strings.TrimSpace(string(out))
				r.Expect("tls-plain-http-refused", !strings.Contains(plain, "cellguard_") && (perr != nil || strings.Contains(plain, "HTTPS")),
					"plain http://127.0.0.1:%s/metrics: %q (%v)", metricsPort, firstLine(plain), perr)
				return nil
			}},
	}}
}

// diegoCell is the lane's one VM (its diego-cell).
func (f *fleet) diegoCell() (VM, error) {
	vms, err := f.laneVMs()
	if err != nil {
		return VM{}, err
	}
	for _, vm := range vms {
		if vm.Job == "diego-cell" {
			return vm, nil
		}
	}
	return VM{}, fmt.Errorf("no diego-cell VM of %s in the CPI's state", f.dep)
}
