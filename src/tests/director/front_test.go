package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// backendSeen is what the stand-in director received.
type backendSeen struct {
	path, query, ctype, field, body, host, proto string
	spooled                                      string // the spooled file's content when field names one
}

// TestFront drives the front with real HTTP against a stand-in director and
// checks what the director would see: the multipart field for uploads (as
// nginx's upload module sends it), the request as it came otherwise.
func TestFront(t *testing.T) {
	testCases := []struct {
		name       string
		method     string
		ctype      string
		body       string
		status     int // what the stand-in director answers
		wantField  bool
		wantSpool  int // files left in the spool directory afterwards
		wantCtype  string
		wantBody   string
		wantStatus int
	}{
		{name: "stemcell upload is spooled and named", method: "POST", ctype: "application/x-compressed",
			body: "stemcell tarball bytes", status: 302, wantField: true, wantSpool: 1, wantStatus: 302},
		{name: "refused upload leaves no spooled file", method: "POST", ctype: "application/x-compressed",
			body: "release tarball bytes", status: 401, wantField: true, wantSpool: 0, wantStatus: 401},
		{name: "json body passes as it came", method: "POST", ctype: "application/json",
			body: `{"location":"https://example/stemcell.tgz"}`, status: 302, wantCtype: "application/json",
			wantBody: `{"location":"https://example/stemcell.tgz"}`, wantStatus: 302},
		{name: "yaml config passes as it came", method: "POST", ctype: "text/yaml",
			body: "azs: []\n", status: 201, wantCtype: "text/yaml", wantBody: "azs: []\n", wantStatus: 201},
		{name: "get passes", method: "GET", status: 200, wantStatus: 200},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			spoolDir := t.TempDir()
			var seen backendSeen
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = backendSeen{path: r.URL.Path, query: r.URL.RawQuery, ctype: r.Header.Get("Content-Type"),
					host: r.Host, proto: r.Header.Get("X-Forwarded-Proto")}
				if strings.HasPrefix(seen.ctype, "multipart/form-data") {
					seen.field = r.FormValue(uploadField)
					if b, err := os.ReadFile(seen.field); err == nil {
						seen.spooled = string(b)
					}
				} else {
					b, _ := io.ReadAll(r.Body)
					seen.body = string(b)
				}
				w.WriteHeader(tc.status)
			}))
			defer backend.Close()
			u, err := url.Parse(backend.URL)
			if err != nil {
				t.Fatal(err)
			}
			fr := httptest.NewTLSServer(newFront(u, spoolDir, "", log.New(io.Discard, "", 0)))
			defer fr.Close()
			client := fr.Client()
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

			req, err := http.NewRequest(tc.method, fr.URL+"/stemcells?fix=true", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("request through the front: %v", err)
			}
			resp.Body.Close()

			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if seen.path != "/stemcells" || seen.query != "fix=true" {
				t.Errorf("director saw %s?%s, want /stemcells?fix=true", seen.path, seen.query)
			}
			if want := strings.TrimPrefix(fr.URL, "https://"); seen.host != want || seen.proto != "https" {
				t.Errorf("director saw Host %q X-Forwarded-Proto %q, want %q https (it builds task URLs from them)", seen.host, seen.proto, want)
			}
			if tc.wantField {
				if filepath.Dir(seen.field) != spoolDir {
					t.Errorf("%s = %q, want a file in %s", uploadField, seen.field, spoolDir)
				}
				if seen.spooled != tc.body {
					t.Errorf("spooled file held %q, want the body %q", seen.spooled, tc.body)
				}
			} else {
				if seen.ctype != tc.wantCtype || seen.body != tc.wantBody {
					t.Errorf("director saw %q %q, want %q %q", seen.ctype, seen.body, tc.wantCtype, tc.wantBody)
				}
			}
			left, err := os.ReadDir(spoolDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != tc.wantSpool {
				t.Errorf("%d files left in the spool directory, want %d", len(left), tc.wantSpool)
			}
		})
	}
}

// TestFrontAccelRedirect: a download the director hands over by
// X-Accel-Redirect (its resources controller, for export-release and bosh
// logs) reaches the client with the file's bytes; a path outside the
// director's TMPDIR is refused, not served.
func TestFrontAccelRedirect(t *testing.T) {
	root := t.TempDir()
	blob := filepath.Join(root, "resource-1")
	if err := os.WriteFile(blob, []byte("compiled release bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("not for the client"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, target string
		wantStatus   int
		wantBody     string
	}{
		{"the director's resource", "/x_accel_files" + blob, 200, "compiled release bytes"},
		{"a path outside its TMPDIR", "/x_accel_files" + outside, http.StatusBadGateway, ""},
		{"a climb out of it", "/x_accel_files" + root + "/../" + filepath.Base(filepath.Dir(outside)) + "/secret", http.StatusBadGateway, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-gzip")
				w.Header().Set("X-Accel-Redirect", tc.target)
				w.WriteHeader(200)
			}))
			defer backend.Close()
			u, _ := url.Parse(backend.URL)
			fr := httptest.NewTLSServer(newFront(u, t.TempDir(), root, log.New(io.Discard, "", 0)))
			defer fr.Close()
			resp, err := fr.Client().Get(fr.URL + "/resources/abc")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || (tc.wantStatus == 200 && string(b) != tc.wantBody) || strings.Contains(string(b), "not for the client") {
				t.Errorf("GET through the front: %d %q; want %d %q", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
			if resp.Header.Get("X-Accel-Redirect") != "" {
				t.Errorf("the client saw X-Accel-Redirect %q", resp.Header.Get("X-Accel-Redirect"))
			}
		})
	}
}
