package sim

import (
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// listJSON is Stripe's list object.
type listJSON struct {
	Object  string              `json:"object"`
	Data    []paymentIntentJSON `json:"data"`
	HasMore bool                `json:"has_more"`
	URL     string              `json:"url"`
}

var getIntentParams = map[string]paramKind{"expand": list, "client_secret": scalar}

// handleGetIntent serves GET /v1/payment_intents/{id}.
func (s *Server) handleGetIntent(r *http.Request, id string) response {
	p, e := parseParams(r.URL.Query(), getIntentParams)
	if e != nil {
		return errorResponse(e)
	}
	x, e := parseExpand(p.lists["expand"], "")
	if e != nil {
		return errorResponse(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pi := s.intents.get(id)
	if pi == nil {
		return errorResponse(resourceMissing(http.StatusNotFound, "intent", "payment_intent", id))
	}
	pi.settle(s.now())
	return jsonResponse(http.StatusOK, s.renderIntent(pi, x))
}

var listIntentParams = map[string]paramKind{
	"created":        rangeOrScalar,
	"customer":       scalar,
	"ending_before":  scalar,
	"expand":         list,
	"limit":          scalar,
	"starting_after": scalar,
}

// parseLimit reads limit: 1 to 100, default 10.
func parseLimit(p params) (int, *apiError) {
	n, ok, e := p.integer("limit")
	switch {
	case e != nil:
		return 0, e
	case !ok:
		return 10, nil
	case n < 1 || n > 100:
		return 0, invalidRequest("", "limit", "Invalid limit: must be between 1 and 100.")
	}
	return int(n), nil
}

// createdBounds turns created, created[gt], [gte], [lt] and [lte] into an
// inclusive range of Unix seconds; a nil bound is open.
func createdBounds(p params) (gte, lte *int64, e *apiError) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	apply := func(op string, v int64) {
		switch op {
		case "eq":
			lo, hi = max(lo, v), min(hi, v)
		case "gt":
			if v == math.MaxInt64 {
				lo, hi = 1, 0 // nothing is later
				return
			}
			lo = max(lo, v+1)
		case "gte":
			lo = max(lo, v)
		case "lt":
			if v == math.MinInt64 {
				lo, hi = 1, 0 // nothing is earlier
				return
			}
			hi = min(hi, v-1)
		case "lte":
			hi = min(hi, v)
		}
	}
	parse := func(param, raw string) (int64, *apiError) {
		v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil {
			return 0, invalidInteger(param, sanitize(raw))
		}
		return v, nil
	}
	if raw, ok := p.scalars["created"]; ok {
		v, e := parse("created", raw)
		if e != nil {
			return nil, nil, e
		}
		apply("eq", v)
	}
	ops := p.dicts["created"]
	keys := make([]string, 0, len(ops))
	for op := range ops {
		keys = append(keys, op)
	}
	sort.Strings(keys)
	for _, op := range keys {
		v, e := parse("created["+op+"]", ops[op])
		if e != nil {
			return nil, nil, e
		}
		apply(op, v)
	}
	if lo != math.MinInt64 {
		gte = &lo
	}
	if hi != math.MaxInt64 {
		lte = &hi
	}
	return gte, lte, nil
}

// handleListIntents serves GET /v1/payment_intents: newest first, with
// created filters, customer, limit and cursors.
func (s *Server) handleListIntents(r *http.Request) response {
	p, e := parseParams(r.URL.Query(), listIntentParams)
	if e != nil {
		return errorResponse(e)
	}
	limit, e := parseLimit(p)
	if e != nil {
		return errorResponse(e)
	}
	x, e := parseExpand(p.lists["expand"], "data.")
	if e != nil {
		return errorResponse(e)
	}
	gte, lte, e := createdBounds(p)
	if e != nil {
		return errorResponse(e)
	}
	after, hasAfter := p.str("starting_after")
	beforeID, hasBefore := p.str("ending_before")
	if hasAfter && hasBefore && after != "" && beforeID != "" {
		return errorResponse(invalidRequest("", "ending_before",
			"You may only specify one of these parameters: ending_before, starting_after."))
	}
	customer, _ := p.str("customer")

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	st := &s.intents
	lo, hi := st.window(gte, lte)
	match := func(pi *intent) bool { return customer == "" || pi.customer == customer }
	var picked []*intent
	hasMore := false
	switch {
	case beforeID != "":
		cur := st.get(beforeID)
		if cur == nil {
			return errorResponse(resourceMissing(http.StatusBadRequest, "ending_before", "payment_intent", beforeID))
		}
		// The limit intents just newer than the cursor, still newest first.
		k := sort.Search(hi-lo, func(i int) bool { return before(cur, st.order[lo+i]) }) + lo
		for i := k; i < hi; i++ {
			if !match(st.order[i]) {
				continue
			}
			if len(picked) == limit {
				hasMore = true
				break
			}
			picked = append(picked, st.order[i])
		}
		for i, j := 0, len(picked)-1; i < j; i, j = i+1, j-1 {
			picked[i], picked[j] = picked[j], picked[i]
		}
	default:
		top := hi
		if after != "" {
			cur := st.get(after)
			if cur == nil {
				return errorResponse(resourceMissing(http.StatusBadRequest, "starting_after", "payment_intent", after))
			}
			top = sort.Search(hi-lo, func(i int) bool { return !before(st.order[lo+i], cur) }) + lo
		}
		for i := top - 1; i >= lo; i-- {
			if !match(st.order[i]) {
				continue
			}
			if len(picked) == limit {
				hasMore = true
				break
			}
			picked = append(picked, st.order[i])
		}
	}
	out := listJSON{Object: "list", Data: make([]paymentIntentJSON, 0, len(picked)), HasMore: hasMore, URL: "/v1/payment_intents"}
	for _, pi := range picked {
		pi.settle(now)
		out.Data = append(out.Data, s.renderIntent(pi, x))
	}
	return jsonResponse(http.StatusOK, out)
}
