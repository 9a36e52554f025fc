// Package migrations holds paygate's database schema as numbered SQL files, embedded in the
// binary so that `paygate migrate`, `paygate serve` and the tests apply exactly the same files,
// and applies them (pressly/goose v3, under a session advisory lock).
//
// A file is never edited once it has landed: a change to the schema is a new file with the
// next number.
package migrations

import "embed"

// FS holds the numbered migration files (NNNN_name.sql, goose format).
//
//go:embed *.sql
var FS embed.FS
