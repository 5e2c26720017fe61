package plot

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestLogTicks(t *testing.T) {
	tests := []struct {
		lo, hi   float64
		major    []float64
		minorLen int
	}{
		{1, 1048576, []float64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7}, 7 * 8},
		{3, 70, []float64{1, 10, 100}, 2 * 8},
		{10, 100, []float64{10, 100}, 8},
		{5, 5, []float64{1, 10}, 8},
		{100, 100, []float64{100, 1000}, 8},
		{0.02, 0.5, []float64{0.01, 0.1, 1}, 16},
	}
	for _, tc := range tests {
		major, minor := LogTicks(tc.lo, tc.hi)
		if len(major) != len(tc.major) {
			t.Fatalf("LogTicks(%v, %v) major = %v, want %v", tc.lo, tc.hi, major, tc.major)
		}
		for i := range major {
			if math.Abs(major[i]-tc.major[i]) > 1e-9*tc.major[i] {
				t.Fatalf("LogTicks(%v, %v) major = %v, want %v", tc.lo, tc.hi, major, tc.major)
			}
		}
		if len(minor) != tc.minorLen || !slices.IsSorted(minor) {
			t.Fatalf("LogTicks(%v, %v) minor = %v, want %d sorted", tc.lo, tc.hi, minor, tc.minorLen)
		}
		if minor[0] <= major[0] || minor[len(minor)-1] >= major[len(major)-1] {
			t.Fatalf("minor ticks %v outside %v", minor, major)
		}
	}
}

func TestFormatTick(t *testing.T) {
	for v, want := range map[float64]string{
		0.001: "0.001", 0.1: "0.1", 1: "1", 10: "10", 100: "100", 1000: "1k", 1e5: "100k",
		1e6: "1M", 1e8: "100M", 1e9: "1G", 1e12: "1e12", 1e-5: "1e-5",
	} {
		if got := FormatTick(v); got != want {
			t.Errorf("FormatTick(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestAxisPix(t *testing.T) {
	a := newAxis(1, 1000, 0, 300)
	for v, want := range map[float64]float64{1: 0, 10: 100, 100: 200, 1000: 300} {
		if got := a.pix(v); math.Abs(got-want) > 1e-9 {
			t.Errorf("pix(%v) = %v, want %v", v, got, want)
		}
	}
}

// svgDoc is the part of an SVG document the tests look at.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Texts   []string `xml:"text"`
	Groups  []struct {
		Title     string `xml:"title"`
		Polylines []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
	} `xml:"g"`
}

func TestSVGWellFormed(t *testing.T) {
	c := Chart{
		Title:    `Latency & bandwidth <test>`,
		Subtitle: "machine \"x\"",
		Panels: []Panel{
			{Title: "lat", XLabel: "bytes", YLabel: "us", Lines: []Line{
				{Name: "EtherGM low", X: []float64{0, 1, 8, 1024}, Y: []float64{5, 5, 6, 9}},
				{Name: "UDP <sockperf>", X: []float64{8, 1024}, Y: []float64{30, math.NaN()}, Dashed: true},
			}},
			{Title: "bw", XLabel: "bytes", YLabel: "MB/s", Lines: []Line{
				{Name: "EtherGM low", X: []float64{1, 1024}, Y: []float64{0.1, 400}},
				{Name: "empty", X: []float64{0}, Y: []float64{0}},
			}},
		},
	}
	var b bytes.Buffer
	if err := SVG(&b, c); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b.String())
		}
	}
	var doc svgDoc
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(doc.Texts, "|")
	for _, want := range []string{c.Title, "EtherGM low", "UDP <sockperf>", "empty", "1k", "lat", "bw"} {
		if !strings.Contains(all, want) {
			t.Errorf("text %q missing from %q", want, all)
		}
	}
	// Drawn series: EtherGM low twice (3 and 2 drawable points), UDP once
	// (1 point); "empty" has nothing drawable.
	var got []string
	for _, g := range doc.Groups {
		got = append(got, g.Title)
		if g.Title == "EtherGM low" && len(strings.Fields(g.Polylines[0].Points)) < 2 {
			t.Errorf("EtherGM low polyline %q", g.Polylines[0].Points)
		}
	}
	if strings.Join(got, ",") != "EtherGM low,UDP <sockperf>,EtherGM low" {
		t.Errorf("series groups %v", got)
	}
}

func TestSVGEmpty(t *testing.T) {
	if err := SVG(io.Discard, Chart{}); err != ErrEmpty {
		t.Fatalf("SVG(empty) = %v", err)
	}
}
