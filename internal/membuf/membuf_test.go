package membuf

import "testing"

func TestTouched(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 1 << 20, 1<<20 + 3} {
		b := Touched(n)
		if len(b) != n {
			t.Fatalf("Touched(%d): len %d", n, len(b))
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("Touched(%d)[%d] = %d, want 0", n, i, v)
			}
		}
	}
}
