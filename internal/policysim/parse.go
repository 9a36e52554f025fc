package policysim

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/paygate/paygate/retry"
)

// Limits of a simulation file: they keep a simulation small enough to run in
// moments and its numbers far from overflow.
const (
	// MaxMillis bounds every duration of the policy and the script: one day.
	MaxMillis = 86_400_000
	// MaxAttempts bounds policy.max_attempts.
	MaxAttempts = 100
	// MaxSteps bounds the script's length.
	MaxSteps = 1000
	// MaxOperations bounds population.operations.
	MaxOperations = 1_000_000
	// MaxArrivalSpan bounds how long a population's arrivals last:
	// operations / rate_per_sec, in seconds.
	MaxArrivalSpan = 86_400
	// maxString bounds header values and codes, in bytes.
	maxString = 256
	// maxDescription bounds the description, in bytes.
	maxDescription = 10_000
)

// Parse reads a simulation file (the format is in the package
// documentation) and returns it with defaults filled in. Unknown fields,
// values of the wrong type or out of range, both or neither of script and
// population, and malformed JSON are refused with a *FileError naming the
// field or the position.
func Parse(data []byte) (*File, error) {
	var probe any
	if err := json.Unmarshal(data, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			at := se.Offset - 1 // the offending character
			if se.Offset >= int64(len(data)) {
				at = int64(len(data)) // the end of the input
			}
			return nil, positionError(data, at, se.Error())
		}
		return nil, positionError(data, int64(len(data)), err.Error())
	}
	// The data is one valid JSON value: decode it again keeping numbers
	// exact.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, positionError(data, dec.InputOffset(), err.Error())
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, positionError(data, firstNonSpace(data), "the file must be a JSON object")
	}
	return parseFile(newObject("", top))
}

// firstNonSpace returns the offset of the first character that is not JSON
// whitespace.
func firstNonSpace(data []byte) int64 {
	return int64(len(data) - len(bytes.TrimLeft(data, " \t\r\n")))
}

