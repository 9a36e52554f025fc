package store_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// cutProxy forwards TCP connections to a database and can cut them all at once, as a
// primary stopped with -m immediate does: the server's side simply goes away.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []*net.TCPConn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.cut(false) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c.(*net.TCPConn), s.(*net.TCPConn))
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

// cut closes every connection: with a reset when reset is set, else an orderly close.
func (p *cutProxy) cut(reset bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if reset {
			_ = c.SetLinger(0)
		}
		_ = c.Close()
	}
	p.conns = nil
}

// TestUnavailableWhenTheServerGoesAway: a connection whose server went away under a
// statement (closed or reset, as a primary stopped with -m immediate leaves it) is
// ErrUnavailable through InTx, and recognised by Unavailable on a statement of the pool
// that no store method translated: pgx returns those errors bare.
func TestUnavailableWhenTheServerGoesAway(t *testing.T) {
	t.Parallel()
	cfg, err := pgconn.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		reset bool
	}{{"closed", false}, {"reset", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			proxy := newCutProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
			u, err := url.Parse(dbtest.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			u.Host = proxy.ln.Addr().String()
			db, err := store.Open(ctx, u.String(), store.Config{MaxConns: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()

			err = db.InTx(ctx, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
					return err
				}
				proxy.cut(tc.reset)
				// A statement with arguments: pgx prepares it, and returns the read's error bare.
				_, err := tx.Exec(ctx, `SELECT $1::int`, 1)
				return err
			})
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("InTx: got %v, want ErrUnavailable", err)
			}

			conn, err := db.Pool().Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			if _, err := conn.Exec(ctx, `SELECT 1`); err != nil {
				t.Fatal(err)
			}
			proxy.cut(tc.reset)
			_, err = conn.Exec(ctx, `SELECT $1::int`, 1)
			if err == nil || !store.Unavailable(err) {
				t.Errorf("a statement of the pool: got %v, want it recognised as unavailable", err)
			}
			if err := db.Ping(ctx); err != nil {
				t.Errorf("after the cut, the pool connects again: got %v", err)
			}
		})
	}
}
