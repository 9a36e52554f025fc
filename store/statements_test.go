package store_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// Every statement of a charge's life is static SQL that PostgreSQL accepts as it is.
func TestStatementsPrepare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	for name, sql := range store.Statements {
		if _, err := tx.Prepare(ctx, name, sql); err != nil {
			t.Errorf("%s: prepare: %v\n%s", name, err, sql)
		}
	}
}

// No statement of a charge's life takes a domain-typed argument: the driver sends such an
// argument as text, and PostgreSQL runs the domain's input function at every call.
func TestStatementsTakeBaseTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	for name, sql := range store.Statements {
		sd, err := tx.Prepare(ctx, name, sql)
		if err != nil {
			t.Fatalf("%s: prepare: %v", name, err)
		}
		for i, oid := range sd.ParamOIDs {
			var domain string
			err := tx.QueryRow(ctx, `SELECT typname FROM pg_type WHERE oid = $1 AND typtype = 'd'`, oid).Scan(&domain)
			if err == nil {
				t.Errorf("%s: argument $%d has domain type %s; cast it to the domain's base type", name, i+1, domain)
			}
		}
	}
}

// The attempt log keeps every field of every attempt.
func TestAttemptLogRoundTrip(t *testing.T) {
	t.Parallel()
	in := []charge.Attempt{
		{N: 1, StartedAt: time.Date(2026, 3, 2, 12, 0, 0, 123456000, time.UTC), DurationMS: 40, TimeoutMS: 4000, Class: "retry",
			HTTPStatus: 503, ProcessorCode: "", RequestID: "req_1", RetryAfterMS: 0, BackoffMS: 498, BudgetTokensBefore: 10,
			BudgetTokensAfter: 9},
		{N: 2, StartedAt: time.Date(2026, 3, 2, 12, 0, 1, 0, time.UTC), DurationMS: 3, TimeoutMS: 3400, Class: "decline",
			HTTPStatus: 402, ProcessorCode: `card_declined "x"`, BudgetTokensBefore: 9.539, BudgetTokensAfter: 9.539},
	}
	created := time.Date(2026, 3, 2, 12, 0, 0, 120000500, time.UTC) // sub-microsecond digits are not stored
	for name, c := range map[string]time.Time{"offsets": created, "absolute (created unknown)": {}} {
		out, err := store.DecodeAttempts(store.EncodeAttempts(in, c), created.Truncate(time.Microsecond))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%+v", out) != fmt.Sprintf("%+v", in) {
			t.Fatalf("%s: round trip: got %+v, want %+v", name, out, in)
		}
	}
	if log := string(store.EncodeAttempts(in[:1], created)); !strings.HasPrefix(log, "[[1,3456,40,") {
		t.Errorf("a first attempt's start: got log %s, want 3456 microseconds after the charge's creation", log)
	}
	// A log written with absolute starts (before offsets) reads the same.
	old := `[[1,1772452800123456,40,4000,"retry",503,"","req_1",0,498,10,9],[2,1772452801000000,3,3400,"decline",402,"card_declined \"x\"","",0,0,9.539,9.539]]`
	if out, err := store.DecodeAttempts([]byte(old), created); err != nil || fmt.Sprintf("%+v", out) != fmt.Sprintf("%+v", in) {
		t.Fatalf("absolute log: got %+v, %v, want %+v", out, err, in)
	}
	if got := store.EncodeAttempts(nil, created); got != nil {
		t.Fatalf("no attempts: got %q, want nothing", got)
	}
}

