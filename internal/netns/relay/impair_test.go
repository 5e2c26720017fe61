package relay

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// testFrame returns an EtherGM-sized frame of length n carrying seq.
func testFrame(seq uint32, n int, etherType uint16) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = byte(i)
	}
	binary.BigEndian.PutUint16(f[12:], etherType)
	binary.BigEndian.PutUint32(f[14:], seq)
	return f
}

func seqOf(f []byte) uint32 { return binary.BigEndian.Uint32(f[14:]) }

func newTestImpairer(imp Impairment, seed uint64) *Impairer {
	return NewImpairer(imp, rand.New(rand.NewPCG(seed, 1)), 0)
}

// run feeds n frames through m and returns the outputs, flushed.
func run(m *Impairer, n, size int) []Output {
	var out []Output
	for i := range n {
		out = m.Process(testFrame(uint32(i), size, 0x88B5), out)
	}
	return m.Flush(out)
}

func TestImpairerZero(t *testing.T) {
	m := newTestImpairer(Impairment{}, 1)
	out := run(m, 100, 100)
	if len(out) != 100 {
		t.Fatalf("%d outputs, want 100", len(out))
	}
	for i, o := range out {
		if !bytes.Equal(o.Frame, testFrame(uint32(i), 100, 0x88B5)) || o.Delay != 0 {
			t.Fatalf("output %d changed: seq %d delay %v", i, seqOf(o.Frame), o.Delay)
		}
	}
	if s := m.Stats(); s != (Stats{Received: 100, Forwarded: 100}) {
		t.Errorf("stats %+v", s)
	}
}

func TestImpairerRates(t *testing.T) {
	const n = 20000
	for _, tt := range []struct {
		name  string
		imp   Impairment
		count func(Stats) uint64
		rate  float64
		out   float64 // expected outputs per input
	}{
		{"drop", Impairment{Drop: 0.2}, func(s Stats) uint64 { return s.Dropped }, 0.2, 0.8},
		{"duplicate", Impairment{Duplicate: 0.3}, func(s Stats) uint64 { return s.Duplicated }, 0.3, 1.3},
		{"corrupt", Impairment{Corrupt: 0.1}, func(s Stats) uint64 { return s.Corrupted }, 0.1, 1},
		{"reorder", Impairment{Reorder: 0.05}, func(s Stats) uint64 { return s.Reordered }, 0.05, 1},
		{"all", Impairment{Drop: 0.1, Duplicate: 0.1, Corrupt: 0.1, Reorder: 0.1}, func(s Stats) uint64 { return s.Dropped }, 0.1, 0.99},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestImpairer(tt.imp, 42)
			out := run(m, n, 200)
			s := m.Stats()
			got := float64(tt.count(s)) / n
			sd := math.Sqrt(tt.rate * (1 - tt.rate) / n)
			if math.Abs(got-tt.rate) > 5*sd {
				t.Errorf("rate %.4f, want %.4f ± %.4f", got, tt.rate, 5*sd)
			}
			if r := float64(len(out)) / n; math.Abs(r-tt.out) > 0.02 {
				t.Errorf("%.3f outputs per frame, want %.3f", r, tt.out)
			}
			if s.Forwarded != uint64(len(out)) || s.Received != n {
				t.Errorf("stats %+v, %d outputs", s, len(out))
			}
			// Same seed, same choices.
			again := run(newTestImpairer(tt.imp, 42), n, 200)
			if !slices.EqualFunc(out, again, func(a, b Output) bool { return bytes.Equal(a.Frame, b.Frame) && a.Delay == b.Delay }) {
				t.Error("not deterministic for a seed")
			}
		})
	}
}

func TestImpairerCorrupt(t *testing.T) {
	for _, tt := range []struct {
		from, size int
		first      int // first byte that may change
		corrupted  bool
	}{
		{from: 0, size: 100, first: DefaultCorruptFrom, corrupted: true},
		{from: 0, size: DefaultCorruptFrom, corrupted: false}, // no payload
		{from: -1, size: 20, first: 0, corrupted: true},
		{from: 30, size: 31, first: 30, corrupted: true},
	} {
		m := newTestImpairer(Impairment{Corrupt: 1, CorruptFrom: tt.from}, 7)
		for i := range 200 {
			orig := testFrame(uint32(i), tt.size, 0x88B5)
			out := m.Process(slices.Clone(orig), nil)
			if len(out) != 1 {
				t.Fatalf("%d outputs", len(out))
			}
			var flipped, at int
			for j := range orig {
				if d := bits.OnesCount8(orig[j] ^ out[0].Frame[j]); d > 0 {
					flipped += d
					at = j
				}
			}
			switch {
			case !tt.corrupted && flipped != 0:
				t.Fatalf("from %d size %d: %d bits flipped, want none", tt.from, tt.size, flipped)
			case tt.corrupted && (flipped != 1 || at < tt.first):
				t.Fatalf("from %d size %d: %d bits flipped at %d, want 1 at >= %d", tt.from, tt.size, flipped, at, tt.first)
			}
		}
		want := uint64(0)
		if tt.corrupted {
			want = 200
		}
		if c := m.Stats().Corrupted; c != want {
			t.Errorf("from %d size %d: Corrupted %d, want %d", tt.from, tt.size, c, want)
		}
	}
}

func TestImpairerDuplicateIsClean(t *testing.T) {
	m := newTestImpairer(Impairment{Duplicate: 1, Corrupt: 1}, 3)
	orig := testFrame(1, 100, 0x88B5)
	out := m.Process(slices.Clone(orig), nil)
	if len(out) != 2 || bytes.Equal(out[0].Frame, orig) || !bytes.Equal(out[1].Frame, orig) {
		t.Errorf("want a corrupted original and a clean duplicate, got %d outputs", len(out))
	}
}

