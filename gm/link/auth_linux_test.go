package link

import (
	"testing"

	"github.com/ethergm/ethergm/wire"
	"github.com/ethergm/ethergm/wire/auth"
)

// TestRingCheckAuth: with a cluster key the ring's frame check delivers
// only sealed frames of its partition, stripped of the trailer, and counts
// the others; without one it delivers frames as before.
func TestRingCheckAuth(t *testing.T) {
	key := testAuth(t, 3, clusterSecret)
	build := func(a *auth.Authenticator, pad int) []byte {
		f := &wire.HeaderFields{Type: wire.TypeData, TargetPort: 2, SourcePort: 2, TargetNode: 2, SourceNode: 1, MsgLen: 5}
		b := wire.AppendFrame(nil, [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 1}, wire.EtherType, f, []byte("hello"))
		b = append(b, make([]byte, auth.TrailerLen+pad)...)
		if a == nil {
			return b[:len(b)-auth.TrailerLen]
		}
		if n := a.Seal(b); n == 0 {
			t.Fatal("Seal refused")
		}
		return b
	}
	r := &rxRing{etherType: wire.EtherType, auth: key}
	sealed := build(key, 4) // 4 bytes of padding after the trailer
	f, ok := r.check(sealed)
	if !ok || len(f) != wire.FrameLen(sealed) || cap(f) != len(f) { // the trailer stays outside the view
		t.Fatalf("sealed frame: ok %v, len %d cap %d", ok, len(f), cap(f))
	}
	for name, b := range map[string][]byte{
		"unsealed":        build(nil, 0),
		"other key":       build(testAuth(t, 3, otherSecret), 0),
		"other partition": build(testAuth(t, 4, clusterSecret), 0),
	} {
		if _, ok := r.check(b); ok {
			t.Fatalf("%s frame delivered", name)
		}
	}
	if r.authFailures.load() != 2 || r.foreignPartition.load() != 1 || r.crcErrors.load() != 0 || r.malformed.load() != 0 {
		t.Fatalf("counters: auth %d, partition %d, crc %d, malformed %d",
			r.authFailures.load(), r.foreignPartition.load(), r.crcErrors.load(), r.malformed.load())
	}
	// A corrupted payload is a CRC error, as without a key.
	bad := build(key, 0)
	bad[len(bad)-auth.TrailerLen-1] ^= 1
	if _, ok := r.check(bad); ok || r.crcErrors.load() != 1 {
		t.Fatal("corrupted sealed frame not counted as a CRC error")
	}
	// Without a key: every well-formed frame, sealed or not, as before.
	plain := &rxRing{etherType: wire.EtherType}
	for _, b := range [][]byte{build(nil, 0), build(key, 0)} {
		if f, ok := plain.check(b); !ok || len(f) != wire.FrameLen(b) {
			t.Fatal("a link without a key refused a frame")
		}
	}
}
