package sim

import (
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// paramKind says how a top-level request parameter is shaped in Stripe's form
// encoding.
type paramKind int

const (
	// scalar: name=value.
	scalar paramKind = iota + 1
	// dict: name[key]=value (metadata); name= (empty) clears it.
	dict
	// list: name[]=v, name[0]=v, or name=v repeated (expand, payment_method_types).
	list
	// rangeOrScalar: name=value or name[gt|gte|lt|lte]=value (created).
	rangeOrScalar
	// accepted: any shape, accepted like Stripe and not modelled.
	accepted
)

// params is a parsed Stripe form: url-encoded, with bracketed sub-keys.
type params struct {
	scalars map[string]string
	dicts   map[string]map[string]string
	lists   map[string][]string
}

var rangeOps = map[string]bool{"gt": true, "gte": true, "lt": true, "lte": true}

// errFormKey reports a key whose brackets are unbalanced or misplaced.
var errFormKey = errors.New("malformed form key")

// parseFormKey splits a Stripe form key such as "metadata[charge_id]" or
// "payment_method_options[card][network]" into the parameter name and the
// bracketed parts. "expand[]" gives one empty part.
func parseFormKey(key string) (name string, parts []string, err error) {
	i := strings.IndexAny(key, "[]")
	if i < 0 {
		if key == "" {
			return "", nil, errFormKey
		}
		return key, nil, nil
	}
	if i == 0 || key[i] == ']' {
		return "", nil, errFormKey
	}
	name, rest := key[:i], key[i:]
	for rest != "" {
		if rest[0] != '[' {
			return "", nil, errFormKey
		}
		end := strings.IndexAny(rest[1:], "[]")
		if end < 0 || rest[1+end] != ']' {
			return "", nil, errFormKey
		}
		parts = append(parts, rest[1:1+end])
		rest = rest[end+2:]
	}
	return name, parts, nil
}

// formatFormKey is the inverse of parseFormKey.
func formatFormKey(name string, parts []string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, p := range parts {
		b.WriteByte('[')
		b.WriteString(p)
		b.WriteByte(']')
	}
	return b.String()
}

type listItem struct {
	index int // -1 for "name[]" and repeated "name"
	order int
	value string
}

// parseParams checks values against the parameters an endpoint takes and
// groups them by shape. An unknown parameter is Stripe's parameter_unknown.
func parseParams(values url.Values, allowed map[string]paramKind) (params, *apiError) {
	p := params{
		scalars: map[string]string{},
		dicts:   map[string]map[string]string{},
		lists:   map[string][]string{},
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	items := map[string][]listItem{}
	order := 0
	for _, key := range keys {
		name, parts, err := parseFormKey(key)
		if err != nil {
			return params{}, invalidRequest("parameter_unknown", key, "Invalid parameter name: %s", key)
		}
		kind, ok := allowed[name]
		if !ok {
			return params{}, parameterUnknown(key)
		}
		vs := values[key]
		last := vs[len(vs)-1]
		switch kind {
		case scalar:
			if len(parts) != 0 {
				return params{}, parameterUnknown(key)
			}
			p.scalars[name] = last
		case rangeOrScalar:
			switch {
			case len(parts) == 0:
				p.scalars[name] = last
			case len(parts) == 1 && rangeOps[parts[0]]:
				setDict(p.dicts, name, parts[0], last)
			default:
				return params{}, parameterUnknown(key)
			}
		case dict:
			switch {
			case len(parts) == 0 && last == "":
				if p.dicts[name] == nil {
					p.dicts[name] = map[string]string{}
				}
			case len(parts) == 1 && parts[0] != "":
				setDict(p.dicts, name, parts[0], last)
			default:
				return params{}, invalidRequest("", key, "Invalid hash for parameter %s", name)
			}
		case list:
			index := -1
			switch {
			case len(parts) == 0 || (len(parts) == 1 && parts[0] == ""):
			case len(parts) == 1:
				n, err := strconv.Atoi(parts[0])
				if err != nil || n < 0 || n > 1000 {
					return params{}, invalidRequest("", key, "Invalid array for parameter %s", name)
				}
				index = n
			default:
				return params{}, invalidRequest("", key, "Invalid array for parameter %s", name)
			}
			for _, v := range vs {
				items[name] = append(items[name], listItem{index: index, order: order, value: v})
				order++
			}
		case accepted:
		}
	}
	for name, its := range items {
		sort.SliceStable(its, func(i, j int) bool {
			if its[i].index != its[j].index {
				return its[i].index < its[j].index
			}
			return its[i].order < its[j].order
		})
		out := make([]string, 0, len(its))
		for _, it := range its {
			if it.value != "" {
				out = append(out, it.value)
			}
		}
		p.lists[name] = out
	}
	return p, nil
}

func setDict(d map[string]map[string]string, name, key, value string) {
	m := d[name]
	if m == nil {
		m = map[string]string{}
		d[name] = m
	}
	m[key] = value
}

func (p params) str(name string) (string, bool) {
	v, ok := p.scalars[name]
	return v, ok
}

// integer parses an integer parameter; ok is false when it is absent.
func (p params) integer(name string) (n int64, ok bool, e *apiError) {
	v, ok := p.scalars[name]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, true, invalidInteger(name, v)
	}
	return n, true, nil
}

// boolean parses a boolean parameter; absent is false.
func (p params) boolean(name string) (bool, *apiError) {
	v, ok := p.scalars[name]
	if !ok {
		return false, nil
	}
	switch v {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, invalidBoolean(name, v)
}

// canonicalForm is the order-independent form of a request's parameters that
// the idempotency layer compares.
func canonicalForm(values url.Values) string {
	return values.Encode()
}
