package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// uploadType is the body bosh-cli sends for upload-stemcell and
// upload-release; nginx's upload module (bosh-release's director nginx)
// spools it and the director's multipart routes read only the spooled
// file's path.
const uploadType = "application/x-compressed"

// uploadField is the multipart field the director's stemcells and releases
// controllers read (`params[:nginx_upload_path]`, `consumes: :multipart`).
const uploadField = "nginx_upload_path"

// accelPrefix is the internal location the director's resources
// controller names in X-Accel-Redirect (api/controllers/resources_controller.rb:
// File.join('/x_accel_files/', tmp_file)); bosh-release's nginx serves it
// as an alias of /, so the rest is the file's absolute path.
const accelPrefix = "/x_accel_files/"

// front is the director's TLS front: uploads spooled to files, downloads
// the director hands over by X-Accel-Redirect served from its files,
// everything else proxied as it came.
type front struct {
	proxy *httputil.ReverseProxy
	spool string // directory for spooled uploads; the director's job removes each after use
	// accelRoot is the only directory X-Accel-Redirect may name files in
	// (the director's TMPDIR, where get_resource_path writes them).
	accelRoot string
	log       *log.Logger
}

func newFront(backend *url.URL, spool, accelRoot string, logger *log.Logger) *front {
	f := &front{spool: spool, accelRoot: accelRoot, log: logger}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(backend)
			// The director builds redirects (a task's URL) from Host and
			// X-Forwarded-Proto: keep what the client dialed.
			r.Out.Host = r.In.Host
			r.SetXForwarded()
		},
		// Task output and event streams are read as they come.
		FlushInterval: -1,
		ErrorLog:      logger,
		// The director answers a resource download (bosh export-release,
		// bosh logs) with an empty body and X-Accel-Redirect, as nginx
		// expects; without this the client got nothing ("Expected stream
		// to have digest ... but was sha256:e3b0c442...", the empty one).
		ModifyResponse: func(resp *http.Response) error {
			// A refused upload's file goes before the client hears the
			// refusal: no job of the director's will read it, and a client
			// that looks at once must not find it (TestFront did, under load).
			if p, ok := resp.Request.Context().Value(spooledKey{}).(string); ok && resp.StatusCode >= 400 {
				os.Remove(p)
			}
			return f.accelRedirect(resp)
		},
	}
	return f
}

// spooledKey carries an upload's spooled file on the request to the director.
type spooledKey struct{}

// accelRedirect replaces the body of a response that carries
// X-Accel-Redirect with the file it names, which must lie in accelRoot.
func (f *front) accelRedirect(resp *http.Response) error {
	target := resp.Header.Get("X-Accel-Redirect")
	if target == "" {
		return nil
	}
	path, ok := strings.CutPrefix(target, accelPrefix)
	if !ok || f.accelRoot == "" {
		return fmt.Errorf("X-Accel-Redirect %q: not under %s, or no -accel-root", target, accelPrefix)
	}
	path = filepath.Clean("/" + path)
	if rel, err := filepath.Rel(f.accelRoot, path); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("X-Accel-Redirect %q: %s is outside %s", target, path, f.accelRoot)
	}
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("X-Accel-Redirect %q: %w", target, err)
	}
	st, err := file.Stat()
	if err != nil || !st.Mode().IsRegular() {
		file.Close()
		return fmt.Errorf("X-Accel-Redirect %q: not a regular file (%v)", target, err)
	}
	resp.Body.Close()
	resp.Body = file
	resp.ContentLength = st.Size()
	resp.Header.Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	resp.Header.Del("X-Accel-Redirect")
	f.log.Printf("served %s (%d bytes) for X-Accel-Redirect", path, st.Size())
	return nil
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	if isUpload(r) {
		f.serveUpload(rec, r)
	} else {
		f.proxy.ServeHTTP(rec, r)
	}
	f.log.Printf("%s %s %d", r.Method, r.URL.RequestURI(), rec.status)
}

func isUpload(r *http.Request) bool {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return false
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == uploadType
}

// serveUpload spools the body to a file and forwards a multipart form that
// names it, as the upload module does. The director's job deletes the file
// when it has read it; when the director refuses the request, no job runs,
// so the file is removed here (nginx's upload_cleanup does the same).
func (f *front) serveUpload(w *statusRecorder, r *http.Request) {
	path, size, err := spool(f.spool, r.Body)
	if err != nil {
		f.log.Printf("spool upload %s: %v", r.URL.Path, err)
		http.Error(w, "front: spool upload: "+err.Error(), http.StatusInternalServerError)
		return
	}
	body, ctype, err := uploadForm(path)
	if err != nil {
		os.Remove(path)
		http.Error(w, "front: upload form: "+err.Error(), http.StatusInternalServerError)
		return
	}
	f.log.Printf("spooled %d bytes of %s to %s", size, r.URL.Path, path)
	out := r.Clone(context.WithValue(r.Context(), spooledKey{}, path))
	out.Body = io.NopCloser(strings.NewReader(body))
	out.ContentLength = int64(len(body))
	out.Header.Set("Content-Type", ctype)
	out.Header.Del("Content-Length")
	out.Header.Del("Content-Md5")
	f.proxy.ServeHTTP(w, out)
	if w.status >= 400 {
		os.Remove(path) // the proxy's own error (no response came): no job either
	}
}

// spool copies body into a new file under dir and returns its path and size.
func spool(dir string, body io.Reader) (string, int64, error) {
	file, err := os.CreateTemp(dir, "upload-*")
	if err != nil {
		return "", 0, fmt.Errorf("create spool file in %s: %w", dir, err)
	}
	n, err := io.Copy(file, body)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file.Name())
		return "", 0, fmt.Errorf("write spool file %s: %w", file.Name(), err)
	}
	return file.Name(), n, nil
}

// uploadForm is the multipart/form-data body with the one field the
// director reads, and its Content-Type.
func uploadForm(path string) (string, string, error) {
	var b strings.Builder
	mw := multipart.NewWriter(&b)
	if err := mw.WriteField(uploadField, path); err != nil {
		return "", "", fmt.Errorf("write field %s: %w", uploadField, err)
	}
	if err := mw.Close(); err != nil {
		return "", "", fmt.Errorf("close multipart body: %w", err)
	}
	return b.String(), mw.FormDataContentType(), nil
}

// statusRecorder keeps the status code the proxy wrote, for the log and
// the upload's cleanup.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Flush lets the proxy's FlushInterval reach the client.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