func TestImpairerReorder(t *testing.T) {
	for _, tt := range []struct {
		gap  int
		want []uint32
	}{
		{0, []uint32{1, 0, 2, 3}},
		{1, []uint32{1, 0, 2, 3}},
		{2, []uint32{1, 2, 0, 3}},
		{5, []uint32{1, 2, 3, 0}}, // released by Flush
	} {
		m := newTestImpairer(Impairment{Reorder: 1, ReorderGap: tt.gap}, 1)
		var out []Output
		out = m.Process(testFrame(0, 60, 0x88B5), out)
		if m.Held() != 1 || len(out) != 0 {
			t.Fatalf("gap %d: held %d, out %d", tt.gap, m.Held(), len(out))
		}
		m.SetImpairment(Impairment{})
		for i := 1; i < 4; i++ {
			out = m.Process(testFrame(uint32(i), 60, 0x88B5), out)
		}
		out = m.Flush(out)
		var got []uint32
		for _, o := range out {
			got = append(got, seqOf(o.Frame))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("gap %d: order %v, want %v", tt.gap, got, tt.want)
		}
		if s := m.Stats(); s.Reordered != 1 || s.Forwarded != 4 {
			t.Errorf("gap %d: stats %+v", tt.gap, s)
		}
	}
}

func TestImpairerDelay(t *testing.T) {
	const d, j = 10 * time.Millisecond, 4 * time.Millisecond
	m := newTestImpairer(Impairment{Delay: d, Jitter: j}, 5)
	out := run(m, 1000, 60)
	var lo, hi time.Duration = time.Hour, 0
	for _, o := range out {
		lo, hi = min(lo, o.Delay), max(hi, o.Delay)
	}
	if lo < d-j || hi > d+j || hi-lo < j {
		t.Errorf("delays in [%v, %v], want spread over [%v, %v]", lo, hi, d-j, d+j)
	}
	if s := m.Stats(); s.Delayed != 1000 {
		t.Errorf("Delayed %d", s.Delayed)
	}
	// Jitter larger than the delay never gives a negative delay.
	m = newTestImpairer(Impairment{Delay: time.Millisecond, Jitter: 5 * time.Millisecond}, 5)
	for _, o := range run(m, 1000, 60) {
		if o.Delay < 0 {
			t.Fatalf("negative delay %v", o.Delay)
		}
	}
}

func TestImpairerEtherTypeFilter(t *testing.T) {
	m := NewImpairer(Impairment{Drop: 1}, rand.New(rand.NewPCG(1, 1)), 0x88B5)
	var out []Output
	out = m.Process(testFrame(1, 60, 0x0800), out)
	out = m.Process(testFrame(2, 60, 0x88B5), out)
	out = m.Process(make([]byte, 10), out) // runt: not ours
	if len(out) != 2 || seqOf(out[0].Frame) != 1 {
		t.Fatalf("%d outputs, want the IPv4 frame and the runt", len(out))
	}
	if s := m.Stats(); s.Passed != 2 || s.Dropped != 1 || s.Forwarded != 2 || s.Received != 3 {
		t.Errorf("stats %+v", s)
	}
}

func TestImpairmentValidate(t *testing.T) {
	for _, imp := range []Impairment{
		{Drop: -0.1}, {Duplicate: 1.5}, {Reorder: math.NaN()}, {Corrupt: 2},
		{Delay: -1}, {Jitter: -1}, {ReorderGap: -1},
	} {
		if imp.Validate() == nil {
			t.Errorf("%+v: Validate() = nil", imp)
		}
	}
	if err := (Impairment{Drop: 1, Duplicate: 0.5, Delay: time.Second}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestImpairerOnly(t *testing.T) {
	typed := func(typ byte, n int) []byte {
		f := testFrame(0, max(n, 18), 0x88B5)[:n]
		f[15] = typ
		return f
	}
	for _, tt := range []struct {
		name  string
		match Match
		hit   [][]byte
		miss  [][]byte
	}{
		{"acks", MatchAcks, [][]byte{typed(5, 58)}, [][]byte{typed(1, 100), typed(6, 58), typed(4, 1514)}},
		{"control", MatchControl, [][]byte{typed(5, 58), typed(6, 58)}, [][]byte{typed(1, 100), typed(2, 1514)}},
		{"tails", MatchTails, [][]byte{typed(1, 100), typed(4, 900)}, [][]byte{typed(2, 1514), typed(3, 1514), typed(5, 58)}},
		{"large", MatchLarger(1000), [][]byte{typed(2, 1514), typed(3, 1001)}, [][]byte{typed(4, 1000), typed(5, 58)}},
	} {
		m := newTestImpairer(Impairment{Drop: 1, Only: tt.match}, 1)
		for _, f := range tt.hit {
			if out := m.Process(f, nil); len(out) != 0 {
				t.Errorf("%s: a selected frame (type %d, %d bytes) passed", tt.name, f[15], len(f))
			}
		}
		for _, f := range tt.miss {
			if out := m.Process(f, nil); len(out) != 1 || out[0].Delay != 0 {
				t.Errorf("%s: an unselected frame (type %d, %d bytes) was impaired", tt.name, f[15], len(f))
			}
		}
		s := m.Stats()
		if s.Matched != uint64(len(tt.hit)) || s.Dropped != uint64(len(tt.hit)) || s.Forwarded != uint64(len(tt.miss)) {
			t.Errorf("%s: stats %+v", tt.name, s)
		}
	}
}
