package api

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// canonWriter builds a body's canonical JSON (idempotency.Canonical: one value, object keys
// sorted, no insignificant white space, numbers as written) from the token stream that
// scanBody reads anyway, so that a keyed request's fingerprint costs no second parse.
//
// Every finished value is appended to out. An object's members are appended as they come,
// and rewritten in key order when it closes: its text is then the tail of out, from the
// object's start.
type canonWriter struct {
	out     []byte
	scratch []byte
	stack   []canonFrame
}

// newCanonWriter returns a canonWriter for a body of n bytes: its canonical text, without
// the body's white space, mostly fits in as many.
func newCanonWriter(n int) canonWriter {
	return canonWriter{out: make([]byte, 0, n)}
}

// canonFrame is an object or array open in the canonical text.
type canonFrame struct {
	object bool
	start  int // where its text begins in out
	// members are an object's members so far, their values' text in out.
	members []canonMember
}

// canonMember is one member of an object: its key and where its value's text is in out.
type canonMember struct {
	key        string
	start, end int
}

// begin starts a value and returns where its text begins.
func (w *canonWriter) begin() int {
	if n := len(w.stack); n > 0 && !w.stack[n-1].object && len(w.out) > w.stack[n-1].start+1 {
		w.out = append(w.out, ',') // not the array's first element
	}
	return len(w.out)
}

// str appends the string value s.
func (w *canonWriter) str(key, s string) {
	start := w.begin()
	w.out = appendJSONString(w.out, s)
	w.ended(key, start)
}

// literal appends a number, true, false or null, its text being lit.
func (w *canonWriter) literal(key, lit string) {
	start := w.begin()
	w.out = append(w.out, lit...)
	w.ended(key, start)
}

// open starts an object or an array.
func (w *canonWriter) open(object bool, key string) {
	start := w.begin()
	if !object {
		w.out = append(w.out, '[')
	}
	w.stack = append(w.stack, canonFrame{object: object, start: start})
}

// close ends the innermost object or array; key is its key in the enclosing object.
func (w *canonWriter) close(key string) {
	f := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	if !f.object {
		w.out = append(w.out, ']')
		w.ended(key, f.start)
		return
	}
	// Keys in order; of a key given twice, the last value (as a decoder into a map keeps).
	slices.SortStableFunc(f.members, func(a, b canonMember) int { return strings.Compare(a.key, b.key) })
	if w.scratch == nil {
		w.scratch = make([]byte, 0, cap(w.out)) // room for the whole text as the body holds it
	}
	b := append(w.scratch[:0], '{')
	for i, m := range f.members {
		if i+1 < len(f.members) && f.members[i+1].key == m.key {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendJSONString(b, m.key)
		b = append(b, ':')
		b = append(b, w.out[m.start:m.end]...)
	}
	b = append(b, '}')
	w.scratch = b
	w.out = append(w.out[:f.start], b...)
	w.ended(key, f.start)
}

// ended records the value that began at start as a member of the enclosing object.
func (w *canonWriter) ended(key string, start int) {
	if n := len(w.stack); n > 0 && w.stack[n-1].object {
		f := &w.stack[n-1]
		if f.members == nil {
			f.members = make([]canonMember, 0, 8) // room for every field of a charge
		}
		f.members = append(f.members, canonMember{key: key, start: start, end: len(w.out)})
	}
}

// appendJSONString appends s as encoding/json encodes a string without HTML escaping: `"`,
// `\` and control characters escaped (\b, \f, \n, \r, \t by name), invalid UTF-8 as
// \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