// A first phase is one transaction even though it travels as two pipelined batches: when
// its second batch fails, the key its first batch wrote is gone too, and the same key
// starts afresh. Inside a test's transaction the phase is a savepoint; on the pool it is
// BEGIN ... COMMIT.
func TestBeginChargeFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	for name, db := range map[string]*store.DB{"savepoint": store.New(dbtest.Tx(t)), "pool": store.New(dbtest.Pool(t))} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			merchant := "m_rollback_" + charge.NewID()
			// A card of its own: the test transaction keeps the card locks it took.
			card := &charge.Card{Fingerprint: "fp_" + merchant, Network: "visa", ExpMonth: 12, ExpYear: 2034}
			newMerchant(t, db, merchant)
			beginOn := func(key string, fp idempotency.Fingerprint, c charge.Charge) (charge.Plan, error) {
				return charge.Begin(ctx, db, charge.BeginParams{MerchantID: merchant, Key: key, Fingerprint: fp,
					LockFor: time.Minute, New: c, Card: card})
			}
			first, err := beginOn("k1", idempotency.Fingerprint{1}, newCharge(merchant, ""))
			if err != nil || !first.Created {
				t.Fatalf("first charge: %+v, %v", first, err)
			}

			clash := newCharge(merchant, "")
			clash.ID, clash.ProcessorKey = first.Charge.ID, first.Charge.ProcessorKey
			if _, err := beginOn("k2", idempotency.Fingerprint{2}, clash); err == nil {
				t.Fatal("a charge whose id is taken: got no error")
			}

			again, err := beginOn("k2", idempotency.Fingerprint{2}, newCharge(merchant, ""))
			if err != nil || !again.Created || again.Verdict != idempotency.Proceed {
				t.Fatalf("the same key after the failed phase: got %+v, %v; want a new charge", again, err)
			}
		})
	}
}

// A charge's processor key is derived from its id: every charge read back carries it.
func TestProcessorKeyIsDerivedFromTheID(t *testing.T) {
	t.Parallel()
	db := store.New(dbtest.Tx(t))
	newMerchant(t, db, "m_key")
	b := begin(t, db, "m_key", "k", idempotency.Fingerprint{1}, newCharge("m_key", ""))
	got, err := db.Charge(context.Background(), "m_key", b.Charge.ID)
	if err != nil || got.ProcessorKey != "pg_"+b.Charge.ID {
		t.Fatalf("stored charge: processor key %q (%v), want pg_%s", got.ProcessorKey, err, b.Charge.ID)
	}
}

// A new key on a card with no refusal on record is created in one round trip, with no
// history read and no decision recorded; once a decline puts the card on record, a charge is
// decided over the part of its history its state does not hold, and a decision is recorded
// for a reattempt (the card in a run of declines) only.
func TestBeginChargeCleanAndDirtyCards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Pool(t))
	merchant := "m_clean_" + charge.NewID()
	newMerchant(t, db, merchant)
	card := &charge.Card{Fingerprint: "fp_" + merchant, Network: "visa", ExpMonth: 12, ExpYear: 2034}
	beginOn := func(key string) charge.Plan {
		t.Helper()
		b, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: merchant, Key: key,
			Fingerprint: idempotency.Fingerprint{byte(len(key))}, LockFor: time.Minute, New: newCharge(merchant, ""), Card: card})
		if err != nil || !b.Created {
			t.Fatalf("begin %s: %+v, %v", key, b, err)
		}
		return b
	}
	finish := func(b charge.Plan, status charge.Status, outcome decline.Outcome) {
		t.Helper()
		c := *b.Charge
		c.Status = status
		if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: merchant, Key: c.IdempotencyKey, Charge: &c,
			ResponseStatus: 201, ResponseBody: []byte(`{}`), Card: &charge.CardOutcome{Outcome: outcome}}); err != nil {
			t.Fatal(err)
		}
	}
	decisions := func() int {
		t.Helper()
		var n int
		if err := dbtest.Pool(t).QueryRow(ctx, `SELECT count(*) FROM reattempt_decisions WHERE fingerprint = $1`,
			card.Fingerprint).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	first := beginOn("k-first")
	if first.History != nil || first.Now.IsZero() || !first.Charge.CreatedAt.Equal(first.Now) {
		t.Fatalf("first charge of a card: history %v, now %v, created %v", first.History, first.Now, first.Charge.CreatedAt)
	}
	finish(first, charge.StatusSucceeded, decline.Approved)
	second := beginOn("k-second")
	// An attempt in flight is no refusal: the card stays off record.
	third := beginOn("k-third")
	if second.History != nil || third.History != nil {
		t.Fatalf("a card with approvals and an attempt in flight: histories %v, %v, want none read", second.History, third.History)
	}
	finish(second, charge.StatusDeclined, decline.Declined)
	finish(third, charge.StatusSucceeded, decline.Approved)
	fourth := beginOn("k-fourth")
	if len(fourth.History) != 2 {
		t.Fatalf("a card with a decline: history of %d attempts (%v), want the decline and the approval after it", len(fourth.History), fourth.History)
	}
	if n := decisions(); n != 0 {
		t.Fatalf("decisions recorded for charges on a card in no run of declines: %d, want 0", n)
	}
	finish(fourth, charge.StatusDeclined, decline.Declined)
	fifth := beginOn("k-fifth")
	if n := decisions(); n != 1 || fifth.History == nil {
		t.Fatalf("a reattempt in a run of declines: %d decisions recorded, history %v; want one, over the card's history", n, fifth.History)
	}
}

