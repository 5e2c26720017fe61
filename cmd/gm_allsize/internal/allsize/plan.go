package allsize

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// Size classes.
const (
	// MinSize and MaxSize bound --min-size and --max-size. Size 31 is kept
	// for the control messages (CtlSize).
	MinSize = gm.MinMessageSize
	MaxSize = 30
	// CtlSize is the size class of the control messages; test points never
	// use it, so control messages and test data never compete for receive
	// buffers.
	CtlSize uint8 = 31
	// DefaultMinSize and DefaultMaxSize are the default size range.
	DefaultMinSize = 3
	DefaultMaxSize = 24
)

// Defaults of Options.
const (
	DefaultIterations = 1000
	DefaultMaxBytes   = 32 << 20
	DefaultTimeout    = 30 * time.Second
	// WindowBytes bounds the bytes a bandwidth measurement keeps in flight
	// (and so the receive buffers the server provides): more than GM's
	// 512-frame stream window never helps.
	WindowBytes = 16 << 20
	// MaxWarmup bounds the untimed round trips before each latency
	// measurement.
	MaxWarmup = 20
)

// ErrOptions is wrapped by Options.Validate errors.
var ErrOptions = errors.New("invalid options")

// Options are the parameters of a run, chosen by the client; the server
// learns what it needs from the control messages.
type Options struct {
	// MinSize and MaxSize are the size classes tested, MinSize..MaxSize.
	MinSize, MaxSize int
	// Iterations is the number of timed round trips and of bandwidth
	// messages per test point; long messages use fewer (MaxBytes).
	Iterations int
	// MaxBytes bounds the bytes sent per test point and measurement: a
	// point of length L uses min(Iterations, max(2, MaxBytes/L))
	// iterations.
	MaxBytes int64
	// Priorities are the priorities tested, each at every length.
	Priorities []gm.Priority
	// Verify fills every payload with the pattern of (size, length,
	// sequence) and checks it on receipt, on both sides.
	Verify bool
	// Random is the number of random lengths per size class.
	Random int
	// Seed seeds the random lengths.
	Seed uint64
	// Lengths, if not empty, replaces the lengths chosen per class: each
	// length is tested in its smallest size class (if that class is in
	// MinSize..MaxSize).
	Lengths []int
	// Timeout bounds every wait for the peer (a control reply, the next
	// message of a point).
	Timeout time.Duration
}

// Defaults returns the default options.
func Defaults() Options {
	return Options{
		MinSize: DefaultMinSize, MaxSize: DefaultMaxSize, Iterations: DefaultIterations,
		MaxBytes: DefaultMaxBytes, Priorities: []gm.Priority{gm.LowPriority}, Random: 1, Seed: 1,
		Timeout: DefaultTimeout,
	}
}

// Validate checks the options.
func (o *Options) Validate() error {
	switch {
	case o.MinSize < MinSize || o.MaxSize > MaxSize || o.MinSize > o.MaxSize:
		return fmt.Errorf("%w: size range %d..%d (sizes are %d..%d)", ErrOptions, o.MinSize, o.MaxSize, MinSize, MaxSize)
	case o.Iterations < 1:
		return fmt.Errorf("%w: iterations %d", ErrOptions, o.Iterations)
	case o.MaxBytes < 1:
		return fmt.Errorf("%w: max bytes %d", ErrOptions, o.MaxBytes)
	case len(o.Priorities) == 0:
		return fmt.Errorf("%w: no priority", ErrOptions)
	case o.Random < 0:
		return fmt.Errorf("%w: random lengths %d", ErrOptions, o.Random)
	case o.Timeout <= 0:
		return fmt.Errorf("%w: timeout %v", ErrOptions, o.Timeout)
	}
	for _, l := range o.Lengths {
		if l < 0 || l > gm.MaxLengthForSize(MaxSize) {
			return fmt.Errorf("%w: length %d", ErrOptions, l)
		}
	}
	return nil
}

// Lengths returns the lengths tested in size class size, sorted and
// without duplicates: 0 and 1 (legal in every class), the powers of two
// whose smallest class is size, the class maximum (2^size-8) and random
// lengths whose smallest class is size. Every length is at most the class
// maximum. rng may be nil when random is 0.
func Lengths(size uint8, random int, rng *rand.Rand) []int {
	hi := gm.MaxLengthForSize(size)
	lo := -1 // lengths above lo have size as their smallest class
	if size > MinSize {
		lo = gm.MaxLengthForSize(size - 1)
	}
	out := []int{0}
	if hi >= 1 {
		out = append(out, 1)
	}
	for p := 1; p <= hi; p <<= 1 {
		if p > lo {
			out = append(out, p)
		}
	}
	out = append(out, hi)
	if hi > lo+1 {
		for range random {
			out = append(out, lo+1+rng.IntN(hi-lo))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestPoint is one (size, length, priority) test: a latency measurement
// (ping-pong) and a bandwidth measurement.
type TestPoint struct {
	Size     uint8
	Length   int
	Priority gm.Priority
	// Iterations is the number of timed round trips and of bandwidth
	// messages.
	Iterations int
	// Warmup is the number of untimed round trips before the timed ones.
	Warmup int
	// Depth is the number of bandwidth messages kept in flight.
	Depth int
}

// PriorityName returns "low" or "high".
func PriorityName(p gm.Priority) string {
	if p == gm.HighPriority {
		return "high"
	}
	return "low"
}

// Plan returns the test points of o in order: by size class, then length,
// then priority. maxDepth is the most messages the client may keep in
// flight (its send tokens minus those kept for control messages).
func Plan(o Options, maxDepth int) []TestPoint {
	rng := rand.New(rand.NewPCG(o.Seed, 0x616c6c73697a65)) // "allsize"
	type sl struct {
		size uint8
		l    int
	}
	var lens []sl
	if len(o.Lengths) > 0 {
		for _, l := range o.Lengths {
			s := max(gm.MinSizeForLength(l), MinSize)
			if int(s) >= o.MinSize && int(s) <= o.MaxSize {
				lens = append(lens, sl{s, l})
			}
		}
		slices.SortFunc(lens, func(a, b sl) int { return a.l - b.l })
		lens = slices.Compact(lens)
	} else {
		for s := o.MinSize; s <= o.MaxSize; s++ {
			for _, l := range Lengths(uint8(s), o.Random, rng) {
				lens = append(lens, sl{uint8(s), l})
			}
		}
	}
	var out []TestPoint
	for _, x := range lens {
		iters := o.Iterations
		if x.l > 0 {
			iters = int(min(int64(o.Iterations), max(2, o.MaxBytes/int64(x.l))))
		}
		warm := min(MaxWarmup, iters/10+1)
		depth := max(1, min(maxDepth, iters, WindowBytes/max(x.l, 1)))
		for _, p := range o.Priorities {
			out = append(out, TestPoint{Size: x.size, Length: x.l, Priority: p, Iterations: iters, Warmup: warm, Depth: depth})
		}
	}
	return out
}
