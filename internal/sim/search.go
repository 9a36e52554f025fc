package sim

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// searchJSON is Stripe's search_result object.
type searchJSON struct {
	Object     string              `json:"object"`
	Data       []paymentIntentJSON `json:"data"`
	HasMore    bool                `json:"has_more"`
	NextPage   *string             `json:"next_page"`
	URL        string              `json:"url"`
	TotalCount *int                `json:"total_count,omitempty"`
}

var searchIntentParams = map[string]paramKind{"query": scalar, "limit": scalar, "page": scalar, "expand": list}

// pageCursor is the position after which a search page continues: the
// created time and sequence number of the last intent returned.
type pageCursor struct {
	created time.Time
	seq     uint64
}

const pagePrefix = "sim1:"

func (c pageCursor) token() string {
	raw := fmt.Sprintf("%s%d:%d", pagePrefix, c.created.UnixNano(), c.seq)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// parsePageToken decodes a next_page token.
func parsePageToken(tok string) (pageCursor, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return pageCursor{}, false
	}
	rest, ok := strings.CutPrefix(string(raw), pagePrefix)
	if !ok {
		return pageCursor{}, false
	}
	ns, seq, ok := strings.Cut(rest, ":")
	if !ok {
		return pageCursor{}, false
	}
	n, err1 := strconv.ParseInt(ns, 10, 64)
	q, err2 := strconv.ParseUint(seq, 10, 64)
	if err1 != nil || err2 != nil {
		return pageCursor{}, false
	}
	return pageCursor{created: time.Unix(0, n), seq: q}, true
}

// handleSearchIntents serves GET /v1/payment_intents/search. A PaymentIntent
// shows up only once the search lag has passed since its creation.
func (s *Server) handleSearchIntents(r *http.Request) response {
	p, e := parseParams(r.URL.Query(), searchIntentParams)
	if e != nil {
		return errorResponse(e)
	}
	raw, ok := p.str("query")
	if !ok || strings.TrimSpace(raw) == "" {
		return errorResponse(parameterMissing("query"))
	}
	q, err := parseSearchQuery(raw)
	if err != nil {
		return errorResponse(invalidRequest("", "query", "Invalid search query: %s.", sanitize(err.Error())))
	}
	limit, e := parseLimit(p)
	if e != nil {
		return errorResponse(e)
	}
	var expand []string
	wantTotal := false
	for _, v := range p.lists["expand"] {
		if v == "total_count" {
			wantTotal = true
			continue
		}
		expand = append(expand, v)
	}
	x, e := parseExpand(expand, "data.")
	if e != nil {
		return errorResponse(e)
	}
	var cursor *pageCursor
	if tok, ok := p.str("page"); ok && tok != "" {
		c, ok := parsePageToken(tok)
		if !ok {
			return errorResponse(invalidRequest("", "page", "Invalid page: %s", sanitize(tok)))
		}
		cursor = &c
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var picked []*intent
	hasMore, total := false, 0
	for i := len(s.intents.order) - 1; i >= 0; i-- {
		pi := s.intents.order[i]
		if !pi.visible(now) {
			continue
		}
		pi.settle(now)
		if !q.match(pi) {
			continue
		}
		total++
		if cursor != nil && !before(pi, &intent{created: cursor.created, seq: cursor.seq}) {
			continue
		}
		if len(picked) == limit {
			hasMore = true
			if !wantTotal {
				break
			}
			continue
		}
		picked = append(picked, pi)
	}
	out := searchJSON{
		Object:  "search_result",
		Data:    make([]paymentIntentJSON, 0, len(picked)),
		HasMore: hasMore,
		URL:     "/v1/payment_intents/search",
	}
	for _, pi := range picked {
		out.Data = append(out.Data, s.renderIntent(pi, x))
	}
	if hasMore && len(picked) > 0 {
		last := picked[len(picked)-1]
		tok := pageCursor{created: last.created, seq: last.seq}.token()
		out.NextPage = &tok
	}
	if wantTotal {
		out.TotalCount = &total
	}
	return jsonResponse(http.StatusOK, out)
}
