package allsize

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ethergm/ethergm/cmd/gm_allsize/internal/pattern"
	"github.com/ethergm/ethergm/gm"
)

func TestLengths(t *testing.T) {
	tests := []struct {
		size uint8
		want []int // without random lengths
	}{
		{3, []int{0}},
		{4, []int{0, 1, 2, 4, 8}},
		{5, []int{0, 1, 16, 24}},
		{10, []int{0, 1, 512, 1016}},
		{11, []int{0, 1, 1024, 2040}},
		{21, []int{0, 1, 1 << 20, 1<<21 - 8}},
	}
	for _, tc := range tests {
		if got := Lengths(tc.size, 0, nil); !slices.Equal(got, tc.want) {
			t.Errorf("Lengths(%d) = %v, want %v", tc.size, got, tc.want)
		}
	}
}

func TestLengthsRandomWithinClass(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for size := uint8(MinSize); size <= 24; size++ {
		for range 20 {
			got := Lengths(size, 3, rng)
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Fatalf("Lengths(%d) = %v: not sorted and unique", size, got)
			}
			hi := gm.MaxLengthForSize(size)
			for _, l := range got {
				if l < 0 || l > hi {
					t.Fatalf("Lengths(%d) = %v: %d outside 0..%d", size, got, l, hi)
				}
				// Every length but 0 and 1 has size as its smallest class.
				if l > 1 && gm.MinSizeForLength(l) != size {
					t.Fatalf("Lengths(%d) = %v: %d belongs to class %d", size, got, l, gm.MinSizeForLength(l))
				}
			}
			if got[0] != 0 || got[len(got)-1] != hi {
				t.Fatalf("Lengths(%d) = %v: want 0 first and %d last", size, got, hi)
			}
		}
	}
}

func TestPlan(t *testing.T) {
	o := Defaults()
	o.MinSize, o.MaxSize = 3, 21
	o.Iterations = 100
	o.MaxBytes = 1 << 20
	o.Priorities = []gm.Priority{gm.LowPriority, gm.HighPriority}
	plan := Plan(o, 58)
	if len(plan)%2 != 0 || plan[0].Priority != gm.LowPriority || plan[1].Priority != gm.HighPriority {
		t.Fatalf("priorities not interleaved: %+v", plan[:2])
	}
	again := Plan(o, 58)
	if !slices.Equal(plan, again) {
		t.Fatal("Plan is not deterministic")
	}
	for _, tp := range plan {
		switch {
		case tp.Iterations < 2 || tp.Iterations > 100:
			t.Fatalf("%+v: iterations", tp)
		case tp.Length > 0 && int64(tp.Iterations) > max(2, o.MaxBytes/int64(tp.Length)):
			t.Fatalf("%+v: over the byte budget", tp)
		case tp.Depth < 1 || tp.Depth > 58 || tp.Depth > tp.Iterations || tp.Depth*tp.Length > WindowBytes && tp.Depth > 1:
			t.Fatalf("%+v: depth", tp)
		case tp.Warmup < 1 || tp.Warmup > MaxWarmup:
			t.Fatalf("%+v: warmup", tp)
		}
	}
	if last := plan[len(plan)-1]; last.Length != 1<<21-8 || last.Iterations != 2 {
		t.Fatalf("last point %+v", last)
	}
	o.Seed = 2
	if slices.Equal(plan, Plan(o, 58)) {
		t.Fatal("another seed gives the same random lengths")
	}
}

func TestPlanExplicitLengths(t *testing.T) {
	o := Defaults()
	o.MinSize, o.MaxSize = 4, 20
	o.Lengths = []int{1 << 20, 8, 0, 1024, 8, 1<<20 - 8}
	var got []string
	for _, tp := range Plan(o, 58) {
		got = append(got, fmt.Sprintf("%d:%d", tp.Size, tp.Length))
	}
	// 0 has class 3 and 1 MiB class 21, outside 4..20; 8 is listed once.
	if want := "4:8 11:1024 20:1048568"; strings.Join(got, " ") != want {
		t.Fatalf("plan %v, want %s", got, want)
	}
}

