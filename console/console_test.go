package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/paygate/paygate/reconcile"
)

// setup serves Handler on a test server and returns a GET/HEAD/POST helper.
func setup(t *testing.T) func(method, path string, header map[string]string) (*http.Response, string) {
	t.Helper()
	srv := httptest.NewServer(Handler())
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(method, path string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, string(body)
	}
}

func checkCommonHeaders(t *testing.T, res *http.Response) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy": ContentSecurityPolicy,
		"Cache-Control":           "no-cache",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s: got %q, want %q", k, got, want)
		}
	}
}

func TestHandlerServesFiles(t *testing.T) {
	t.Parallel()
	get := setup(t)
	tests := []struct {
		path, contentType, contains string
	}{
		{"/ops/", "text/html; charset=utf-8", `<script type="module" src="app.js"></script>`},
		{"/ops/index.html", "text/html; charset=utf-8", "<title>"},
		{"/ops/app.js", "text/javascript; charset=utf-8", "function render()"},
		{"/ops/api.js", "text/javascript; charset=utf-8", "sessionStorage"},
		{"/ops/dom.js", "text/javascript; charset=utf-8", "export function money"},
		{"/ops/review.js", "text/javascript; charset=utf-8", "/v1/review"},
		{"/ops/charge.js", "text/javascript; charset=utf-8", "/resolve"},
		{"/ops/report.js", "text/javascript; charset=utf-8", "/v1/reports/reattempts"},
		{"/ops/chart.js", "text/javascript; charset=utf-8", "export function capChart"},
		{"/ops/dead.js", "text/javascript; charset=utf-8", "/v1/jobs/dead"},
		{"/ops/console.css", "text/css; charset=utf-8", ":root"},
		{"/ops/favicon.svg", "image/svg+xml", "<svg"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			res, body := get(http.MethodGet, tt.path, nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status: got %d, want 200", res.StatusCode)
			}
			if got := res.Header.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type: got %q, want %q", got, tt.contentType)
			}
			if res.Header.Get("ETag") == "" {
				t.Error("ETag: got none, want one")
			}
			checkCommonHeaders(t, res)
			if !strings.Contains(body, tt.contains) {
				t.Errorf("body: got no %q", tt.contains)
			}
		})
	}
}

func TestHandlerRefusesOtherPaths(t *testing.T) {
	t.Parallel()
	get := setup(t)
	for _, p := range []string{
		"/ops/nope",
		"/ops/nope.js",
		"/ops/static/app.js",
		"/ops/console.go",
		"/ops/doc.go",
		"/ops/app.js/",
		"/ops//app.js",
		"/ops/%2e%2e/go.mod",
		"/opsx",
		"/",
		"/v1/review",
	} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			res, body := get(http.MethodGet, p, nil)
			if res.StatusCode != http.StatusNotFound {
				t.Fatalf("status: got %d, want 404", res.StatusCode)
			}
			checkCommonHeaders(t, res)
			var env struct {
				Error map[string]any
			}
			if err := json.Unmarshal([]byte(body), &env); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			if env.Error["code"] != "resource_missing" {
				t.Errorf("error code: got %v, want resource_missing", env.Error["code"])
			}
			for _, f := range []string{"type", "code", "message", "param"} {
				if _, ok := env.Error[f]; !ok {
					t.Errorf("error %s: no %q field", body, f)
				}
			}
		})
	}
}

func TestHandlerMethodsAndCaching(t *testing.T) {
	t.Parallel()
	do := setup(t)

	t.Run("redirect to the slash", func(t *testing.T) {
		t.Parallel()
		res, _ := do(http.MethodGet, "/ops", nil)
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/ops/" {
			t.Errorf("got %d to %q, want 301 to /ops/", res.StatusCode, res.Header.Get("Location"))
		}
	})
	t.Run("HEAD", func(t *testing.T) {
		t.Parallel()
		res, body := do(http.MethodHead, "/ops/app.js", nil)
		if res.StatusCode != http.StatusOK || body != "" {
			t.Errorf("got %d with %d bytes, want 200 with none", res.StatusCode, len(body))
		}
		if res.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Errorf("Content-Type: got %q", res.Header.Get("Content-Type"))
		}
	})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			res, _ := do(m, "/ops/", nil)
			if res.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("status: got %d, want 405", res.StatusCode)
			}
			if got := res.Header.Get("Allow"); got != "GET, HEAD" {
				t.Errorf("Allow: got %q, want GET, HEAD", got)
			}
		})
	}
	t.Run("revalidation", func(t *testing.T) {
		t.Parallel()
		res, _ := do(http.MethodGet, "/ops/console.css", nil)
		etag := res.Header.Get("ETag")
		res, body := do(http.MethodGet, "/ops/console.css", map[string]string{"If-None-Match": etag})
		if res.StatusCode != http.StatusNotModified || body != "" {
			t.Errorf("got %d with %d bytes, want 304 with none", res.StatusCode, len(body))
		}
	})
}

