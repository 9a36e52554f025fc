package sim

import (
	"sort"
	"time"
)

// intentStore keeps PaymentIntents by id and in creation order, oldest first,
// holding at most max of them (the oldest go first).
type intentStore struct {
	max   int
	byID  map[string]*intent
	order []*intent // ascending by (created, seq)
	seq   uint64
}

func newIntentStore(limit int) intentStore {
	return intentStore{max: limit, byID: map[string]*intent{}}
}

// before reports whether a sorts before b: older first, then created first.
func before(a, b *intent) bool {
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	return a.seq < b.seq
}

// add stores pi, giving it the next sequence number, and evicts the oldest
// intents beyond the cap. It returns how many were evicted.
func (st *intentStore) add(pi *intent) int {
	st.seq++
	pi.seq = st.seq
	st.byID[pi.id] = pi
	n := len(st.order)
	if n == 0 || !before(pi, st.order[n-1]) {
		st.order = append(st.order, pi)
	} else {
		// The clock went back: keep the slice sorted.
		i := sort.Search(n, func(i int) bool { return before(pi, st.order[i]) })
		st.order = append(st.order, nil)
		copy(st.order[i+1:], st.order[i:])
		st.order[i] = pi
	}
	evicted := 0
	for len(st.order) > st.max {
		delete(st.byID, st.order[0].id)
		st.order[0] = nil
		st.order = st.order[1:]
		evicted++
	}
	if evicted > 0 && cap(st.order) > 2*len(st.order)+1024 {
		st.order = append([]*intent(nil), st.order...)
	}
	return evicted
}

func (st *intentStore) get(id string) *intent {
	return st.byID[id]
}

// window returns the index range [lo, hi) of intents whose created second is
// within the bounds; a nil bound is open.
func (st *intentStore) window(gte, lte *int64) (lo, hi int) {
	lo, hi = 0, len(st.order)
	if gte != nil {
		lo = sort.Search(len(st.order), func(i int) bool { return st.order[i].created.Unix() >= *gte })
	}
	if lte != nil {
		hi = sort.Search(len(st.order), func(i int) bool { return st.order[i].created.Unix() > *lte })
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func (st *intentStore) reset() {
	*st = newIntentStore(st.max)
}

// visible reports whether search shows pi at now.
func (pi *intent) visible(now time.Time) bool {
	return !now.Before(pi.searchableAt)
}
