package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

var points = []Point{
	{Series: "EtherGM low", Size: 4, Length: 8, Priority: "low", Iterations: 1000, HalfRTTus: 10.5, BWMBs: 1.25},
	{Series: "EtherGM low", Size: 10, Length: 1016, Priority: "low", Iterations: 1000, HalfRTTus: 12.3, BWMBs: 512.4, Errors: 2},
	{Series: "EtherGM high", Size: 10, Length: 1016, Priority: "high", Iterations: 10, HalfRTTus: 11, BWMBs: 500, FailedSends: 1},
}

func TestLine(t *testing.T) {
	got := Line(points[1], true)
	want := "size 10 len     1016 prio low  iters  1000 half-rtt    12.30 us bw    512.40 MB/s errors 2"
	if got != want {
		t.Fatalf("Line =\n%q, want\n%q", got, want)
	}
	if got := Line(points[2], false); !strings.HasSuffix(got, "MB/s failed-sends 1") {
		t.Fatalf("Line = %q", got)
	}
}

func TestSummaryLines(t *testing.T) {
	s := &Summary{Points: 3, Messages: 10, Bytes: 2e6, DataErrors: 1, BytesWrong: 2, Local: Counters{Resends: 4, NacksSent: 1, NacksReceived: 2, KernelDrops: 5, CRCErrors: 6}, Remote: &Counters{}}
	got := strings.Join(SummaryLines(s), "\n")
	for _, want := range []string{"3 points, 10 messages, 2.0 MB", "1 data errors (2 bytes), 0 failed sends",
		"counters: resends 4 nacks 3 drops 5 crc-errors 6", "server counters: resends 0", "result: FAIL"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if s.OK() {
		t.Error("OK with a data error")
	}
	if !(&Summary{}).OK() {
		t.Error("empty summary not OK")
	}
}

func TestCountersArithmetic(t *testing.T) {
	a := Counters{1, 2, 3, 4, 5, 6, 7, 8}
	if got := a.Add(a).Sub(a); got != a {
		t.Fatalf("a+a-a = %+v", got)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := &Run{Meta: Meta{Tool: "gm_allsize", Mode: "loopback", Verify: true, Priorities: []string{"low"}}, Points: points,
		Summary: Summary{Points: 3, Remote: &Counters{Resends: 9}}}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back Run
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Points) != 3 || back.Points[1] != points[1] || back.Summary.Remote.Resends != 9 || !back.Meta.Verify {
		t.Fatalf("round trip: %+v", back)
	}
	for _, key := range []string{`"half_rtt_us"`, `"bw_mbs"`, `"data_errors"`, `"local_counters"`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestCSVRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, points); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || strings.Join(recs[0], ",") != strings.Join(CSVHeader, ",") {
		t.Fatalf("records %v", recs)
	}
	if strings.Join(recs[2], ",") != "EtherGM low,1016,12.3,512.4,10,low,1000,2,0,0" {
		t.Fatalf("row %v", recs[2])
	}
	// The same file is a baseline.
	series, err := ReadSeries(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0].Name != "EtherGM low" || len(series[0].Samples) != 2 || series[1].Samples[0].BWMBs != 500 {
		t.Fatalf("series %+v", series)
	}
}

func TestReadSeries(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  int // series
		err   bool
		check func(t *testing.T, s []Series)
	}{
		{"minimal", "series,length,half_rtt_us,bw_mbs\nUDP,8,30,\nUDP,1472,,900\nTCP,8,40,0.2\n", 2, false, func(t *testing.T, s []Series) {
			if !math.IsNaN(s[0].Samples[0].BWMBs) || !math.IsNaN(s[0].Samples[1].HalfRTTus) || s[0].Samples[1].BWMBs != 900 {
				t.Errorf("UDP samples %+v", s[0].Samples)
			}
		}},
		{"reordered columns and comments", "# from sockperf\nbw_mbs, length, series\n5, 64, X\n", 1, false, func(t *testing.T, s []Series) {
			if x := s[0].Samples[0]; x.Length != 64 || x.BWMBs != 5 || !math.IsNaN(x.HalfRTTus) {
				t.Errorf("%+v", s)
			}
		}},
		{"no value column", "series,length\nA,1\n", 0, true, nil},
		{"bad number", "series,length,bw_mbs\nA,x,1\n", 0, true, nil},
		{"empty", "", 0, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ReadSeries(strings.NewReader(tc.in))
			if tc.err {
				if !errors.Is(err, ErrBaseline) {
					t.Fatalf("err = %v, want ErrBaseline", err)
				}
				return
			}
			if err != nil || len(s) != tc.want {
				t.Fatalf("ReadSeries = %+v, %v", s, err)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestWriteSeriesRoundTrip(t *testing.T) {
	in := []Series{{Name: "TCP (NetPIPE)", Samples: []Sample{{1, 20, 0.05}, {1048576, math.NaN(), 1100}}}}
	var b bytes.Buffer
	if err := WriteSeries(&b, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadSeries(&b)
	if err != nil || len(out) != 1 || out[0].Samples[1].BWMBs != 1100 || !math.IsNaN(out[0].Samples[1].HalfRTTus) {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestCollapseAndMedian(t *testing.T) {
	s := Series{Samples: []Sample{{8, 3, 1}, {1, 1, math.NaN()}, {1, 3, 2}, {1, 2, 4}, {0, 1, 0}}}
	got := s.Collapse()
	if len(got) != 3 || got[0].Length != 0 || got[1] != (Sample{1, 2, 3}) || got[2].Length != 8 {
		t.Fatalf("Collapse = %+v", got)
	}
	if x, ok := s.At(1); !ok || x.HalfRTTus != 2 {
		t.Fatalf("At(1) = %+v %v", x, ok)
	}
	if !math.IsNaN(Median(nil)) || Median([]float64{3, 1, 2}) != 2 || Median([]float64{4, 1}) != 2.5 {
		t.Fatal("Median")
	}
}

func TestChart(t *testing.T) {
	series := PointSeries(points)
	base := []Series{{Name: "UDP (sockperf)", Samples: []Sample{{8, 30, math.NaN()}}}}
	c := Chart("t", "s", series, base)
	if len(c.Panels) != 2 || len(c.Panels[0].Lines) != 3 || c.Panels[0].Lines[0].Dashed || !c.Panels[0].Lines[2].Dashed {
		t.Fatalf("chart %+v", c)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, "t", "s", series, base); err != nil || !strings.Contains(b.String(), "UDP (sockperf)") {
		t.Fatalf("WriteSVG: %v", err)
	}
}
