package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/store"
)

// The operator console in a real headless Chromium, against a real gateway: each role logs
// in, opens every page and acts where it may (an operator queries the processor, resolves
// a charge with a note and replays a dead letter); the test asserts what each page shows,
// that no action is offered to a role that may not take it, and that no script error
// happens. PAYGATE_CONSOLE_SCREENSHOTS names a directory for a screenshot of each page.

// chromiumPath finds Chromium. Without it the test skips, except in CI (CI=true), where it
// fails, as the database tests do without a database.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; in CI the console tests must run (.ci/run installs it: apt-get install -y chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium): the console's browser test is skipped")
	return ""
}

// browser is one headless Chromium of a test's own, with a fresh profile.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu     sync.Mutex
	errors []string // script errors and console.error calls, of every tab
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath(t)
	// The flags keep Chromium from reaching out of this machine (it would hang on a closed
	// network) and let it run as root.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Starts the browser now, so that a browser that cannot start fails here.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// tab is one browser tab: a session of its own (the console keeps its key in the tab's
// sessionStorage).
type tab struct {
	b    *browser
	ctx  context.Context
	name string
}

func (b *browser) tab(name string) *tab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	if err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			if d := ev.ExceptionDetails; d != nil {
				msg = d.Text
				if d.Exception != nil && d.Exception.Description != "" {
					msg += " " + d.Exception.Description
				}
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				msg = "console.error: " + strings.Join(parts, " ")
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errors = append(b.errors, name+": "+msg)
			b.mu.Unlock()
		}
	}); err != nil {
		b.t.Fatalf("listening to the %s tab: %v", name, err)
	}
	return &tab{b: b, ctx: ctx, name: name}
}

// scriptErrors returns the script errors seen so far.
func (b *browser) scriptErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// do runs steps, failing the test with what the page shows when one fails.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.b.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		text, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		tb.b.t.Fatalf("%s: %s: %v\npage:\n%s", tb.name, what, err, text)
	}
}

// evalJS evaluates a JavaScript expression in tb's page.
func evalJS[T any](tb *tab, expr string) T {
	tb.b.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.b.t.Fatalf("%s: evaluate %s: %v", tb.name, expr, err)
	}
	return v
}

// js quotes s as a JavaScript string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitText waits until the element sel shows text.
func waitText(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.textContent.includes(%s); })()`,
		js(sel), js(text)), chromedp.WithPollingTimeout(15*time.Second))
}

// waitGone waits until no element matches sel.
func waitGone(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector(%s) === null`, js(sel)),
		chromedp.WithPollingTimeout(15*time.Second))
}

// open goes to a route of the console and waits for its heading and for its data to load.
func (tb *tab) open(route, heading string) {
	tb.b.t.Helper()
	tb.do("open "+route,
		chromedp.Evaluate[chromedp.Void](`location.hash = `+js(route)),
		waitText("main h2", heading),
		waitGone("main .loading"))
	tb.screenshot(strings.NewReplacer("#/", "", "/", "_", "?", "_", "=", "_", "&", "_").Replace(route))
}

// screenshot saves the page when PAYGATE_CONSOLE_SCREENSHOTS names a directory.
func (tb *tab) screenshot(name string) {
	dir := os.Getenv("PAYGATE_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.b.t.Logf("%s: screenshot %s: %v", tb.name, name, err)
		return
	}
	_ = os.WriteFile(filepath.Join(dir, tb.name+"_"+name+".png"), png, 0o644)
}

// login pastes key into the key form and waits for the key state to read want.
func (tb *tab) login(base, key, want string) {
	tb.b.t.Helper()
	if url := evalJS[string](tb, `location.href`); !strings.HasPrefix(url, base+"/ops/") {
		tb.do("load the console", chromedp.Navigate(base+"/ops/"), chromedp.WaitVisible("#key-input"))
	}
	tb.do("log in",
		chromedp.SetValue("#key-input", key),
		chromedp.Click(`#key-form button[type="submit"]`),
		waitText("#key-state", want))
}

// present reports whether sel matches an element in the page.
func (tb *tab) present(sel string) bool {
	tb.b.t.Helper()
	return evalJS[bool](tb, fmt.Sprintf(`document.querySelector(%s) !== null`, js(sel)))
}

