package policysim

import (
	"bytes"
	"fmt"
)

// FileError is an invalid simulation file. It names the field at fault as a
// path (policy.base_ms, script[2].status, population.outage.to_ms) or, for
// malformed JSON, the line and column where reading stopped.
type FileError struct {
	// Field is the path of the field at fault; empty for malformed JSON.
	Field string
	// Line and Column locate malformed JSON, from 1; zero otherwise.
	Line, Column int
	// Problem says what is wrong.
	Problem string
}

// Error returns "FIELD: PROBLEM", or "line L, column C: PROBLEM" for
// malformed JSON.
func (e *FileError) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Problem
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Problem)
}

// fieldError returns a *FileError for the field at path.
func fieldError(path, format string, args ...any) *FileError {
	return &FileError{Field: path, Problem: fmt.Sprintf(format, args...)}
}

// positionError returns a *FileError at a byte offset of data, clamped to
// the data.
func positionError(data []byte, offset int64, problem string) *FileError {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line := 1 + bytes.Count(before, []byte("\n"))
	column := int(offset) - bytes.LastIndexByte(before, '\n')
	return &FileError{Line: line, Column: column, Problem: problem}
}
