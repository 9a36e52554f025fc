package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is the path the console is served under.
const Prefix = "/ops/"

// ContentSecurityPolicy is the Content-Security-Policy of every response:
// scripts, styles, images and API requests from the same origin only, and
// nothing else (no inline code, no plugins, no framing, no form submission).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed static
var static embed.FS

// contentTypes are the types of the console's files, by extension; a file of
// any other extension is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler returns the handler of the console. It expects the full request
// path (it is mounted at Prefix, not behind a prefix-stripping router):
// index.html at /ops/, the other files under /ops/, a redirect from /ops to
// /ops/, and a JSON 404 in the API's error envelope for anything else. Only
// GET and HEAD are allowed. Every response carries ContentSecurityPolicy and
// Cache-Control: no-cache, with an ETag so that revalidation costs a 304.
func Handler() http.Handler {
	assets := load()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")

		p := r.URL.Path
		if p == strings.TrimSuffix(Prefix, "/") {
			if !allowed(w, r) {
				return
			}
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		name, ok := strings.CutPrefix(p, Prefix)
		if !ok {
			notFound(w)
			return
		}
		if name == "" {
			name = "index.html"
		}
		a, ok := assets[name]
		if !ok {
			notFound(w)
			return
		}
		if !allowed(w, r) {
			return
		}
		h.Set("Content-Type", a.contentType)
		h.Set("ETag", a.etag)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
	})
}

// load reads the embedded files into a table by name.
func load() map[string]asset {
	assets := map[string]asset{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return nil
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		assets[strings.TrimPrefix(p, "static/")] = asset{
			body:        body,
			contentType: ct,
			etag:        `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
		}
		return nil
	})
	if err != nil {
		// The files are compiled in: failing to read them is a broken build.
		panic("console: reading embedded files: " + err.Error())
	}
	return assets
}

// allowed answers 405 to methods other than GET and HEAD and reports whether
// the request may go on.
func allowed(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed on this path")
	return false
}

func notFound(w http.ResponseWriter) {
	writeError(w, http.StatusNotFound, "resource_missing", "no such resource")
}

// writeError answers in the API's error envelope.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	// The values are constants of this file: no escaping is needed.
	_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"` + code + `","message":"` + msg + `","param":""}}` + "\n"))
}
