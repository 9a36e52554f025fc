package processor

import "time"

// KeyWindow is the 24 h rule: no write under a processor idempotency key once KeyWindow has
// passed since its first use, on the database clock. The processor keeps a key 24 h; the
// hour of margin covers clock skew and long runs. After it, a key is only read.
const KeyWindow = 23 * time.Hour

// KeyClosesAt returns when the 24 h rule closes a key first used at first: no write under it
// from then on.
func KeyClosesAt(first time.Time) time.Time { return first.Add(KeyWindow) }

// KeyOpen reports whether a write under a key first used at first is allowed at now.
func KeyOpen(first, now time.Time) bool { return now.Before(KeyClosesAt(first)) }
