// Command director-front is the test director's API front (director.sh
// starts it; test tooling, never shipped): TLS on the lab address, bodies
// of type application/x-compressed spooled to a file and passed on as the
// multipart field nginx_upload_path, as nginx's upload module does in
// front of bosh-release's director; a response with X-Accel-Redirect
// answered with the file it names (-accel-root), as that nginx's
// /x_accel_files/ location does; every other request proxied as it came. The director itself serves plain http on the lab's loopback.
//
// director_test.go, in this package, brings the whole director up with
// director.sh and drives it with bosh-cli.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "10.244.0.1:25555", "TLS address to serve")
	cert := flag.String("cert", "", "server certificate (PEM)")
	key := flag.String("key", "", "server private key (PEM)")
	backend := flag.String("backend", "http://127.0.0.1:25556", "the director's plain-http address")
	spoolDir := flag.String("spool", "", "directory for spooled uploads")
	accelRoot := flag.String("accel-root", "", "the only directory X-Accel-Redirect may name files in (the director's TMPDIR)")
	flag.Parse()
	if err := run(*listen, *cert, *key, *backend, *spoolDir, *accelRoot); err != nil {
		fmt.Fprintf(os.Stderr, "director-front: error: %v\n", err)
		os.Exit(1)
	}
}

func run(listen, cert, key, backend, spoolDir, accelRoot string) error {
	if cert == "" || key == "" || spoolDir == "" {
		return errors.New("-cert, -key and -spool are required")
	}
	u, err := url.Parse(backend)
	if err != nil {
		return fmt.Errorf("parse backend %q: %w", backend, err)
	}
	logger := log.New(os.Stderr, "director-front: ", log.LstdFlags|log.LUTC)
	srv := &http.Server{
		Addr:              listen,
		Handler:           newFront(u, spoolDir, accelRoot, logger),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          logger,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServeTLS(cert, key) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", listen, err)
	case <-ctx.Done():
	}
	// director.sh down sends SIGTERM; requests in flight get a moment.
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shut down %s: %w", listen, err)
	}
	return nil
}
