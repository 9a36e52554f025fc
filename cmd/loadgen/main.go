// Command loadgen drives paygate (or the processor simulator directly) with charges at a
// fixed concurrency and prints throughput and latency percentiles. make bench uses it.
//
//	loadgen -target gateway -url http://127.0.0.1:8080 -key pgk_... -c 16 -d 10s
//	loadgen -target sim -url http://127.0.0.1:12111 -c 16 -d 10s
//	loadgen -target gateway ... -inflight 1000 -rss-pid PID   (RSS with 1 000 charges in flight)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	target := flag.String("target", "gateway", "gateway or sim")
	base := flag.String("url", "http://127.0.0.1:8080", "base URL")
	key := flag.String("key", "", "gateway API key (checkout)")
	conc := flag.Int("c", 16, "concurrent clients")
	dur := flag.Duration("d", 10*time.Second, "duration")
	inflight := flag.Int("inflight", 0, "send this many charges at once and report the RSS of -rss-pid while they are in flight")
	rssPID := flag.Int("rss-pid", 0, "process whose RSS to report")
	rate := flag.Float64("rate", 0, "open loop: requests per second (0: closed loop with -c clients)")
	warmup := flag.Duration("warmup", 0, "open loop: send at the rate for this long first, without recording (connections, caches and the database reach their steady state)")
	trace := flag.String("trace", "", "open loop: write each recorded request's send time (ms after the first) and latency (ms) to this file, to find stalls")
	cards := flag.Int("cards", 1000, "distinct cards the charges are spread over: the network rules lock per card")
	cardOffset := flag.Int("card-offset", 0, "number of the first card (cards are numbered from card-offset+1, at most 9999)")
	total := flag.Int64("n", 0, "closed loop: stop after this many requests (0: run for -d)")
	flag.Parse()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(*conc, *inflight) + 8, MaxConnsPerHost: 0}}
	var seq atomic.Int64
	send := func(ctx context.Context) (time.Duration, int, error) {
		n := seq.Add(1)
		var req *http.Request
		switch *target {
		case "sim":
			form := url.Values{"amount": {"1000"}, "currency": {"usd"}, "payment_method": {"pm_card_visa"},
				"confirm": {"true"}, "payment_method_types[]": {"card"}, "error_on_requires_action": {"true"},
				"metadata[paygate_charge_id]": {fmt.Sprintf("bench_%d_%d", os.Getpid(), n)}}
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, *base+"/v1/payment_intents", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Authorization", "Bearer sk_test_bench")
			req.Header.Set("Idempotency-Key", fmt.Sprintf("bench_%d_%d", os.Getpid(), n))
		default:
			pm := fmt.Sprintf("pm_sim_approve_visa_card%d", 1+int64(*cardOffset)+n%int64(max(*cards, 1)))
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, *base+"/v1/charges",
				strings.NewReader(`{"amount":1000,"currency":"usd","payment_method":"`+pm+`","initiator":"customer"}`))
			req.Header.Set("Authorization", "Bearer "+*key)
			req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d-%d", os.Getpid(), n))
			req.Header.Set("Request-Timeout-Ms", "30000")
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start), resp.StatusCode, nil
	}

	if *inflight > 0 {
		reportRSS(send, *inflight, *rssPID)
		return
	}

	if *rate > 0 && *warmup > 0 {
		openLoop(send, *rate, *warmup, nil)
	}
	if *total > 0 {
		*dur = 24 * time.Hour
	}
	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()
	var (
		mu   sync.Mutex
		lats []time.Duration
		bad  int
		tr   []string
	)
	var (
		wg     sync.WaitGroup
		issued atomic.Int64
	)
	begin := time.Now()
	if *rate > 0 {
		openLoop(send, *rate, *dur, func(at time.Time, d time.Duration, status int, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil || (status != 200 && status != 201) {
				bad++
				return
			}
			lats = append(lats, d)
			if *trace != "" {
				tr = append(tr, fmt.Sprintf("%.3f %.3f", float64(at.Sub(begin).Microseconds())/1000, float64(d.Microseconds())/1000))
			}
		})
	}
	for range *conc * boolInt(*rate == 0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			localBad := 0
			for ctx.Err() == nil && (*total == 0 || issued.Add(1) <= *total) {
				d, status, err := send(context.Background())
				if err != nil || (status != 200 && status != 201) {
					localBad++
					continue
				}
				local = append(local, d)
			}
			mu.Lock()
			lats = append(lats, local...)
			bad += localBad
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	if *trace != "" {
		if err := os.WriteFile(*trace, []byte(strings.Join(tr, "\n")+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
	}
	slices.Sort(lats)
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[min(int(p*float64(len(lats))), len(lats)-1)].Microseconds()) / 1000
	}
	fmt.Printf("requests=%d errors=%d rate=%.1f/s p50_ms=%.3f p99_ms=%.3f cpu_ms=%.0f\n",
		len(lats), bad, float64(len(lats))/elapsed.Seconds(), pct(0.50), pct(0.99), cpuMS())
}

// cpuMS is the CPU time (user and system) this process used so far, in milliseconds: the
// benchmark counts the load generator's share of the machine.
func cpuMS() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	ms := func(t syscall.Timeval) float64 { return float64(t.Sec)*1000 + float64(t.Usec)/1000 }
	return ms(ru.Utime) + ms(ru.Stime)
}

// openLoop sends a request every 1/rate for d, whatever the answers' latency, and waits
// for the answers; record (nil: none) gets each one with the time it was sent.
func openLoop(send func(context.Context) (time.Duration, int, error), rate float64, d time.Duration,
	record func(time.Time, time.Duration, int, error)) {
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Now()
			lat, status, err := send(context.Background())
			if record != nil {
				record(at, lat, status, err)
			}
		}()
	}
	wg.Wait()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reportRSS sends n requests at once and prints the peak RSS of pid while they are in flight.
func reportRSS(send func(context.Context) (time.Duration, int, error), n, pid int) {
	var wg sync.WaitGroup
	var done atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _ = send(context.Background())
			done.Add(1)
		}()
	}
	peak := 0
	for done.Load() < int64(n) {
		if kb := rssKB(pid); kb > peak {
			peak = kb
		}
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	fmt.Printf("inflight=%d peak_rss_mb=%.1f\n", n, float64(peak)/1024)
}

func rssKB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			var kb int
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:")), "%d", &kb)
			return kb
		}
	}
	return 0
}
