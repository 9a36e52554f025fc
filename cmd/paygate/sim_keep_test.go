package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSimKeepsWhatItIsTold: paygate sim --keep N keeps the last N PaymentIntents; an older
// one is gone, as a PaymentIntent past Stripe's retention would be.
func TestSimKeepsWhatItIsTold(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runSim(ctx, []string{"--addr", "127.0.0.1:0", "--account", "acct_keep", "--keep", "2"}, logs,
			func(string) string { return "" })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("sim: %v", err)
		}
	})
	addr := regexp.MustCompile(`"addr":"([^"]+)"`)
	var base string
	eventually(t, 10*time.Second, func() error {
		m := addr.FindStringSubmatch(logs.String())
		if m == nil {
			return fmt.Errorf("the simulator has not said where it serves: %s", logs)
		}
		base = "http://" + m[1]
		return nil
	})
	call := func(method, path string, form url.Values) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer sk_test_keep")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp.StatusCode, body
	}
	var ids []string
	for i := range 3 {
		status, body := call(http.MethodPost, "/v1/payment_intents", url.Values{
			"amount": {fmt.Sprint(1000 + i)}, "currency": {"usd"}, "payment_method": {"pm_card_visa"}, "confirm": {"true"},
		})
		id, _ := body["id"].(string)
		if status != http.StatusOK || id == "" {
			t.Fatalf("create %d: got %d %v", i, status, body)
		}
		ids = append(ids, id)
	}
	for i, want := range []int{http.StatusNotFound, http.StatusOK, http.StatusOK} {
		if status, body := call(http.MethodGet, "/v1/payment_intents/"+ids[i], nil); status != want {
			t.Errorf("PaymentIntent %d of 3 with --keep 2: got %d %v, want %d", i+1, status, body, want)
		}
	}
}
