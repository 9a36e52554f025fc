package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
)

// compiledSQL is a statement with named arguments turned positional, and the names in
// their positions.
type compiledSQL struct {
	sql   string
	names []string
}

// compiledStatements holds each statement compiled once: the hot path's statements are
// assembled from parts and would otherwise be rewritten on every call.
var compiledStatements sync.Map // the statement with named arguments → compiledSQL

// positional returns sql with its @name arguments numbered, and args in that order. A name
// that args lacks is an error: the statement would otherwise run with a NULL in its place.
func positional(sql string, args pgx.NamedArgs) (string, []any, error) {
	c, ok := compiledStatements.Load(sql)
	if !ok {
		// Rewriting with each name as its own value yields the names in their positions.
		names := make(pgx.NamedArgs, len(args))
		for k := range args {
			names[k] = k
		}
		out, order, _ := names.RewriteQuery(context.Background(), nil, sql, nil)
		cs := compiledSQL{sql: out, names: make([]string, len(order))}
		for i, n := range order {
			name, ok := n.(string)
			if !ok {
				return "", nil, fmt.Errorf("store: argument $%d of a statement has no value", i+1)
			}
			cs.names[i] = name
		}
		c, _ = compiledStatements.LoadOrStore(sql, cs)
	}
	cs := c.(compiledSQL)
	vals := make([]any, len(cs.names))
	for i, n := range cs.names {
		vals[i] = args[n]
	}
	return cs.sql, vals, nil
}

// assembled holds the hot path's statements as assembled for each variant: a variant's
// parts are joined once.
var assembled sync.Map // a variant (a comparable struct of its own type) → string

// assemble returns the statement build assembles for variant v, assembling it once.
func assemble[V comparable](v V, build func(V) string) string {
	if s, ok := assembled.Load(v); ok {
		return s.(string)
	}
	s, _ := assembled.LoadOrStore(v, build(v))
	return s.(string)
}