func parseFile(o *object) (*File, error) {
	if err := o.known("description", "policy", "operation", "clock_skew_ms", "script", "population"); err != nil {
		return nil, err
	}
	f := &File{}
	var err error
	if f.Description, err = o.str("description", maxDescription, ""); err != nil {
		return nil, err
	}
	if err := parsePolicy(o, f); err != nil {
		return nil, err
	}
	if f.Operation, err = parseOperation(o); err != nil {
		return nil, err
	}
	skew, err := o.integer("clock_skew_ms", -MaxMillis, MaxMillis, 0, "must be an integer number of milliseconds")
	if err != nil {
		return nil, err
	}
	f.ClockSkew = time.Duration(skew) * time.Millisecond

	_, hasScript := o.m["script"]
	_, hasPopulation := o.m["population"]
	switch {
	case hasScript && hasPopulation:
		return nil, fieldError(o.path("population"), "not allowed with script: give one of script and population")
	case !hasScript && !hasPopulation:
		return nil, fieldError(o.path("script"), "required: give script (one operation) or population (many)")
	case hasScript:
		f.Script, err = parseScript(o)
	default:
		f.Population, err = parsePopulation(o)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// parsePolicy reads policy, its budget and its breaker into f.
func parsePolicy(top *object, f *File) error {
	p := retry.DefaultPolicy()
	budget := retry.DefaultScopeBudget()
	breaker := retry.DefaultBreakerConfig()
	f.Policy, f.Budget, f.Breaker = p, &budget, &breaker
	v, ok := top.m["policy"]
	if !ok {
		return nil
	}
	o, err := top.object("policy", v)
	if err != nil {
		return err
	}
	if err := o.known("base_ms", "cap_ms", "max_attempts", "attempt_timeout_ms", "deadline_ms",
		"min_attempt_ms", "retry_after_cap_ms", "answer_margin_ms", "busy_wait_ms",
		"max_clock_skew_ms", "budget", "breaker"); err != nil {
		return err
	}
	positive := []struct {
		name string
		dst  *time.Duration
	}{
		{"base_ms", &p.Base},
		{"cap_ms", &p.Cap},
		{"attempt_timeout_ms", &p.AttemptTimeout},
		{"deadline_ms", &p.Deadline},
	}
	for _, fd := range positive {
		if *fd.dst, err = o.millis(fd.name, 1, *fd.dst); err != nil {
			return err
		}
	}
	nonNegative := []struct {
		name string
		dst  *time.Duration
	}{
		{"min_attempt_ms", &p.MinAttempt},
		{"retry_after_cap_ms", &p.RetryAfterCap},
		{"answer_margin_ms", &p.AnswerMargin},
		{"busy_wait_ms", &p.BusyWait},
		{"max_clock_skew_ms", &p.MaxClockSkew},
	}
	for _, fd := range nonNegative {
		if *fd.dst, err = o.millis(fd.name, 0, *fd.dst); err != nil {
			return err
		}
	}
	n, err := o.integer("max_attempts", 1, MaxAttempts, int64(p.MaxAttempts), "must be a positive integer")
	if err != nil {
		return err
	}
	p.MaxAttempts = int(n)
	if err := p.Validate(); err != nil {
		return configError(o, err)
	}
	f.Policy = p

	if v, ok := o.m["budget"]; ok {
		if v == nil {
			f.Budget = nil
		} else if f.Budget, err = parseBudget(o, v); err != nil {
			return err
		}
	}
	if v, ok := o.m["breaker"]; ok {
		if v == nil {
			f.Breaker = nil
		} else if f.Breaker, err = parseBreaker(o, v); err != nil {
			return err
		}
	}
	return nil
}

// configError turns a *retry.ConfigError, whose field is named as in the
// policy object, into a *FileError under o.
func configError(o *object, err error) error {
	var ce *retry.ConfigError
	if errors.As(err, &ce) {
		return fieldError(o.path(ce.Field), "%s", ce.Problem)
	}
	return fieldError(o.prefix, "%v", err)
}

func parseBudget(policy *object, v any) (*retry.BudgetConfig, error) {
	o, err := policy.object("budget", v)
	if err != nil {
		return nil, err
	}
	if err := o.known("ratio", "min_per_sec", "burst"); err != nil {
		return nil, err
	}
	c := retry.DefaultScopeBudget()
	if c.Ratio, err = o.number("ratio", 0, 1000, false, c.Ratio); err != nil {
		return nil, err
	}
	if c.MinPerSec, err = o.number("min_per_sec", 0, 1e6, false, c.MinPerSec); err != nil {
		return nil, err
	}
	if c.Burst, err = o.number("burst", 1, 1e9, false, c.Burst); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, configError(policy, err)
	}
	return &c, nil
}

func parseBreaker(policy *object, v any) (*retry.BreakerConfig, error) {
	o, err := policy.object("breaker", v)
	if err != nil {
		return nil, err
	}
	if err := o.known("consecutive_failures", "failure_ratio", "min_requests", "window_ms",
		"open_for_ms", "probes"); err != nil {
		return nil, err
	}
	c := retry.DefaultBreakerConfig()
	ints := []struct {
		name string
		dst  *int
	}{
		{"consecutive_failures", &c.ConsecutiveFailures},
		{"min_requests", &c.MinRequests},
		{"probes", &c.Probes},
	}
	for _, fd := range ints {
		n, err := o.integer(fd.name, 1, MaxOperations, int64(*fd.dst), "must be a positive integer")
		if err != nil {
			return nil, err
		}
		*fd.dst = int(n)
	}
	if c.FailureRatio, err = o.number("failure_ratio", 0, 1, true, c.FailureRatio); err != nil {
		return nil, err
	}
	if c.Window, err = o.millis("window_ms", 1, c.Window); err != nil {
		return nil, err
	}
	if c.OpenFor, err = o.millis("open_for_ms", 1, c.OpenFor); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, configError(policy, err)
	}
	return &c, nil
}