func TestOptionsValidate(t *testing.T) {
	mod := []func(*Options){
		func(o *Options) { o.MinSize = 2 },
		func(o *Options) { o.MaxSize = 31 },
		func(o *Options) { o.MinSize, o.MaxSize = 10, 9 },
		func(o *Options) { o.Iterations = 0 },
		func(o *Options) { o.MaxBytes = 0 },
		func(o *Options) { o.Priorities = nil },
		func(o *Options) { o.Random = -1 },
		func(o *Options) { o.Timeout = 0 },
		func(o *Options) { o.Lengths = []int{-1} },
	}
	for i, m := range mod {
		o := Defaults()
		m(&o)
		if err := o.Validate(); !errors.Is(err, ErrOptions) {
			t.Errorf("case %d: Validate = %v", i, err)
		}
	}
	o := Defaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestCtlRoundTrip(t *testing.T) {
	b := make([]byte, ctlBufLen)
	m := &ctlMsg{Type: ctlDone, Received: 30, Errors: 2, BytesWrong: 3, Mismatches: []string{"size 10 len 1016 seq 3: offset 5 expected 0x01 got 0x02"}}
	n, err := m.encode(b)
	if err != nil {
		t.Fatal(err)
	}
	if n > 600 {
		t.Errorf("done message of %d bytes: keep control messages short", n)
	}
	got, err := decodeCtl(b[:n])
	if err != nil || got.Type != ctlDone || got.Received != 30 || got.Mismatches[0] != m.Mismatches[0] {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	for _, off := range []int{0, 4, n / 2, n - 1} {
		bad := bytes.Clone(b[:n])
		bad[off] ^= 1
		if _, err := decodeCtl(bad); !errors.Is(err, ErrCorruptControl) {
			t.Errorf("flip at %d: %v", off, err)
		}
	}
	if _, err := decodeCtl(nil); !errors.Is(err, ErrCorruptControl) {
		t.Error("empty message accepted")
	}
	if _, err := (&ctlMsg{Type: ctlAbort, Reason: strings.Repeat("x", ctlBufLen)}).encode(b); err == nil {
		t.Error("oversized message encoded")
	}
}

func TestVerifier(t *testing.T) {
	var out bytes.Buffer
	v := &verifier{out: &out, prefix: "server: "}
	v.begin()
	k := pattern.Key{Size: 11, Length: 1024, Seq: 4}
	buf := make([]byte, 1024)
	pattern.Fill(buf, k)
	e := &gm.Event{Type: gm.RecvEvent, Size: 11, Length: 1024, Message: buf}
	if !v.check(e, k, gm.LowPriority) || v.errors != 0 {
		t.Fatal("intact message reported")
	}
	for _, o := range []int{10, 20, 30, 40, 50} {
		buf[o] ^= 0xff
	}
	if v.check(e, k, gm.LowPriority) || v.errors != 1 || v.bytesWrong != 5 {
		t.Fatalf("errors %d bytes %d", v.errors, v.bytesWrong)
	}
	got := out.String()
	for _, want := range []string{"server: size 11 len 1024 seq 4: offset 10 expected 0x", "offset 30", "5 bytes differ in all"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "offset 40") {
		t.Errorf("more than %d offsets listed:\n%s", MismatchesPerMessage, got)
	}
	if len(v.lines) != maxDoneMismatches {
		t.Errorf("%d lines kept for done", len(v.lines))
	}
	// Wrong length or priority is a data error too.
	e2 := &gm.Event{Type: gm.HighRecvEvent, Size: 11, Length: 1000, Priority: gm.HighPriority, Message: buf}
	if v.check(e2, k, gm.LowPriority) || v.errors != 2 {
		t.Fatal("wrong length accepted")
	}
	v.begin()
	if v.errors != 0 || len(v.lines) != 0 {
		t.Fatal("begin does not reset")
	}
}

func TestBWBuffers(t *testing.T) {
	for _, tc := range []struct{ depth, length, want int }{
		{58, 0, 124}, {58, 1024, 124}, {16, 1 << 20, 32}, {1, 16 << 20, 2}, {8, 2 << 20, 16},
	} {
		if got := bwBuffers(tc.depth, tc.length); got != tc.want {
			t.Errorf("bwBuffers(%d, %d) = %d, want %d", tc.depth, tc.length, got, tc.want)
		}
	}
}
