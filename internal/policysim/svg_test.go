package policysim

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// svgTexts checks that svg is well-formed XML with an <svg> root and returns
// the content of its text elements.
func svgTexts(t *testing.T, svg string) []string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	var texts []string
	inText, root := false, ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG: got malformed XML (%v), want well-formed", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("SVG root: got <%s>, want <svg>", root)
	}
	return texts
}

func TestPopulationSVG(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		want []string // texts the picture must show
	}{
		{"outage", "outage-population.json", []string{"originals", "retries", "outage (503)", "attempts per second", "time since the first arrival (s)"}},
		{"errors", "error-rate-10pct.json", []string{"originals", "retries", "attempts per second"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, svg := outputs(t, mustPopulation(t, readExample(t, tt.file), DefaultSeed))
			texts := svgTexts(t, svg)
			for _, want := range tt.want {
				if !containsText(texts, want) {
					t.Errorf("texts: got %q, want one reading %q", texts, want)
				}
			}
			if got := strings.Count(svg, `fill="`+colourOriginals+`"`); got < 10 {
				t.Errorf("original bars: got %d, want at least 10", got)
			}
		})
	}
}

func TestLongPopulationSVGIsBinned(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `{"population": {"operations": 2000, "rate_per_sec": 2, "outage": {"from_ms": 100000, "to_ms": 200000}}}`)
	_, _, svg := outputs(t, mustPopulation(t, f, DefaultSeed))
	texts := svgTexts(t, svg)
	if !containsText(texts, "attempts per second (mean over 4 s)") {
		t.Errorf("texts: got %q, want the y axis to say the bars are means over 4 s", texts)
	}
	if got := strings.Count(svg, `fill="`+colourOriginals+`"`); got > maxBars+1 {
		t.Errorf("original bars: got %d, want at most %d", got, maxBars+1)
	}
}

func TestTimelineSVG(t *testing.T) {
	t.Parallel()
	tl := mustScript(t, readExample(t, "503-503-200.json"), DefaultSeed)
	_, _, svg := outputs(t, tl)
	texts := svgTexts(t, svg)
	for _, want := range []string{"deadline", "#1 503 retry, wait", "#2 503 retry, wait", "#3 200 success",
		"time since the operation&#39;s start (ms)", "timeout window", "retry", "success"} {
		if !containsText(texts, strings.ReplaceAll(want, "&#39;", "'")) {
			t.Errorf("texts: got %q, want one reading %q", texts, want)
		}
	}
}

func TestSVGOfAlmostNothing(t *testing.T) {
	t.Parallel()
	// One attempt opens the breaker, which refuses every later operation.
	f := mustParse(t, `{"policy": {"breaker": {"consecutive_failures": 1}}, "population": {"operations": 3, "rate_per_sec": 1000,
		"outage": {"from_ms": 0, "to_ms": 10}}}`)
	_, _, svg := outputs(t, mustPopulation(t, f, DefaultSeed))
	svgTexts(t, svg)
	if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
		t.Errorf("SVG: got NaN or Inf coordinates, want numbers")
	}
}

// containsText reports whether one of texts begins with want.
func containsText(texts []string, want string) bool {
	for _, s := range texts {
		if strings.HasPrefix(s, want) {
			return true
		}
	}
	return false
}