// Requests racing with the same new key: one creates the charge, every other finds the key
// in use, and none fails (the one-round-trip path gives way to the long one on the clash).
func TestBeginChargeSameKeyRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Pool(t))
	merchant := "m_race_" + charge.NewID()
	newMerchant(t, db, merchant)
	const racers = 8
	type result struct {
		b   charge.Plan
		err error
	}
	results := make(chan result, racers)
	start := make(chan struct{})
	for i := range racers {
		go func() {
			<-start
			// Each racer's card is its own: the card's lock does not serialise them.
			card := &charge.Card{Fingerprint: fmt.Sprintf("fp_%s_%d", merchant, i), Network: "visa", ExpMonth: 12, ExpYear: 2034}
			b, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: merchant, Key: "same", Fingerprint: idempotency.Fingerprint{7},
				LockFor: time.Minute, New: newCharge(merchant, ""), Card: card})
			results <- result{b, err}
		}()
	}
	close(start)
	created, inUse := 0, 0
	for range racers {
		r := <-results
		switch {
		case r.err != nil:
			t.Errorf("racer failed: %v", r.err)
		case r.b.Created:
			created++
		case r.b.Verdict == idempotency.InUse:
			inUse++
		default:
			t.Errorf("racer: got %+v", r.b)
		}
	}
	if created != 1 || inUse != racers-1 {
		t.Fatalf("got %d created and %d in use, want 1 and %d", created, inUse, racers-1)
	}
}

// benchAnswer is a clean approval's answer, as the API renders it, and answerCharge its charge.
var (
	benchAnswer  = []byte(`{"id":"ch_lq2zquqihyjpbj3fbmdur7bnuu","object":"charge","amount":1000,"currency":"usd","status":"succeeded","reference":null,"created":1796185251,"processor_ref":"pi_o8fLbUDDLHgCzziTugxC5wG0","attempts":1,"idempotency_key":"bench-9725-1","payment_method":"pm_sim_approve_visa_card2","customer":null,"initiator":"customer","reattempt":"manual","reattempt_of":null,"metadata":{}}`)
	answerCharge = charge.Charge{ID: "ch_lq2zquqihyjpbj3fbmdur7bnuu", ProcessorRef: "pi_o8fLbUDDLHgCzziTugxC5wG0",
		IdempotencyKey: "bench-9725-1", PaymentMethod: "pm_sim_approve_visa_card2"}
)

// A stored answer reads back byte for byte with its charge's values, however it was stored.
func TestStoredAnswerRoundTrip(t *testing.T) {
	t.Parallel()
	keyed := answerCharge
	keyed.IdempotencyKey = "order-1&2" // rendered escaped: left in the answer
	tests := []struct {
		name   string
		body   []byte
		charge charge.Charge
		max    int // the stored form's most bytes; 0: no bound
	}{
		{"none", nil, answerCharge, 0},
		{"clean approval", benchAnswer, answerCharge, 60},
		{"a value not in the answer", []byte(`{"id":"ch_1","status":"failed"}`), answerCharge, 0},
		{"values the answer repeats", []byte(`{"id":"ch_1","reference":"ch_1","idempotency_key":"k","x":"k"}`),
			charge.Charge{ID: "ch_1", IdempotencyKey: "k"}, 0},
		{"a value inside a longer string", []byte(`{"a":"xch_1","id":"ch_1"}`), charge.Charge{ID: "ch_1"}, 0},
		{"a value rendered escaped", []byte(`{"id":"ch_lq2zquqihyjpbj3fbmdur7bnuu","idempotency_key":"order-1\u00262"}`), keyed, 0},
		{"no values", []byte(`{"error":{"type":"card_error","code":"card_declined","message":"é \u2028 \\"","param":""}}`), charge.Charge{}, 0},
		{"long", []byte(strings.Repeat(`{"a":"b"}`, 2000)), answerCharge, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored := store.EncodeAnswer(tt.body, &tt.charge)
			got, err := store.DecodeAnswer(stored, &tt.charge)
			if err != nil || !bytes.Equal(got, tt.body) {
				t.Fatalf("round trip of %q: got %q, %v", tt.body, got, err)
			}
			if tt.max > 0 && len(stored) > tt.max {
				t.Errorf("an answer of %d bytes is stored in %d, want at most %d", len(tt.body), len(stored), tt.max)
			}
		})
	}
}