// TestAssetsKeepThePolicy checks, file by file, what the Content-Security-Policy
// and the escaping rule rely on: no inline code, no HTML parsing of data, no
// resource from another origin, and every referenced file embedded.
func TestAssetsKeepThePolicy(t *testing.T) {
	t.Parallel()
	assets := load()
	index := string(assets["index.html"].body)

	scriptTag := regexp.MustCompile(`<script\b[^>]*>`)
	for _, tag := range scriptTag.FindAllString(index, -1) {
		if !strings.Contains(tag, ` src="`) {
			t.Errorf("index.html: inline script %s", tag)
		}
	}
	if regexp.MustCompile(`(?i)\s(on[a-z]+|style)\s*=`).MatchString(index) || strings.Contains(index, "<style") {
		t.Error("index.html: inline event handler or style")
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#][^"]*)"`)
	for _, m := range refs.FindAllStringSubmatch(index, -1) {
		if _, ok := assets[m[1]]; !ok {
			t.Errorf("index.html refers to %q, which is not embedded", m[1])
		}
	}

	imports := regexp.MustCompile(`from '\./([^']+)'`)
	banned := []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "localStorage.", "setAttribute('style'"}
	external := regexp.MustCompile(`(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for name, a := range assets {
		body := string(a.body)
		for _, u := range external.FindAllString(body, -1) {
			if u != "http://www.w3.org" {
				t.Errorf("%s: external resource %s", name, u)
			}
		}
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		for _, b := range banned {
			if strings.Contains(body, b) {
				t.Errorf("%s: uses %s", name, b)
			}
		}
		for _, m := range imports.FindAllStringSubmatch(body, -1) {
			if _, ok := assets[m[1]]; !ok {
				t.Errorf("%s imports %q, which is not embedded", name, m[1])
			}
		}
	}
}

// TestReviewLabels checks that the review queue labels its first-rank items by the reasons
// the reconciler gives them, under the reason values the store writes, and keeps the
// "success after a manual failed" label for that case alone.
func TestReviewLabels(t *testing.T) {
	t.Parallel()
	assets := load()
	review := string(assets["review.js"].body)
	for _, want := range []string{
		`'` + string(reconcile.ReasonContradictsManual) + `'`,
		`'` + reconcile.ReasonDuplicatePayment + `'`,
		`'Processor success found after a manual "failed"'`,
		`'Processor evidence contradicts a manual resolution'`,
		`'Second payment for one order'`,
		"manual === 'failed' && shows === 'succeeded'",
		"export function reviewLabel(",
	} {
		if !strings.Contains(review, want) {
			t.Errorf("review.js: got no %s", want)
		}
	}
	if !strings.Contains(string(assets["charge.js"].body), "reviewLabel(") {
		t.Error("charge.js: the in-review notice does not use reviewLabel")
	}
}

// TestChargeActionsReread checks that the charge page renders the charge as read again after
// "query processor now" and a resolution, never the actions' answers: they carry the charge
// without its audit trail and reconciliation checks, so rendering them empties the timeline.
func TestChargeActionsReread(t *testing.T) {
	t.Parallel()
	charge := string(load()["charge.js"].body)
	for _, action := range []string{"async reconcile(", "async resolve("} {
		i := strings.Index(charge, action)
		if i < 0 {
			t.Fatalf("charge.js: got no %s", action)
		}
		body := charge[i:]
		if j := strings.Index(body[1:], "\n  async "); j >= 0 {
			body = body[:j+1]
		}
		if !strings.Contains(body, "await this.reload();") {
			t.Errorf("charge.js %s...): got no re-read of the charge", action)
		}
		if regexp.MustCompile(`this\.charge\s*=`).MatchString(body) {
			t.Errorf("charge.js %s...): renders the action's answer as the charge", action)
		}
	}
}
