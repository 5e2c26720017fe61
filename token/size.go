package token

import "math/bits"

// Size-class constants, as in gm.h.
const (
	// NumSizes is GM_NUM_SIZES: size classes run 0..31.
	NumSizes = 32
	// MinMessageSize is GM_MIN_MESSAGE_SIZE, the smallest useful size class
	// (it holds a zero-length message).
	MinMessageSize = 3
	// MaxSize is the largest size class, 31.
	MaxSize = NumSizes - 1
	// NumPriorities is GM_NUM_PRIORITIES: low (0) and high (1).
	NumPriorities = 2
)

// MinSizeForLength is gm_min_size_for_length: the smallest size class s with
// MaxLengthForSize(s) >= n, that is ceil(log2(n+8)). It returns 0 for a
// negative n and a value above MaxSize for n > MaxLengthForSize(MaxSize).
func MinSizeForLength(n int) uint8 {
	if n < 0 {
		return 0
	}
	v := uint64(n) + 8
	s := 64 - bits.LeadingZeros64(v-1) // ceil(log2(v)) for v >= 2
	return uint8(s)
}

// MaxLengthForSize is gm_max_length_for_size (GM_MAX_LENGTH_FOR_SIZE): the
// largest message length that size class s holds, 2^s - 8, or 0 when s < 3.
// Sizes above MaxSize return 0.
func MaxLengthForSize(s uint8) int {
	if s < MinMessageSize || s > MaxSize {
		return 0
	}
	return (1 << s) - 8
}
