package result

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	us := time.Microsecond
	sorted := []time.Duration{1 * us, 2 * us, 3 * us, 4 * us, 5 * us, 6 * us, 7 * us, 8 * us, 9 * us, 10 * us}
	tests := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", []time.Duration{7 * us}, 99, 7 * us},
		{"p50 of 10", sorted, 50, 5 * us},
		{"p99 of 10", sorted, 99, 10 * us},
		{"p10 of 10", sorted, 10, 1 * us},
		{"p0 clamps to min", sorted, 0, 1 * us},
		{"p100", sorted, 100, 10 * us},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.in, tt.p); got != tt.want {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	s := []time.Duration{3 * time.Microsecond, 1 * time.Microsecond, 2 * time.Microsecond}
	l := Summarize(s)
	if l.N != 3 || l.P50us != 2 || l.MinUs != 1 || l.MeanUs != 2 || l.P99us != 3 {
		t.Errorf("Summarize = %+v", l)
	}
	if z := Summarize(nil); z.N != 0 || z.P50us != 0 {
		t.Errorf("Summarize(nil) = %+v", z)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5}, 5},
		{[]float64{math.NaN(), 7, math.Inf(1), 3}, 5},
	}
	for _, tt := range tests {
		if got := Median(tt.in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if !math.IsNaN(Median(nil)) || !math.IsNaN(Median([]float64{math.NaN()})) {
		t.Error("Median of no finite value is not NaN")
	}
}

func TestGoodput(t *testing.T) {
	s := Stream{Frames: 1e6, EthPayload: 1500, AppPayload: 1456, Seconds: 2}
	s.Goodput()
	if math.Abs(s.GbpsEth-6) > 1e-9 || math.Abs(s.Mpps-0.5) > 1e-9 {
		t.Errorf("Goodput: %+v", s)
	}
}

func TestDecode(t *testing.T) {
	var l Latency
	out := "ready\n{\"tool\":\"a\",\"p50_us\":1}\n{\"tool\":\"b\",\"p50_us\":2.5}\nbye\n"
	if err := Decode(out, &l); err != nil || l.Tool != "b" || l.P50us != 2.5 {
		t.Errorf("Decode = %+v, %v", l, err)
	}
	if err := Decode("nothing here\n", &l); !errors.Is(err, ErrNoRecord) {
		t.Errorf("Decode(no record) error = %v, want ErrNoRecord", err)
	}
}
