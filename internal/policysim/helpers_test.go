package policysim

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// msec is a millisecond, for short literals.
const msec = time.Millisecond

// examplesDir holds the example simulation files.
const examplesDir = "../../examples"

// mustParse parses a simulation file or fails the test.
func mustParse(t testing.TB, file string) *File {
	t.Helper()
	f, err := Parse([]byte(file))
	if err != nil {
		t.Fatalf("Parse: got error %v, want nil", err)
	}
	return f
}

// readExample parses an example file or fails the test.
func readExample(t testing.TB, name string) *File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, name))
	if err != nil {
		t.Fatalf("reading %s: got error %v, want nil", name, err)
	}
	return mustParse(t, string(data))
}

// mustScript runs a script or fails the test.
func mustScript(t testing.TB, f *File, seed uint64) *Timeline {
	t.Helper()
	tl, err := RunScript(context.Background(), f, seed)
	if err != nil {
		t.Fatalf("RunScript: got error %v, want nil", err)
	}
	return tl
}

// outputs renders an output in its three forms.
func outputs(t testing.TB, out Output) (text, js, svg string) {
	t.Helper()
	var b [3]bytes.Buffer
	for i, write := range []func(w *bytes.Buffer) error{
		func(w *bytes.Buffer) error { return out.WriteText(w) },
		func(w *bytes.Buffer) error { return out.WriteJSON(w) },
		func(w *bytes.Buffer) error { return out.WriteSVG(w) },
	} {
		if err := write(&b[i]); err != nil {
			t.Fatalf("writing output %d: got error %v, want nil", i, err)
		}
	}
	return b[0].String(), b[1].String(), b[2].String()
}