// An answer read with values other than those it was stored with fails: it never replays
// bytes that were not sent.
func TestStoredAnswerOtherValues(t *testing.T) {
	t.Parallel()
	stored := store.EncodeAnswer(benchAnswer, &answerCharge)
	other := answerCharge
	other.ProcessorRef = "pi_o8fLbUDDLHgCzziTugxC5wG1"
	if got, err := store.DecodeAnswer(stored, &other); err == nil {
		t.Fatalf("read with another PaymentIntent: got %q, want an error", got)
	}
}

// Answers stored by earlier releases read as they were stored: rendered, or compressed
// against the dictionary alone (encoding 1).
func TestStoredAnswerEarlierEncodings(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"id":"ch_old"}`)
	if got, err := store.DecodeAnswer(raw, &answerCharge); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("an answer stored as rendered: got %q, %v", got, err)
	}
	// An answer of encoding 1 as a release before stored it.
	v1, err := hex.DecodeString("0128b52ffd4100017c009d0300d40535786276327864716a7079743735676277733473356a35326f6f32383730343047636d6874775a5337774672716c3143657550694d4a497962656e63682d31363738342d313473696d5f617070726f76655f766973615f636172643135061008fb6f6ae26ac59833963e28594a1803af01")
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.DecodeAnswer(v1, &charge.Charge{})
	want := `{"id":"ch_5xbv2xdqjpyt75gbws4s5j52oo","object":"charge","amount":1000,"currency":"usd","status":"succeeded"`
	if err != nil || !bytes.HasPrefix(got, []byte(want)) || !bytes.Contains(got, []byte(`"idempotency_key":"bench-16784-14"`)) {
		t.Fatalf("an answer of encoding 1: got %q, %v", got, err)
	}
}

// FuzzStoredAnswer checks that any answer with any values reads back as it was, and that
// no stored form makes the reader panic.
func FuzzStoredAnswer(f *testing.F) {
	f.Add(benchAnswer, answerCharge.ID, answerCharge.ProcessorRef, answerCharge.IdempotencyKey, answerCharge.PaymentMethod)
	f.Add([]byte(`{"id":"a","b":"a","c":"aa"}`), "a", "aa", "", "a")
	f.Add([]byte{2, 0, 0, 0, 0, 1, 2, 3, 4}, "", "", "", "")
	f.Fuzz(func(t *testing.T, body []byte, id, ref, key, pm string) {
		c := charge.Charge{ID: id, ProcessorRef: ref, IdempotencyKey: key, PaymentMethod: pm}
		_, _ = store.DecodeAnswer(body, &c) // any bytes: an error or an answer, never a panic
		if body == nil {
			return
		}
		got, err := store.DecodeAnswer(store.EncodeAnswer(body, &c), &c)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("round trip of %q with %+v: got %q, %v", body, c, got, err)
		}
	})
}

// BenchmarkEncodeAnswer measures deflating a charge's answer on the hot path.
func BenchmarkEncodeAnswer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = store.EncodeAnswer(benchAnswer, &answerCharge)
	}
	b.ReportMetric(float64(len(store.EncodeAnswer(benchAnswer, &answerCharge))), "stored_bytes")
}
