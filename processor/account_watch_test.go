package processor

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/internal/sim"
)

// simAt serves a simulator answering account on addr ("127.0.0.1:0" for a new port), as a
// processor restarted on the same address would. It fails the test if addr cannot be bound.
func simAt(t *testing.T, addr, account string) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	s := sim.New(sim.Config{AccountID: account, SecretKey: "sk_test_watch"})
	ts := httptest.NewUnstartedServer(s)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(s.Close)
	return ts
}

// watchBundle is a processor client with a watch of its account, on a fake clock.
type watchBundle struct {
	srv    *httptest.Server
	addr   string
	client *Client
	watch  *AccountWatch
	now    atomic.Pointer[time.Time]
}

func setupWatch(t *testing.T, account string) *watchBundle {
	t.Helper()
	b := &watchBundle{srv: simAt(t, "127.0.0.1:0", account)}
	b.addr = b.srv.Listener.Addr().String()
	start := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	b.now.Store(&start)
	var err error
	b.client, err = New(Config{SecretKey: "sk_test_watch", BaseURL: b.srv.URL, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.watch = NewAccountWatch(b.client, account, WatchConfig{Now: func() time.Time { return *b.now.Load() },
		Log: zaptest.NewLogger(t)})
	b.client.OnConnectionFailure(b.watch.MarkStale)
	return b
}

func (b *watchBundle) advance(d time.Duration) {
	next := b.now.Load().Add(d)
	b.now.Store(&next)
}

// restart stops the processor and starts another one, answering account, on its address.
func (b *watchBundle) restart(t *testing.T, account string) {
	t.Helper()
	b.srv.Close()
	b.srv = simAt(t, b.addr, account)
}

func wantAccount(t *testing.T, what string, got string, err error, want string) {
	t.Helper()
	if err != nil || got != want {
		t.Fatalf("%s: got %q (%v), want %q", what, got, err, want)
	}
}

// The processor restarts as another account between two requests, and nothing failed on the
// way: the hot path (Current) keeps the last account read until the next read, while Confirm
// reads again once its last read is older than WatchConfig.Fresh.
func TestAccountWatchConfirmReadsTheProcessorAgain(t *testing.T) {
	t.Parallel()
	b := setupWatch(t, "acct_watchA")
	ctx := testCtx(t)
	id, err := b.watch.Refresh(ctx)
	wantAccount(t, "first read", id, err, "acct_watchA")

	b.restart(t, "acct_watchB")
	id, err = b.watch.Current(ctx)
	wantAccount(t, "Current, nothing in doubt", id, err, "acct_watchA")
	id, err = b.watch.Confirm(ctx)
	wantAccount(t, "Confirm within Fresh of the last read", id, err, "acct_watchA")

	b.advance(2 * time.Second)
	id, err = b.watch.Confirm(ctx)
	wantAccount(t, "Confirm after Fresh", id, err, "acct_watchB")
	id, err = b.watch.Current(ctx)
	wantAccount(t, "Current after a read", id, err, "acct_watchB")
	if b.watch.Stale() {
		t.Fatal("stale after a successful read")
	}
}

// A request that fails without an answer puts the account in doubt: the next use reads it
// again; while that read fails the last account stays known but unconfirmed.
func TestAccountWatchStaleAfterAConnectionFailure(t *testing.T) {
	t.Parallel()

	t.Run("refused, then another account", func(t *testing.T) {
		t.Parallel()
		b := setupWatch(t, "acct_watchA")
		ctx := testCtx(t)
		b.srv.Close() // connections are refused
		a := b.client.CreatePayment(ctx, PaymentParams{Key: "pg_ch_down", ChargeID: "ch_down", Amount: 1000,
			Currency: "usd", PaymentMethod: "pm_card_visa"})
		if a.Outcome.HTTPStatus != 0 || a.Err == nil {
			t.Fatalf("attempt against a closed processor: got %+v, want no answer", a.Outcome)
		}
		if !b.watch.Stale() {
			t.Fatal("not stale after a refused connection")
		}
		_, err := b.watch.Current(ctx)
		if !errors.Is(err, ErrAccountUnconfirmed) {
			t.Fatalf("Current with the processor down: got %v, want ErrAccountUnconfirmed", err)
		}
		if _, err := b.watch.Confirm(ctx); !errors.Is(err, ErrAccountUnconfirmed) {
			t.Fatalf("Confirm with the processor down: got %v, want ErrAccountUnconfirmed", err)
		}
		if got := b.watch.Last(); got != "acct_watchA" || !b.watch.Stale() {
			t.Fatalf("after a failed read: last %q, stale %v; want acct_watchA, still stale", got, b.watch.Stale())
		}

		b.srv = simAt(t, b.addr, "acct_watchB")
		id, err := b.watch.Current(ctx) // no clock advance: staleness alone forces the read
		wantAccount(t, "Current once the processor is back", id, err, "acct_watchB")
		if b.watch.Stale() {
			t.Fatal("stale after a successful read")
		}
	})

	t.Run("card read refused", func(t *testing.T) {
		t.Parallel()
		b := setupWatch(t, "acct_watchA")
		b.srv.Close()
		if _, err := b.client.Card(testCtx(t), "pm_card_visa"); err == nil {
			t.Fatal("card read from a closed processor succeeded")
		}
		if !b.watch.Stale() {
			t.Fatal("not stale after a refused card read")
		}
	})

	t.Run("a timeout is not a connection failure", func(t *testing.T) {
		t.Parallel()
		b := setupWatch(t, "acct_watchA")
		// A first request dials the connection (a new connection puts the account in doubt,
		// see below); a read clears the doubt, and the timeout reuses the connection.
		if _, err := b.client.Card(context.Background(), "pm_card_visa"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.watch.Refresh(context.Background()); err != nil || b.watch.Stale() {
			t.Fatalf("refresh: got error %v, stale %v; want the doubt cleared", err, b.watch.Stale())
		}
		steps, err := sim.ParseScript([]byte(`[{"blackhole":true}]`))
		if err != nil {
			t.Fatal(err)
		}
		s := b.srv.Config.Handler.(*sim.Server)
		if err := s.SetScript(steps); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		a := b.client.CreatePayment(ctx, PaymentParams{Key: "pg_ch_slow", ChargeID: "ch_slow", Amount: 1000,
			Currency: "usd", PaymentMethod: "pm_card_visa"})
		if a.Outcome.ProcessorCode != "timeout" {
			t.Fatalf("attempt: got %+v, want a timeout", a.Outcome)
		}
		if b.watch.Stale() {
			t.Fatal("stale after a timeout: a slow processor is not another account")
		}
	})
}

// TestAccountWatchStaleAfterANewConnection: a request over a newly dialed connection puts the
// account in doubt (the process behind the address may have been restarted as another
// account while its old connections closed quietly); the account's own read does not.
func TestAccountWatchStaleAfterANewConnection(t *testing.T) {
	t.Parallel()
	b := setupWatch(t, "acct_watchA")
	if _, err := b.watch.Refresh(context.Background()); err != nil || b.watch.Stale() {
		t.Fatalf("refresh over a new connection: got error %v, stale %v; want not stale", err, b.watch.Stale())
	}
	b.srv.CloseClientConnections()
	if _, err := b.client.Card(context.Background(), "pm_card_visa"); err != nil {
		t.Fatal(err)
	}
	if !b.watch.Stale() {
		t.Fatal("not stale after a card read over a new connection")
	}
}

// fakeReader answers Account with its account, counting the reads; a read waits for gate
// when it is set.
type fakeReader struct {
	mu      sync.Mutex
	account string
	err     error
	reads   int
	gate    chan struct{}
}

func (f *fakeReader) Account(ctx context.Context) (string, error) {
	f.mu.Lock()
	f.reads++
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.account, f.err
}

func (f *fakeReader) set(account string, err error) {
	f.mu.Lock()
	f.account, f.err = account, err
	f.mu.Unlock()
}

func (f *fakeReader) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// Run reads the account every WatchConfig.Every, until its context ends.
func TestAccountWatchRunRefreshesPeriodically(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := &fakeReader{account: "acct_A"}
		w := NewAccountWatch(r, "acct_A", WatchConfig{Every: 30 * time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()

		r.set("acct_B", nil)
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if got := w.Last(); got != "acct_A" || r.count() != 0 {
			t.Fatalf("before the period: account %q after %d reads, want acct_A after none", got, r.count())
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := w.Last(); got != "acct_B" || r.count() != 1 {
			t.Fatalf("after one period: account %q after %d reads, want acct_B after 1", got, r.count())
		}

		// A periodic read that fails keeps the account and leaves the watch stale.
		r.set("", errors.New("connection refused"))
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got := w.Last(); got != "acct_B" || !w.Stale() {
			t.Fatalf("after a failed read: account %q, stale %v; want acct_B, stale", got, w.Stale())
		}
		cancel()
		<-done
	})
}

// Concurrent uses of a stale watch share one read; a doubt raised while that read runs keeps
// the watch stale after it (the read may have been answered before the failure).
func TestAccountWatchSharesOneRead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := &fakeReader{account: "acct_B", gate: make(chan struct{})}
		w := NewAccountWatch(r, "acct_A", WatchConfig{})
		w.MarkStale()
		var wg sync.WaitGroup
		got := make([]string, 8)
		for i := range got {
			wg.Go(func() { got[i], _ = w.Current(context.Background()) })
		}
		synctest.Wait()
		w.MarkStale()
		close(r.gate)
		wg.Wait()
		if n := r.count(); n != 1 {
			t.Fatalf("reads: got %d, want 1 shared by every caller", n)
		}
		for i, id := range got {
			if id != "acct_B" {
				t.Fatalf("caller %d: got %q, want acct_B", i, id)
			}
		}
		if !w.Stale() {
			t.Fatal("not stale: a connection failed while the read ran")
		}
	})
}

// A caller that gives up on a read leaves the watch stale until the read completes; the read
// is bounded by WatchConfig.Timeout whatever the callers do.
func TestAccountWatchCallerGivesUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		answer    bool // the read is answered after the caller gave up; else it times out
		wantLast  string
		wantStale bool
	}{
		{"the read completes later", true, "acct_B", false},
		{"the read times out", false, "acct_A", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				r := &fakeReader{account: "acct_B", gate: make(chan struct{})}
				w := NewAccountWatch(r, "acct_A", WatchConfig{Timeout: 5 * time.Second})
				w.MarkStale()
				if _, err := w.Current(context.Background()); !errors.Is(err, ErrAccountUnconfirmed) ||
					!errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Current past WatchConfig.Wait: got %v, want ErrAccountUnconfirmed and the deadline", err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				if _, err := w.Confirm(ctx); !errors.Is(err, ErrAccountUnconfirmed) {
					t.Fatalf("Confirm past the caller's deadline: got %v, want ErrAccountUnconfirmed", err)
				}
				if !w.Stale() || r.count() != 1 {
					t.Fatalf("while the read runs: stale %v after %d reads, want stale after 1", w.Stale(), r.count())
				}
				if tc.answer {
					close(r.gate)
				}
				time.Sleep(5 * time.Second)
				synctest.Wait()
				if got := w.Last(); got != tc.wantLast || w.Stale() != tc.wantStale {
					t.Fatalf("after the read: account %q, stale %v; want %q, stale %v", got, w.Stale(), tc.wantLast, tc.wantStale)
				}
			})
		})
	}
}