func parseOperation(top *object) (Operation, error) {
	op := Operation{Method: "POST", IdempotencyKey: true}
	v, ok := top.m["operation"]
	if !ok {
		return op, nil
	}
	o, err := top.object("operation", v)
	if err != nil {
		return op, err
	}
	if err := o.known("method", "idempotency_key", "cancel_at_ms"); err != nil {
		return op, err
	}
	if op.Method, err = o.str("method", maxString, op.Method); err != nil {
		return op, err
	}
	if !slices.Contains([]string{"GET", "POST", "DELETE"}, op.Method) {
		return op, fieldError(o.path("method"), "must be GET, POST or DELETE")
	}
	if op.IdempotencyKey, err = o.boolean("idempotency_key", op.IdempotencyKey); err != nil {
		return op, err
	}
	if op.CancelAt, err = o.millis("cancel_at_ms", 1, 0); err != nil {
		return op, err
	}
	return op, nil
}

func parseScript(top *object) ([]Step, error) {
	list, ok := top.m["script"].([]any)
	if !ok || len(list) == 0 {
		return nil, fieldError(top.path("script"), "must be a non-empty array of steps")
	}
	if len(list) > MaxSteps {
		return nil, fieldError(top.path("script"), "must hold at most %d steps", MaxSteps)
	}
	steps := make([]Step, len(list))
	for i, v := range list {
		s, err := parseStep(top.path("script")+"["+strconv.Itoa(i)+"]", v)
		if err != nil {
			return nil, err
		}
		steps[i] = s
	}
	return steps, nil
}

func parseStep(path string, v any) (Step, error) {
	var s Step
	m, ok := v.(map[string]any)
	if !ok {
		return s, fieldError(path, "must be an object")
	}
	o := newObject(path, m)
	if err := o.known("status", "latency_ms", "retry_after", "date", "timeout", "refused",
		"dropped", "body_code", "replayed", "should_retry"); err != nil {
		return s, err
	}
	var err error
	flags := []struct {
		name string
		dst  *bool
	}{
		{"timeout", &s.Timeout},
		{"refused", &s.Refused},
		{"dropped", &s.Dropped},
	}
	set := ""
	for _, fd := range flags {
		if *fd.dst, err = o.boolean(fd.name, false); err != nil {
			return s, err
		}
		if *fd.dst {
			if set != "" {
				return s, fieldError(o.path(fd.name), "must not be combined with %s", set)
			}
			set = fd.name
		}
	}
	if s.Latency, err = o.millis("latency_ms", 0, 0); err != nil {
		return s, err
	}
	if set != "" {
		// No answer: nothing of an answer may be given.
		for _, name := range []string{"status", "retry_after", "date", "body_code", "replayed", "should_retry"} {
			if _, ok := o.m[name]; ok {
				return s, fieldError(o.path(name), "not allowed in a step without an answer (%s)", set)
			}
		}
		return s, nil
	}
	if _, ok := o.m["status"]; !ok {
		return s, fieldError(o.path("status"), "required (or timeout, refused or dropped)")
	}
	status, err := o.integer("status", 200, 599, 0, "must be an HTTP status from 200 to 599")
	if err != nil {
		return s, err
	}
	s.Status = int(status)
	if s.RetryAfter, err = o.retryAfter("retry_after"); err != nil {
		return s, err
	}
	if _, s.HasDate = o.m["date"]; s.HasDate {
		if s.Date, err = o.date("date"); err != nil {
			return s, err
		}
	}
	if s.BodyCode, err = o.str("body_code", maxString, ""); err != nil {
		return s, err
	}
	if s.Replayed, err = o.boolean("replayed", false); err != nil {
		return s, err
	}
	if _, ok := o.m["should_retry"]; ok {
		b, err := o.boolean("should_retry", false)
		if err != nil {
			return s, err
		}
		s.ShouldRetry = strconv.FormatBool(b)
	}
	return s, nil
}