// visibleRight reports whether sel's right edge lies within the window.
func (tb *tab) visibleRight(sel string) bool {
	tb.b.t.Helper()
	return evalJS[bool](tb, fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !!e && e.getBoundingClientRect().right <= window.innerWidth; })()`, js(sel)))
}

func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	// Checks run only when asked; an attempt may execute for 1 ms after its timeout, so that
	// an operator may resolve a timed-out charge once it was queried.
	g := startGateway(t, "PAYGATE_RECONCILE_SCHEDULE", "1h,2h", "PAYGATE_IN_FLIGHT_MARGIN", "1ms",
		"PAYGATE_WEBHOOK_ALLOW_HTTP", "1")
	const m = "m_console"
	checkout, op, aud := g.key(m, "checkout"), g.key(m, "operator"), g.key(m, "auditor")
	recv := newReceiver(t, nil)
	g.endpoint(op, recv.URL, "charge.succeeded")

	// The data the pages show: a succeeded charge, a declined one on an automatic chain, a
	// pending one (the processor never answers its request, and nothing took effect), and a
	// dead letter.
	ok := g.charge(checkout, "c-ok", visa)
	if ok.status != 200 {
		t.Fatalf("visa: got %d %s", ok.status, ok.body)
	}
	okID := ok.json(t)["id"].(string)
	auto := g.charge(checkout, "c-auto", `{"amount":1500,"currency":"usd","payment_method":"pm_sim_decline_insufficient_funds_visa_51_card7",
		"initiator":"merchant","customer":"cus_console","reattempt":"auto"}`)
	if auto.status != 402 || auto.json(t)["next_reattempt_at"] == nil {
		t.Fatalf("automatic chain: got %d %s, want 402 with next_reattempt_at", auto.status, auto.body)
	}
	autoID := auto.json(t)["id"].(string)
	g.script(`[{"blackhole":true}]`)
	pending := g.charge(checkout, "c-pending", visa, "Request-Timeout-Ms", "1000")
	if pending.status != 202 {
		t.Fatalf("blackholed charge: got %d %s, want 202", pending.status, pending.body)
	}
	pendingID := pending.json(t)["id"].(string)
	insertDeadLetter(t, g, m)

	// Keys the console refuses: an unknown one and a checkout key.
	first := b.tab("login")
	first.login(g.base, "pgk_"+strings.Repeat("a", 52), "Unknown or revoked key")
	first.login(g.base, checkout, "cannot use the console")
	if first.present(".tabs a[aria-current]") && first.present("main .resolve-form") {
		t.Fatal("a refused key opened the console")
	}

	// The operator: every page, and every action.
	o := b.tab("operator")
	o.login(g.base, op, "operator · merchant "+m)
	o.open("#/review", "Review queue")
	o.do("the empty queue", waitText("main", "Nothing needs a person right now."))

	recv.next(t, 30*time.Second) // the succeeded charge's event, delivered
	o.open("#/charge/"+okID, "Charge")
	o.do("a settled charge offers nothing", waitText("#act-title", "Nothing to settle"))
	o.do("its event and delivery", waitText("#charge-events", "charge.succeeded"), waitText("#charge-events", "delivered"))
	o.open("#/endpoints", "Webhook endpoints")
	o.do("the endpoint and its state", waitText("main", recv.URL), waitText("main", "enabled"))
	if o.present("#reconcile-now") || o.present(".resolve-form") {
		t.Fatal("operator: a succeeded charge shows the reconcile or resolve action")
	}

	o.open("#/charge/"+autoID, "Charge")
	o.do("the automatic chain", waitText("main", "Next reattempt"), waitText("main", "Reattempt chain"),
		waitText("main", "Automatic reattempt scheduled"))
	if o.present(".resolve-form") {
		t.Fatal("operator: a declined charge shows the resolve form")
	}

	o.open("#/charge/"+pendingID, "Charge")
	o.do("the pending charge's actions", chromedp.WaitVisible("#reconcile-now"), chromedp.WaitVisible("#resolve-submit"))
	if evalJS[bool](o, `document.querySelector('input[name="outcome"]:checked') !== null`) {
		t.Fatal("operator: the resolve form starts with an outcome chosen")
	}
	o.do("resolve without an outcome",
		chromedp.Click("#resolve-submit"),
		chromedp.WaitVisible("#resolve-outcome-error"))
	o.do("query the processor",
		chromedp.Click("#reconcile-now"),
		waitText("main", "Processor queried"),
		chromedp.WaitVisible("#resolve-submit"))
	o.do("resolve with a note",
		chromedp.Click(`input[name="outcome"][value="failed"]`),
		chromedp.SetValue("#resolve-note", "the processor shows no payment; the customer abandoned the order"),
		chromedp.Click("#resolve-submit"),
		chromedp.WaitVisible("#confirm-ok"),
		chromedp.Click("#confirm-ok"),
		waitText("main", "Resolved as failed."),
		waitText("#charge-title", pendingID),
		waitText(".charge-head", "failed"),
		waitText(".timeline", "the customer abandoned the order"))
	o.screenshot("resolved")

	o.open("#/report", "Reattempt report")
	o.do("the report's rows", chromedp.WaitVisible("table.grid"), waitText("table.grid", "Violations"))
	for _, col := range []string{"Violations", "Refused"} {
		sel := fmt.Sprintf(`table.grid th:nth-child(%d)`, map[string]int{"Violations": 2, "Refused": 3}[col])
		if !o.visibleRight(sel) {
			t.Errorf("operator: the report's %s column is off-screen at 1400 px", col)
		}
	}
	if evalJS[bool](o, `(() => { const w = document.querySelector('.table-wrap'); return w.scrollWidth > w.clientWidth; })()`) {
		t.Error("operator: the report's table is wider than the page at 1400 px")
	}
	overlaps := evalJS[int](o, `(() => {
		const r = [...document.querySelectorAll('.class-label')].map((e) => e.getBoundingClientRect());
		let n = 0;
		for (let i = 0; i < r.length; i++) for (let j = i + 1; j < r.length; j++)
			if (r[i].left < r[j].right && r[j].left < r[i].right && r[i].top < r[j].bottom && r[j].top < r[i].bottom) n++;
		return n; })()`)
	if overlaps != 0 {
		t.Errorf("operator: %d pairs of the class chart's labels overlap", overlaps)
	}

	o.open("#/dead", "Dead letters")
	o.do("replay the dead letter",
		chromedp.WaitVisible("button.replay"),
		chromedp.Click("button.replay"),
		chromedp.WaitVisible("#confirm-ok"),
		chromedp.Click("#confirm-ok"),
		waitText("button.replay", "Replayed"),
		waitText("#toast", "replayed"))

	// The auditor reads everything it may, and is offered no action.
	a := b.tab("auditor")
	a.login(g.base, aud, "auditor · merchant "+m)
	if !evalJS[bool](a, `document.querySelector('.tabs a[data-route="dead"]').parentElement.hidden`) {
		t.Error("auditor: the dead letters tab is shown")
	}
	a.open("#/review", "Review queue")
	a.open("#/charge/"+pendingID, "Charge")
	a.do("the auditor's charge page", waitText("#act-title", "Read only"), waitText(".timeline", "the customer abandoned the order"))
	if a.present("#reconcile-now") || a.present(".resolve-form") {
		t.Error("auditor: the charge page offers reconcile or resolve")
	}
	a.open("#/charge/"+autoID, "Charge")
	a.open("#/report", "Reattempt report")
	a.do("the auditor's report", chromedp.WaitVisible("table.grid"))
	a.open("#/dead", "Dead letters")
	a.do("dead letters are the operators'", waitText("main", "Dead letters are for operators."))
	if a.present("button.replay") {
		t.Error("auditor: the dead letters page offers replay")
	}
	a.open("#/charge", "Charge timeline")

	if errs := b.scriptErrors(); len(errs) != 0 {
		t.Fatalf("script errors in the console:\n%s", strings.Join(errs, "\n"))
	}
}

// insertDeadLetter makes a dead letter of merchant: an automatic reattempt of a charge that
// does not exist fails its single attempt. It waits until the API lists it.
func insertDeadLetter(t *testing.T, g *gateway, merchant string) {
	t.Helper()
	db, err := store.Open(context.Background(), g.env["DATABASE_URL"], store.Config{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	client, err := river.NewClient(riverpgxv5.New(db.Pool()), &river.Config{}) // insert-only
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := jobs.ForMerchant(&river.InsertOpts{MaxAttempts: 1}, merchant)
	if _, err := client.Insert(context.Background(), charge.AutoReattemptArgs{DeclinedID: "ch_missing", MerchantID: merchant, NextID: "ch_next"}, opts); err != nil {
		t.Fatal(err)
	}
	op := g.key(merchant, "operator")
	eventually(t, 20*time.Second, func() error {
		r := g.do(http.MethodGet, "/v1/jobs/dead", op, nil, "")
		if data, _ := r.json(t)["data"].([]any); len(data) != 1 {
			return fmt.Errorf("no dead letter: %s", r.body)
		}
		return nil
	})
}
