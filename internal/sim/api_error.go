package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Stripe's error types, as in the "type" field of an error.
const (
	typeAPI            = "api_error"
	typeCard           = "card_error"
	typeIdempotency    = "idempotency_error"
	typeInvalidRequest = "invalid_request_error"
)

// apiError is the body of Stripe's error envelope {"error": {...}} plus the
// HTTP status it is answered with. Fields are in Stripe's (alphabetical) order;
// empty ones are left out, as Stripe does.
type apiError struct {
	status int

	AdviceCode         string `json:"advice_code,omitempty"`
	Charge             string `json:"charge,omitempty"`
	Code               string `json:"code,omitempty"`
	DeclineCode        string `json:"decline_code,omitempty"`
	DocURL             string `json:"doc_url,omitempty"`
	Message            string `json:"message"`
	NetworkAdviceCode  string `json:"network_advice_code,omitempty"`
	NetworkDeclineCode string `json:"network_decline_code,omitempty"`
	Param              string `json:"param,omitempty"`
	PaymentIntent      any    `json:"payment_intent,omitempty"`
	PaymentMethod      any    `json:"payment_method,omitempty"`
	RequestLogURL      string `json:"request_log_url,omitempty"`
	Type               string `json:"type"`

	// header holds extra response headers (Stripe-Should-Retry, Retry-After).
	header http.Header
}

// response is one complete answer: what the idempotency layer stores and
// replays byte for byte.
type response struct {
	status int
	body   []byte
	header http.Header
}

// errorResponse renders e in Stripe's envelope.
func errorResponse(e *apiError) response {
	return response{status: e.status, body: marshal(map[string]any{"error": e}), header: e.header}
}

// jsonResponse renders v as a 200 (or status) answer.
func jsonResponse(status int, v any) response {
	return response{status: status, body: marshal(v)}
}

// marshal encodes v like Stripe: indented by two spaces, newline-terminated.
func marshal(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Only the simulator's own types are marshalled; they always encode.
		panic(fmt.Sprintf("sim: encoding response: %v", err))
	}
	return append(b, '\n')
}

// write sends r on w with the JSON content type.
func (r response) write(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.header {
		h[k] = vs
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(r.body)))
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
}

func docURL(code string) string {
	if code == "" {
		return ""
	}
	return "https://stripe.com/docs/error-codes/" + hyphenate(code)
}

func hyphenate(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '_' {
			b[i] = '-'
		}
	}
	return string(b)
}

// invalidRequest is a 400 invalid_request_error.
func invalidRequest(code, param, format string, args ...any) *apiError {
	return &apiError{
		status:  http.StatusBadRequest,
		Type:    typeInvalidRequest,
		Code:    code,
		DocURL:  docURL(code),
		Message: fmt.Sprintf(format, args...),
		Param:   param,
	}
}

func parameterMissing(param string) *apiError {
	return invalidRequest("parameter_missing", param, "Missing required param: %s.", param)
}

func parameterUnknown(param string) *apiError {
	return invalidRequest("parameter_unknown", param,
		"Received unknown parameter: %s", param)
}

func invalidInteger(param, value string) *apiError {
	return invalidRequest("parameter_invalid_integer", param, "Invalid integer: %s", value)
}

func invalidBoolean(param, value string) *apiError {
	return invalidRequest("", param, "Invalid boolean: %s", value)
}

// resourceMissing is Stripe's "No such ..." error: 404 for an object named in
// the path, 400 for one named in a parameter.
func resourceMissing(status int, param, object, id string) *apiError {
	e := invalidRequest("resource_missing", param, "No such %s: '%s'", object, id)
	e.status = status
	return e
}

func notFoundRoute(method, path string) *apiError {
	return &apiError{
		status: http.StatusNotFound,
		Type:   typeInvalidRequest,
		Message: fmt.Sprintf("Unrecognized request URL (%s: %s). Please see https://stripe.com/docs "+
			"or we can help at https://support.stripe.com/.", method, path),
	}
}

// statusError is the answer a fault step gives instead of executing: a 429,
// 409, 5xx ... in Stripe's shape. code overrides the default code of the
// status; message the default message.
func statusError(status int, code, message string) *apiError {
	e := &apiError{status: status, Type: typeInvalidRequest, header: http.Header{}}
	switch {
	case status == http.StatusTooManyRequests:
		if code == "" {
			code = "rate_limit"
		}
		e.Message = "Too many requests hit the API too quickly. We recommend an exponential backoff of your requests."
		if code == "lock_timeout" {
			e.Message = "This object cannot be accessed right now because another API request or Stripe " +
				"process is currently accessing it. If you see this error intermittently, retry the request."
			e.header.Set("Stripe-Should-Retry", "true")
		}
	case status == http.StatusConflict:
		if code == "" {
			code = "idempotency_key_in_use"
		}
		e.Message = "There is currently another in-progress request using this Idempotent Key " +
			"(that probably means you submitted twice, and the other request is still going through). " +
			"Please try again later."
		e.header.Set("Stripe-Should-Retry", "true")
	case status == http.StatusPaymentRequired:
		e.Type = typeCard
		e.DeclineCode = code
		if e.DeclineCode == "" {
			e.DeclineCode = "generic_decline"
		}
		code = "card_declined"
		e.Message = "Your card was declined."
	case status == http.StatusFailedDependency:
		// Stripe's 424: a dependency outside the processor failed while the request ran.
		e.Type = typeAPI
		e.Message = "The request could not be completed because an external dependency failed. " +
			"Check the state of the objects it concerns before trying again."
	case status >= 500:
		e.Type = typeAPI
		e.Message = serverErrorMessage(status)
	default:
		e.Message = http.StatusText(status)
		if e.Message == "" {
			e.Message = "Invalid request."
		}
	}
	e.Code = code
	e.DocURL = docURL(code)
	if message != "" {
		e.Message = message
	}
	return e
}

func serverErrorMessage(status int) string {
	switch status {
	case http.StatusServiceUnavailable:
		return "Stripe is temporarily unavailable. Please try again later."
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return "An upstream service did not answer in time. Please try again later."
	default:
		return "Sorry, something went wrong. We've already been notified of the problem, " +
			"but if you need any help, you can reach us at support.stripe.com/contact."
	}
}