func parsePopulation(top *object) (*Population, error) {
	o, err := top.object("population", top.m["population"])
	if err != nil {
		return nil, err
	}
	if err := o.known("operations", "rate_per_sec", "outage", "error_rate", "latency_ms"); err != nil {
		return nil, err
	}
	for _, name := range []string{"operations", "rate_per_sec"} {
		if _, ok := o.m[name]; !ok {
			return nil, fieldError(o.path(name), "required")
		}
	}
	p := &Population{Latency: 40 * time.Millisecond}
	n, err := o.integer("operations", 1, MaxOperations, 0, "must be a positive integer")
	if err != nil {
		return nil, err
	}
	p.Operations = int(n)
	if p.RatePerSec, err = o.number("rate_per_sec", 0, 1e6, true, 0); err != nil {
		return nil, err
	}
	if p.RatePerSec == 0 {
		return nil, fieldError(o.path("rate_per_sec"), "must be a positive number")
	}
	if float64(p.Operations)/p.RatePerSec > MaxArrivalSpan {
		return nil, fieldError(o.path("rate_per_sec"), "too low: the arrivals would last more than %d s", MaxArrivalSpan)
	}
	if p.ErrorRate, err = o.number("error_rate", 0, 1, false, 0); err != nil {
		return nil, err
	}
	if p.Latency, err = o.millis("latency_ms", 0, p.Latency); err != nil {
		return nil, err
	}
	if v, ok := o.m["outage"]; ok {
		if p.Outage, err = parseOutage(o, v); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func parseOutage(population *object, v any) (*Outage, error) {
	o, err := population.object("outage", v)
	if err != nil {
		return nil, err
	}
	if err := o.known("from_ms", "to_ms", "status"); err != nil {
		return nil, err
	}
	if _, ok := o.m["to_ms"]; !ok {
		return nil, fieldError(o.path("to_ms"), "required")
	}
	out := &Outage{Status: 503}
	if out.From, err = o.millisUpTo("from_ms", 0, 2*MaxMillis, 0); err != nil {
		return nil, err
	}
	if out.To, err = o.millisUpTo("to_ms", 1, 2*MaxMillis, 0); err != nil {
		return nil, err
	}
	if out.To <= out.From {
		return nil, fieldError(o.path("to_ms"), "must be greater than from_ms")
	}
	const problem = "must be an error status the loop retries: 429, or 500 to 599"
	status, err := o.integer("status", 200, 599, int64(out.Status), problem)
	if err != nil {
		return nil, err
	}
	if status != 429 && status < 500 {
		return nil, fieldError(o.path("status"), "%s; got %d", problem, status)
	}
	out.Status = int(status)
	return out, nil
}

// object is one JSON object of the file, with its path.
type object struct {
	prefix string // "" at the top, else the object's path
	m      map[string]any
}

func newObject(prefix string, m map[string]any) *object {
	return &object{prefix: prefix, m: m}
}

// path returns the path of the field name.
func (o *object) path(name string) string {
	if o.prefix == "" {
		return name
	}
	return o.prefix + "." + name
}

// known refuses the first unknown field, in sorted order so the error does
// not depend on map iteration.
func (o *object) known(names ...string) error {
	var unknown []string
	for k := range o.m {
		if !slices.Contains(names, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fieldError(o.path(fieldName(unknown[0])), "unknown field")
}

// fieldName returns a field's name as it appears in a path: quoted unless
// it is made of lowercase letters, digits and underscores, so that an empty
// or odd name still reads as one.
func fieldName(name string) string {
	plain := name != ""
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return strconv.Quote(name)
}

// object returns the field name, whose value is v, as an object.
func (o *object) object(name string, v any) (*object, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fieldError(o.path(name), "must be an object")
	}
	return newObject(o.path(name), m), nil
}

// integer returns the integer field name, within [lo, hi], or def when it is
// absent. problem describes a value that is not such an integer.
func (o *object) integer(name string, lo, hi, def int64, problem string) (int64, error) {
	v, ok := o.m[name]
	if !ok {
		return def, nil
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, fieldError(o.path(name), "%s", problem)
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, fieldError(o.path(name), "%s", problem)
	}
	if f < float64(lo) {
		return 0, fieldError(o.path(name), "%s", problem)
	}
	if f > float64(hi) {
		return 0, fieldError(o.path(name), "must be at most %d", hi)
	}
	return int64(f), nil
}

// millis returns the field name, in milliseconds from lo (0 or 1) up to
// MaxMillis, or def when it is absent.
func (o *object) millis(name string, lo int64, def time.Duration) (time.Duration, error) {
	return o.millisUpTo(name, lo, MaxMillis, def)
}

func (o *object) millisUpTo(name string, lo, hi int64, def time.Duration) (time.Duration, error) {
	problem := "must be a positive integer"
	if lo == 0 {
		problem = "must be a non-negative integer"
	}
	n, err := o.integer(name, lo, hi, def.Milliseconds(), problem)
	return time.Duration(n) * time.Millisecond, err
}

// number returns the number field name within [lo, hi] (]lo, hi] when
// openLow), or def when it is absent.
func (o *object) number(name string, lo, hi float64, openLow bool, def float64) (float64, error) {
	v, ok := o.m[name]
	if !ok {
		return def, nil
	}
	num, isNum := v.(json.Number)
	f, err := strconv.ParseFloat(string(num), 64)
	inRange := f >= lo && f <= hi && (!openLow || f > lo)
	if !isNum || err != nil || !inRange {
		low := "from"
		if openLow {
			low = "above"
		}
		return 0, fieldError(o.path(name), "must be a number %s %s up to %s", low, fmtNumber(lo), fmtNumber(hi))
	}
	return f, nil
}

// fmtNumber formats a limit for a message.
func fmtNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// boolean returns the boolean field name, or def when it is absent.
func (o *object) boolean(name string, def bool) (bool, error) {
	v, ok := o.m[name]
	if !ok {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fieldError(o.path(name), "must be true or false")
	}
	return b, nil
}

// str returns the string field name, at most limit bytes, or def when it is
// absent.
func (o *object) str(name string, limit int, def string) (string, error) {
	v, ok := o.m[name]
	if !ok {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fieldError(o.path(name), "must be a string")
	}
	if len(s) > limit {
		return "", fieldError(o.path(name), "must be at most %d bytes", limit)
	}
	return s, nil
}

// retryAfter returns a Retry-After header value: any string a processor can send in a
// header (no control characters but the tab), "" for none, or a non-negative integer taken
// as delta-seconds. A value the loop does not read as delta-seconds or an HTTP-date is
// kept: the loop ignores it and backs off, as the gateway does, and the text output says so.
func (o *object) retryAfter(name string) (string, error) {
	v, ok := o.m[name]
	if !ok {
		return "", nil
	}
	if _, isNum := v.(json.Number); isNum {
		n, err := o.integer(name, 0, math.MaxInt32, 0,
			"must be a string (the header's value, sent as it is) or a whole number of seconds")
		return strconv.FormatInt(n, 10), err
	}
	return o.headerValue(name)
}

// date returns a Date header value: "" for none, or any string a processor can send in a
// header. The loop moves its clock toward an HTTP-date by at most policy.MaxClockSkew and
// ignores anything else (retry.ParseRetryAfter), as the gateway does: a date far from the
// fake clock, or one that is no date, is simulated as the gateway reads it, and the text
// output says so.
func (o *object) date(name string) (string, error) {
	return o.headerValue(name)
}

// headerValue returns the string field name as an HTTP header's value: at most maxString
// bytes, without control characters but the tab, which no processor can send (RFC 9110
// section 5.5).
func (o *object) headerValue(name string) (string, error) {
	v, ok := o.m[name]
	if !ok {
		return "", nil
	}
	if _, isStr := v.(string); !isStr {
		return "", fieldError(o.path(name), "must be a string, the header's value")
	}
	s, err := o.str(name, maxString, "")
	if err != nil {
		return "", err
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return "", fieldError(o.path(name), "must be a header value: no control characters (byte %d is %#02x)", i, c)
		}
	}
	return s, nil
}

// clip bounds a value quoted in an error message.
func clip(s string) string {
	const limit = 64
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
