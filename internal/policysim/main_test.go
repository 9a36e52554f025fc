package policysim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cli is one run of Main.
type cli struct {
	code           int
	stdout, stderr string
}

// runMain runs Main with args.
func runMain(t *testing.T, args ...string) cli {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, &stdout, &stderr)
	return cli{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// writeFile writes a file in a fresh temporary directory and returns its
// path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatalf("writing %s: got error %v, want nil", path, err)
	}
	return path
}

func TestMainExitCodes(t *testing.T) {
	t.Parallel()
	example := filepath.Join(examplesDir, "503-503-200.json")
	invalid := writeFile(t, "invalid.json", `{"policy": {"base_ms": 0}, "script": [{"status": 200}]}`)
	malformed := writeFile(t, "malformed.json", "{\n  \"script\": [,]\n}")
	svgDir := t.TempDir()
	badRetryAfter := writeFile(t, "retry-after.json", `{"script": [{"status": 429, "retry_after": "soon"}, {"status": 200}]}`)
	badDate := writeFile(t, "date.json", `{"script": [{"status": 429, "retry_after": "30", "date": "yesterday"}]}`)
	garbageDate := writeFile(t, "garbage-date.json", `{"script": [{"status": 503, "retry_after": "Mon, 02 Mar 2026 12:00:01 GMT", "date": "yesterday"}, {"status": 200}]}`)
	farDate := writeFile(t, "far-date.json", `{"script": [{"status": 429, "retry_after": "Mon, 02 Mar 2026 13:00:23 GMT", "date": "Mon, 02 Mar 2026 13:00:20 GMT"}, {"status": 200}]}`)
	okOutage := writeFile(t, "outage.json", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"from_ms": 0, "to_ms": 100, "status": 200}}}`)
	busy := writeFile(t, "busy.json", `{"policy": {"max_attempts": 2}, "script": [{"status": 409, "body_code": "lock_timeout"}]}`)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string // the one line on stderr; "" for none
		wantStdout string // a substring of stdout
	}{
		{"text", []string{example}, ExitOK, "", "result: succeeded"},
		{"json", []string{example, "--json"}, ExitOK, "", `"result": "succeeded"`},
		{"flags first", []string{"--seed", "3", "--json", example}, ExitOK, "", `"idempotency_keys"`},
		{"flag with equals", []string{example, "--seed=3"}, ExitOK, "", "result: succeeded"},
		{"svg", []string{example, "--svg", filepath.Join(svgDir, "one.svg")}, ExitOK, "", "result: succeeded"},
		{"help", []string{"--help"}, ExitOK, "", "usage: paygate simulate FILE"},
		{"help on the date bound", []string{"--help"}, ExitOK, "", "further than policy.max_clock_skew_ms"},
		{"busy to the end", []string{busy, "--json"}, ExitOK, "", `"result": "pending"`},
		// A processor may send any header: the simulation shows what the loop does with it.
		{"retry_after not seconds or a date", []string{badRetryAfter}, ExitOK, "",
			`attempt 1: Retry-After "soon" is neither delta-seconds nor an HTTP-date: the loop ignores it and backs off`},
		{"retry_after not seconds or a date, in JSON", []string{badRetryAfter, "--json"}, ExitOK, "", `"result": "succeeded"`},
		{"date not an HTTP-date", []string{badDate}, ExitOK, "", "result: failed:deadline_exceeded"},
		{"date far from the fake clock", []string{farDate}, ExitOK, "",
			`attempt 1: Date "Mon, 02 Mar 2026 13:00:20 GMT" is 1h0m20s ahead of the fake clock at the answer: the loop corrects at most 30000 ms of clock skew (max_clock_skew_ms)`},
		{"a garbage Date beside an HTTP-date Retry-After", []string{garbageDate}, ExitOK, "",
			`attempt 1: Date "yesterday" is not an HTTP-date: the loop ignores it and reads the Retry-After on its own clock`},
		{"outage answering 200", []string{okOutage}, ExitUsage, "paygate simulate: population.outage.status: must be an error status the loop retries: 429, or 500 to 599; got 200", ""},
		{"invalid file", []string{invalid}, ExitUsage, "paygate simulate: policy.base_ms: must be a positive integer", ""},
		{"malformed file", []string{"--json", malformed}, ExitUsage, "paygate simulate: line 2, column 14: invalid character ',' looking for beginning of value", ""},
		{"no file", nil, ExitUsage, "paygate simulate: want exactly one FILE, got 0 (" + usage + ")", ""},
		{"two files", []string{example, example}, ExitUsage, "paygate simulate: want exactly one FILE, got 2 (" + usage + ")", ""},
		{"unknown flag", []string{example, "--verbose"}, ExitUsage, "paygate simulate: flag provided but not defined: -verbose (" + usage + ")", ""},
		{"bad seed", []string{example, "--seed", "-1"}, ExitUsage, `paygate simulate: invalid value "-1" for flag -seed: parse error (` + usage + ")", ""},
		{"missing seed", []string{example, "--seed"}, ExitUsage, "paygate simulate: flag needs an argument: -seed (" + usage + ")", ""},
		{"missing file", []string{filepath.Join(t.TempDir(), "none.json")}, ExitUsage, "", ""},
		{"unwritable svg", []string{example, "--svg", filepath.Join(svgDir, "no", "such", "dir.svg")}, ExitFailure, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := runMain(t, tt.args...)
			if got.code != tt.wantCode {
				t.Errorf("exit: got %d, want %d (stderr %q)", got.code, tt.wantCode, got.stderr)
			}
			if tt.wantCode == ExitOK {
				if got.stderr != "" {
					t.Errorf("stderr: got %q, want nothing", got.stderr)
				}
			} else {
				if lines := strings.Count(got.stderr, "\n"); lines != 1 || !strings.HasPrefix(got.stderr, "paygate simulate: ") {
					t.Errorf("stderr: got %q, want one line starting with \"paygate simulate: \"", got.stderr)
				}
				if got.stdout != "" {
					t.Errorf("stdout: got %q, want nothing on an error", got.stdout)
				}
			}
			if tt.wantStderr != "" && got.stderr != tt.wantStderr+"\n" {
				t.Errorf("stderr: got %q, want %q", got.stderr, tt.wantStderr+"\n")
			}
			if !strings.Contains(got.stdout, tt.wantStdout) {
				t.Errorf("stdout: got %q, want it to contain %q", got.stdout, tt.wantStdout)
			}
		})
	}
}

func TestMainJSONFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		keys []string
	}{
		{"503-503-200.json", []string{"attempts", "idempotency_keys", "result"}},
		{"error-rate-10pct.json", []string{"amplification", "attempts", "declined", "duration_ms", "failed", "failed_by_code",
			"most_attempts_per_operation", "operations", "pending", "per_second", "retries_prevented_by_budget", "succeeded"}},
	}
	attemptKeys := []string{"at_ms", "backoff_cap_ms", "class", "delay_ms", "n", "remaining_ms", "retry_after_ms",
		"status", "timeout_ms", "tokens_after", "tokens_before"}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got := runMain(t, filepath.Join(examplesDir, tt.file), "--json")
			if got.code != ExitOK {
				t.Fatalf("exit: got %d, want 0 (stderr %q)", got.code, got.stderr)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(got.stdout), &obj); err != nil {
				t.Fatalf("stdout: got invalid JSON (%v), want one object", err)
			}
			checkKeys(t, "top level", obj, tt.keys)
			var attempts []map[string]json.RawMessage
			if raw, ok := obj["attempts"]; ok && json.Unmarshal(raw, &attempts) == nil {
				for i, a := range attempts {
					checkKeys(t, fmt.Sprintf("attempt %d", i+1), a, attemptKeys)
				}
			}
		})
	}
}

// checkKeys fails the test unless obj has exactly the keys want (sorted).
func checkKeys(t *testing.T, what string, obj map[string]json.RawMessage, want []string) {
	t.Helper()
	var got []string
	for k := range obj {
		got = append(got, k)
	}
	if len(got) != len(want) {
		t.Errorf("%s keys: got %v, want %v", what, got, want)
		return
	}
	for _, k := range want {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s keys: got %v, want %v", what, got, want)
			return
		}
	}
}

func TestMainSameSeedSameBytes(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"503-503-200.json", "timeout-then-deadline.json", "error-rate-10pct.json", "outage-population.json"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(examplesDir, name)
			dir := t.TempDir()
			var stdouts, svgs []string
			for i, svgPath := range []string{filepath.Join(dir, "a.svg"), filepath.Join(dir, "b.svg")} {
				args := []string{file, "--json", "--seed", "42", "--svg", svgPath}
				if i == 1 {
					args = []string{"--svg", svgPath, "--seed", "42", "--json", file} // flags first
				}
				got := runMain(t, args...)
				if got.code != ExitOK {
					t.Fatalf("run %d: exit got %d, want 0 (stderr %q)", i, got.code, got.stderr)
				}
				svg, err := os.ReadFile(svgPath)
				if err != nil {
					t.Fatalf("run %d: reading the SVG: got error %v, want nil", i, err)
				}
				stdouts = append(stdouts, got.stdout)
				svgs = append(svgs, string(svg))
			}
			if stdouts[0] != stdouts[1] {
				t.Errorf("JSON with seed 42: got two different outputs, want identical bytes")
			}
			if svgs[0] != svgs[1] {
				t.Errorf("SVG with seed 42: got two different pictures, want identical bytes")
			}
		})
	}
}

func TestSeedChangesJitter(t *testing.T) {
	t.Parallel()
	f := readExample(t, "503-503-200.json")
	_, a, _ := outputs(t, mustScript(t, f, 1))
	_, b, _ := outputs(t, mustScript(t, f, 2))
	if a == b {
		t.Errorf("seeds 1 and 2: got identical timelines, want different jitter")
	}
	_, c, _ := outputs(t, mustScript(t, f, 1))
	if a != c {
		t.Errorf("seed 1 twice: got different timelines, want identical bytes")
	}
}

func TestSameSeedSameOutputEverywhere(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.json"))
	if err != nil {
		t.Fatalf("listing examples: got error %v, want nil", err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := readExample(t, name)
			var first [3]string
			for i := range 2 {
				out, err := Run(context.Background(), f, 9)
				if err != nil {
					t.Fatalf("Run: got error %v, want nil", err)
				}
				text, js, svg := outputs(t, out)
				if i == 0 {
					first = [3]string{text, js, svg}
					continue
				}
				for j, got := range []string{text, js, svg} {
					if got != first[j] {
						t.Errorf("output %d of two runs with seed 9: got different bytes, want identical", j)
					}
				}
			}
		})
	}
}
