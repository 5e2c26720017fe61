package result

import (
	"math"
	"testing"
)

func TestJain(t *testing.T) {
	for _, tt := range []struct {
		x    []float64
		want float64
	}{
		{nil, 0},
		{[]float64{0, 0}, 0},
		{[]float64{3, 3, 3, 3}, 1},
		{[]float64{1, 0, 0, 0}, 0.25},
		{[]float64{1, 2}, 9.0 / 10},
	} {
		if got := Jain(tt.x); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Jain(%v) = %v, want %v", tt.x, got, tt.want)
		}
	}
}
