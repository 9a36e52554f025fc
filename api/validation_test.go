package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
)

// TestDecodeStrictRefusesCardData: every body decoded for any endpoint is checked for card
// numbers before anything that could echo a part of it (an unknown parameter's name).
func TestDecodeStrictRefusesCardData(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
	}{
		{"unknown field named by a card", `{"outcome":"succeeded","note":"ok","4111111111111111":"x"}`},
		{"unknown field holding a card", `{"outcome":"succeeded","note":"ok","pan":"4111 1111 1111 1111"}`},
		{"card behind a duplicate key", `{"outcome":"succeeded","note":"4111111111111111","note":"ok"}`},
		{"card with dots", `{"outcome":"succeeded","note":"4111.1111.1111.1111"}`},
		{"card in a wrongly typed field", `{"outcome":4111111111111111,"note":"ok"}`},
		// Where the JSON ends early, the raw text is read for card numbers too.
		{"card after invalid JSON", `{"outcome":"succeeded",,"note":"4111 1111 1111 1111"}`},
		{"card in a body that is not JSON", `outcome=succeeded&pan=4111111111111111`},
		{"card in an unterminated string", `{"note":"4111 1111 1111 1111`},
		{"card split by invalid escapes", `{"note":"4111 1111 1111 1111\x"}`},
		{"card with no-break spaces", "{\"note\":\"4111\u00a01111\u00a01111\u00a01111\"}"},
		{"card with escaped mixed spaces", `{"note":"4111\u00a01111\u202f1111\u20071111"}`},
		{"card with escaped no-break spaces", `{"note":"4111\u00a01111\u00a01111\u00a01111"}`},
		{"card behind a duplicate key", `{"note":"x","note":"4111\u20131111\u20131111\u20131111"}`},
		{"duplicate key named by a card", `{"4111111111111111":"x","4111111111111111":"y"}`},
		// Invisible format characters (category Cf) hide no digits, raw or escaped.
		{"card with zero width spaces", "{\"note\":\"4111\u200b1111\u200b1111\u200b1111\"}"},
		{"card with escaped zero width spaces", `{"outcome":"succeeded","note":"4111\u200b1111\u200b1111\u200b1111"}`},
		{"card with escaped soft hyphens and joiners", `{"note":"4111\u00ad1111\u2060 1111\ufeff1111\u200d"}`},
		{"card with zero width spaces in a key", `{"4111\u200b1111\u200b1111\u200b1111":"x"}`},
		{"card with zero width spaces in a body that is not JSON", "pan=4111\u200b1111\u200b1111\u200b1111"},
		{"card with zero width spaces after invalid JSON", "{\"note\":\"ok\",,\"x\":\"4111\u200b1111\u200b1111\u200b1111"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b resolveBody
			err := decodeStrict([]byte(tc.body), &b)
			if err == nil || err.Code != charge.CodeCardData {
				t.Fatalf("decodeStrict(%s): got %v, want %s", tc.body, err, charge.CodeCardData)
			}
			if strings.Contains(err.Message+err.Param, "1111") {
				t.Fatalf("decodeStrict(%s): error echoes the card number: %+v", tc.body, err)
			}
		})
	}
}

