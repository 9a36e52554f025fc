package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The operators' alert rules (deploy/prometheus) and dashboard (deploy/grafana) read the
// gateway's metrics by name: the rules pass promtool's own tests, and every metric they or
// the dashboard name is one a running gateway serves.

const deployDir = "../../deploy"

// TestAlertRules runs promtool's check and unit tests of the rules. Without promtool the
// test skips, except in CI (CI=true), where it fails.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed; in CI the alert rules must be tested (.ci/run installs it: apt-get install -y prometheus)")
		}
		t.Skip("promtool is not installed (apt-get install prometheus): the alert rules' tests are skipped")
	}
	dir := filepath.Join(deployDir, "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "paygate.rules.yml"},
		{"test", "rules", "paygate.rules.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// metricNameRE finds paygate's metric names in rules and dashboards.
var metricNameRE = regexp.MustCompile(`\bpaygate_[a-z0-9_]+\b`)

// TestAlertMetricsExist checks that every metric the rules and the dashboard read is served
// by a gateway that has charged and reconciled.
func TestAlertMetricsExist(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SCHEDULE", "1h,2h")
	k, op := g.key("m_alerts", "checkout"), g.key("m_alerts", "operator")
	if r := g.charge(k, "a1", visa); r.status != 200 {
		t.Fatalf("charge: got %d %s", r.status, r.body)
	}
	g.script(`[{"blackhole":true}]`)
	r := g.charge(k, "a2", visa, "Request-Timeout-Ms", "1000")
	if r.status != 202 {
		t.Fatalf("blackholed charge: got %d %s, want 202", r.status, r.body)
	}
	if rc := g.do(http.MethodPost, "/v1/charges/"+r.json(t)["id"].(string)+"/reconcile", op, nil, ""); rc.status != 200 {
		t.Fatalf("reconcile: got %d %s", rc.status, rc.body)
	}
	served := map[string]bool{}
	for _, line := range strings.Split(g.metrics(), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			served[f[2]] = true
		}
	}
	names := map[string][]string{}
	for _, file := range []string{"prometheus/paygate.rules.yml", "prometheus/paygate.rules.test.yml", "grafana/paygate.json"} {
		b, err := os.ReadFile(filepath.Join(deployDir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range metricNameRE.FindAllString(string(b), -1) {
			names[n] = append(names[n], file)
		}
	}
	if len(names) == 0 {
		t.Fatal("no paygate metric named in deploy/")
	}
	var missing []string
	for n, files := range names {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && served[b] {
				base = b
			}
		}
		if !served[base] {
			missing = append(missing, n+" (in "+strings.Join(files, ", ")+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("metrics named in deploy/ that the gateway does not serve:\n%s", strings.Join(missing, "\n"))
	}
}
