package pattern

import "encoding/binary"

// Directions of a message, part of its Key.
const (
	// Request is a message from the gm_allsize client to the server.
	Request uint8 = 0
	// Echo is a reply from the server to the client.
	Echo uint8 = 1
)

// Key names the pattern of one message.
type Key struct {
	Size   uint8  // GM size class the message is sent with
	Length int    // message length in bytes
	Seq    uint64 // sequence number of the message within its test point
	Dir    uint8  // Request or Echo
}

// Mismatch is one byte that differs from the pattern.
type Mismatch struct {
	Offset int  // offset of the byte in the message
	Want   byte // the pattern's byte
	Got    byte // the received byte
}

// splitmix64 is the seeding function of SplitMix64 (Steele, Lea, Flood).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// seed returns the generator state for k; it is never zero.
func (k Key) seed() uint64 {
	s := splitmix64(uint64(k.Size)<<56 ^ uint64(k.Dir)<<48 ^ uint64(uint32(k.Length)))
	s = splitmix64(s ^ k.Seq)
	if s == 0 {
		s = 1
	}
	return s
}

// next advances the xorshift64* state and returns the next output.
func next(s *uint64) uint64 {
	x := *s
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*s = x
	return x * 0x2545f4914f6cdd1d
}

// Fill writes the pattern of k into b. It fills all of b; callers pass
// b[:k.Length].
func Fill(b []byte, k Key) {
	s := k.seed()
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], next(&s))
	}
	if i < len(b) {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], next(&s))
		copy(b[i:], w[:])
	}
}

// Byte returns the pattern byte of k at offset off (for tests and
// diagnostics; it regenerates the stream up to off).
func Byte(k Key, off int) byte {
	s := k.seed()
	var v uint64
	for i := 0; i <= off/8; i++ {
		v = next(&s)
	}
	return byte(v >> (8 * (off % 8)))
}

// Check compares got with the pattern of k. It returns the number of
// differing bytes and appends the first of them, at most limit, to dst. A
// message of the right pattern returns 0 and dst unchanged. Check does not
// allocate unless dst grows.
func Check(got []byte, k Key, dst []Mismatch, limit int) (int, []Mismatch) {
	s := k.seed()
	bad := 0
	i := 0
	for ; i+8 <= len(got); i += 8 {
		v := next(&s)
		g := binary.LittleEndian.Uint64(got[i:])
		if g == v {
			continue
		}
		for j := range 8 {
			if byte(g>>(8*j)) != byte(v>>(8*j)) {
				bad++
				if len(dst) < limit {
					dst = append(dst, Mismatch{Offset: i + j, Want: byte(v >> (8 * j)), Got: byte(g >> (8 * j))})
				}
			}
		}
	}
	if i < len(got) {
		v := next(&s)
		for j := 0; i+j < len(got); j++ {
			if w := byte(v >> (8 * j)); got[i+j] != w {
				bad++
				if len(dst) < limit {
					dst = append(dst, Mismatch{Offset: i + j, Want: w, Got: got[i+j]})
				}
			}
		}
	}
	return bad, dst
}