// TestDecodeStrictDuplicateKeys: a key given twice in the same object, at any depth, is
// refused with the key named in Stripe's bracket form; names of the top level match
// fields as encoding/json does, ignoring case.
func TestDecodeStrictDuplicateKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, wantParam string
	}{
		{"top level", `{"outcome":"succeeded","note":"a","outcome":"failed"}`, "outcome"},
		{"top level, other case", `{"outcome":"succeeded","note":"a","OUTCOME":"failed"}`, "OUTCOME"},
		{"top level, escaped", `{"outcome":"succeeded","note":"a","\u006fut\u0063ome":"failed"}`, "outcome"},
		{"top level, Kelvin sign", `{"k":"1","\u212a":"2"}`, "\u212a"}, // encoding/json matches it to k
		{"unknown fields", `{"x":1,"x":2}`, "x"},
		{"nested", `{"note":"a","metadata":{"n":"1","m":"2","n":"3"}}`, "metadata[n]"},
		{"deeper", `{"a":{"b":[{"c":1},{"c":1,"c":2}]}}`, "a[b][1][c]"},
		{"empty key", `{"":1,"":2}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b resolveBody
			err := decodeStrict([]byte(tc.body), &b)
			if err == nil || err.Status != http.StatusBadRequest || err.Code != codeDuplicateParameter || err.Param != tc.wantParam {
				t.Fatalf("decodeStrict(%s): got %+v, want 400 %s on %q", tc.body, err, codeDuplicateParameter, tc.wantParam)
			}
		})
	}
	// Keys that differ only in case are distinct below the top level (metadata), and the
	// same key in two objects is no duplicate.
	for _, body := range []string{
		`{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"1","A":"2"}}`,
		`{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"amount":"1","currency":"2"}}`,
	} {
		if _, err := decodeChargeRequest([]byte(body), scanBody([]byte(body)), lim); err != nil {
			t.Errorf("decodeChargeRequest(%s): got %v, want valid", body, err)
		}
	}
}

// TestDecodeStrictNotAnObject: a body that is JSON but not an object is told so.
func TestDecodeStrictNotAnObject(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`[]`, `"x"`, `null`, `1`, ` [{"outcome":"failed"}]`, `true`, `[] {}`} {
		var b resolveBody
		err := decodeStrict([]byte(body), &b)
		if err == nil || err.Status != http.StatusBadRequest || err.Code != charge.CodeParameterInvalid ||
			err.Message != "the request body must be a JSON object" || err.Param != "" {
			t.Errorf("decodeStrict(%s): got %+v, want 400 parameter_invalid: the request body must be a JSON object", body, err)
		}
	}
}

// TestDecodeStrictInvalidJSON: a body that is not JSON at all is told so.
func TestDecodeStrictInvalidJSON(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`amount=1`, `{`, `{"outcome":}`, `[`} {
		var b resolveBody
		if err := decodeStrict([]byte(body), &b); err == nil || err.Code != "invalid_json" {
			t.Errorf("decodeStrict(%s): got %+v, want invalid_json", body, err)
		}
	}
}

// TestRefuseCardQuery: a card number in a query parameter's name or value is refused before
// the handler runs, and never echoed.
func TestRefuseCardQuery(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(zap.NewNop(), nil)
	e.GET("/v1/charges", func(c echo.Context) error {
		for k := range c.QueryParams() {
			if k != "limit" {
				return invalid("parameter_unknown", k, "unknown parameter "+strconvQuote(k))
			}
		}
		return c.NoContent(http.StatusOK)
	}, refuseCardQuery)
	for _, tc := range []struct {
		query      string
		wantStatus int
	}{
		{"limit=10", http.StatusOK},
		{"4111111111111111=1", http.StatusBadRequest},
		{"limit=4111111111111111", http.StatusBadRequest},
		{"x=4111-1111-1111-1111", http.StatusBadRequest},
		{"x=4111%201111%201111%201111", http.StatusBadRequest},
		{"limit=10&limit=4111111111111111", http.StatusBadRequest},
	} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/charges?"+tc.query, nil))
		if rec.Code != tc.wantStatus {
			t.Errorf("?%s: got %d %s, want %d", tc.query, rec.Code, rec.Body, tc.wantStatus)
			continue
		}
		if tc.wantStatus == http.StatusBadRequest {
			if !strings.Contains(rec.Body.String(), charge.CodeCardData) || strings.Contains(rec.Body.String(), "1111") {
				t.Errorf("?%s: got %s, want %s without the number", tc.query, rec.Body, charge.CodeCardData)
			}
		}
	}
}

// TestChargeViewAttemptsDetail: the detail view always carries attempts_detail, empty when
// no attempt was made; list views do not.
func TestChargeViewAttemptsDetail(t *testing.T) {
	t.Parallel()
	ch := &charge.Charge{ID: "ch_x", Amount: 1, Currency: "usd", Status: charge.StatusFailed, CreatedAt: time.Now()}
	b, err := json.Marshal(chargeView(ch, true))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if got := string(m["attempts_detail"]); got != "[]" {
		t.Fatalf("detail view: got attempts_detail %q, want []", got)
	}
	b, _ = json.Marshal(chargeView(ch, false))
	if strings.Contains(string(b), "attempts_detail") {
		t.Fatalf("list view: got %s, want no attempts_detail", b)
	}
}
