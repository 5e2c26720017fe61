package auth

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/ethergm/ethergm/wire"
)

var (
	hostA = [6]byte{2, 0, 0, 0, 0, 1}
	hostB = [6]byte{2, 0, 0, 0, 0, 2}
)

// testSecret is the secret of the sealed golden vector (docs/PROTOCOL.md
// section 19.4).
const testSecret = "ethergm-test-cluster-key-0123456"

func mustKey(t testing.TB, secret string) Key {
	t.Helper()
	k, err := NewKey([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustAuth(t testing.TB, partition uint16, secrets ...string) *Authenticator {
	t.Helper()
	var keys []Key
	for _, s := range secrets {
		keys = append(keys, mustKey(t, s))
	}
	a, err := New(partition, keys...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// dataFrame is the DATA frame of docs/PROTOCOL.md section 17.1, with room
// for a trailer.
func dataFrame() []byte {
	f := &wire.HeaderFields{Type: wire.TypeData, TargetPort: 4, SourcePort: 2, Flags: wire.FlagAckRequest,
		Size: 5, TargetNode: 2, SourceNode: 1, Session: 0x01020304, Seq: 7, MsgLen: 20}
	b := wire.AppendFrame(make([]byte, 0, 128), hostB, hostA, wire.EtherType, f, []byte("hello, ethergm world"))
	return b[:len(b)+TrailerLen]
}

func putFrame() []byte {
	f := &wire.HeaderFields{Type: wire.TypePut, TargetPort: 4, SourcePort: 2, Flags: wire.FlagHigh,
		TargetNode: 2, SourceNode: 1, Session: 9, Seq: 9, MsgLen: 8, RemoteAddr: 0x0000010000001000}
	b := wire.AppendFrame(make([]byte, 0, 128), hostB, hostA, wire.EtherType, f, []byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3})
	return b[:len(b)+TrailerLen]
}

func TestSealOpen(t *testing.T) {
	a := mustAuth(t, 7, testSecret)
	for name, b := range map[string][]byte{"DATA": dataFrame(), "PUT": putFrame()} {
		n0 := wire.FrameLen(b)
		n := a.Seal(b)
		if n != n0+TrailerLen {
			t.Fatalf("%s: Seal = %d, want %d", name, n, n0+TrailerLen)
		}
		h, err := wire.ParseFrameCRC(b[:n], wire.EtherType)
		if err != nil {
			t.Fatalf("%s: sealed frame does not parse with a good CRC: %v", name, err)
		}
		if h.Flags()&wire.FlagAuth == 0 {
			t.Fatalf("%s: FlagAuth not set", name)
		}
		if wire.FrameLen(b) != n0 {
			t.Fatalf("%s: declared length changed", name)
		}
		if err := a.Open(b[:n], n0); err != nil {
			t.Fatalf("%s: Open = %v", name, err)
		}
		// Extra bytes after the trailer (Ethernet padding) do not matter.
		padded := append(append([]byte(nil), b[:n]...), 0, 0, 0)
		if err := a.Open(padded, n0); err != nil {
			t.Fatalf("%s: Open with padding = %v", name, err)
		}
	}
}

// TestTamperAnyByte flips every bit of a sealed frame, one at a time: no
// changed frame opens.
func TestTamperAnyByte(t *testing.T) {
	a := mustAuth(t, 7, testSecret)
	for name, b := range map[string][]byte{"DATA": dataFrame(), "PUT": putFrame()} {
		n0 := wire.FrameLen(b)
		n := a.Seal(b)
		for i := 0; i < n; i++ {
			for bit := 0; bit < 8; bit++ {
				c := append([]byte(nil), b[:n]...)
				c[i] ^= 1 << bit
				m := wire.FrameLen(c)
				if m < 0 {
					m = n0
				}
				if err := a.Open(c, m); err == nil {
					t.Fatalf("%s: frame with byte %d bit %d flipped opens", name, i, bit)
				}
			}
		}
		// A truncated trailer.
		for cut := 1; cut <= TrailerLen; cut++ {
			if err := a.Open(b[:n-cut], n0); !errors.Is(err, ErrNoTrailer) {
				t.Fatalf("%s: trailer cut by %d: Open = %v, want ErrNoTrailer", name, cut, err)
			}
		}
	}
}

func TestOpenErrors(t *testing.T) {
	a := mustAuth(t, 7, testSecret)
	b := dataFrame()
	n0 := wire.FrameLen(b)

	// An unsealed frame (a host without the key).
	if err := a.Open(b, n0); !errors.Is(err, ErrNoTrailer) {
		t.Fatalf("unsealed: %v, want ErrNoTrailer", err)
	}
	// An unsealed frame with FlagAuth forged and 20 bytes of junk.
	c := append([]byte(nil), b...)
	h := wire.Header(c[wire.EthHeaderLen:])
	h.SetFlags(h.Flags() | wire.FlagAuth)
	h.UpdateCRC()
	if err := a.Open(c, n0); !errors.Is(err, ErrTag) && !errors.Is(err, ErrPartition) {
		t.Fatalf("forged flag: %v", err)
	}

	sealed := append([]byte(nil), b...)
	n := a.Seal(sealed)
	// Another key, same partition.
	other := mustAuth(t, 7, "another-cluster-secret-abcdefgh")
	if err := other.Open(sealed[:n], n0); !errors.Is(err, ErrTag) {
		t.Fatalf("wrong key: %v, want ErrTag", err)
	}
	// Same key, another partition.
	p8 := mustAuth(t, 8, testSecret)
	if err := p8.Open(sealed[:n], n0); !errors.Is(err, ErrPartition) {
		t.Fatalf("wrong partition: %v, want ErrPartition", err)
	}
	// A frame sealed for partition 8 and relabelled as partition 7.
	s8 := append([]byte(nil), b...)
	p8.Seal(s8)
	s8[n0+OffPartition+1] = 7
	if err := a.Open(s8, n0); !errors.Is(err, ErrTag) {
		t.Fatalf("relabelled partition: %v, want ErrTag", err)
	}
	// A frame sent to another host: same bytes, other destination MAC.
	r := append([]byte(nil), sealed[:n]...)
	copy(r[0:6], []byte{2, 0, 0, 0, 0, 3})
	if err := a.Open(r, n0); !errors.Is(err, ErrTag) {
		t.Fatalf("redirected frame: %v, want ErrTag", err)
	}
}

// TestRotation: during a rotation hosts hold both keys; frames sealed with
// either open, and the first key seals.
func TestRotation(t *testing.T) {
	const oldS, newS = "old-cluster-secret-0123456789ab", "new-cluster-secret-0123456789ab"
	oldOnly := mustAuth(t, 1, oldS)
	both := mustAuth(t, 1, newS, oldS)
	newOnly := mustAuth(t, 1, newS)

	b := dataFrame()
	n0 := wire.FrameLen(b)
	s := append([]byte(nil), b...)
	n := oldOnly.Seal(s)
	if err := both.Open(s[:n], n0); err != nil {
		t.Fatalf("old frame at a rotating host: %v", err)
	}
	if err := newOnly.Open(s[:n], n0); !errors.Is(err, ErrTag) {
		t.Fatalf("old frame at a rotated host: %v, want ErrTag", err)
	}
	s = append([]byte(nil), b...)
	n = both.Seal(s)
	if s[n0+OffKeyID] != newOnly.KeyID() {
		t.Fatalf("rotating host seals with key id %#x, want the new key's %#x", s[n0+OffKeyID], newOnly.KeyID())
	}
	if err := newOnly.Open(s[:n], n0); err != nil {
		t.Fatalf("rotating host's frame at a rotated host: %v", err)
	}
}

func TestSealRefuses(t *testing.T) {
	a := mustAuth(t, 0, testSecret)
	b := dataFrame()
	n0 := wire.FrameLen(b)
	// No room for the trailer.
	if n := a.Seal(b[:n0+TrailerLen-1]); n != 0 {
		t.Fatalf("Seal without room = %d", n)
	}
	// Not an EtherGM frame.
	junk := make([]byte, 40)
	if n := a.Seal(junk); n != 0 {
		t.Fatalf("Seal of junk = %d", n)
	}
	if string(b[:n0]) != string(dataFrame()[:n0]) {
		t.Fatal("a refused Seal changed the frame")
	}
}

func TestKeys(t *testing.T) {
	if _, err := NewKey([]byte("short")); !errors.Is(err, ErrSecret) {
		t.Fatalf("short secret: %v", err)
	}
	if _, err := New(0); !errors.Is(err, ErrSecret) {
		t.Fatalf("no key: %v", err)
	}
	if _, err := New(0, Key{}); !errors.Is(err, ErrSecret) {
		t.Fatalf("zero key: %v", err)
	}
	keys, err := ParseKeyFile([]byte("# rotation in progress\n  " + testSecret + "  \n\nold-cluster-secret-0123456789ab\n"))
	if err != nil || len(keys) != 2 {
		t.Fatalf("ParseKeyFile = %d keys, %v", len(keys), err)
	}
	if keys[0] != mustKey(t, testSecret) {
		t.Fatal("white space around a secret is part of it")
	}
	for _, bad := range []string{"", "# nothing\n", "short\n", strings.Repeat("k", 20) + "\n" + strings.Repeat("l", 20) + "\n" + strings.Repeat("m", 20)} {
		if _, err := ParseKeyFile([]byte(bad)); err == nil {
			t.Fatalf("ParseKeyFile(%q) accepted", bad)
		}
	}
}

// TestGoldenSealed pins the sealed form of the DATA frame of
// docs/PROTOCOL.md section 17.1 (section 19.4).
func TestGoldenSealed(t *testing.T) {
	a := mustAuth(t, 0x0007, testSecret)
	b := dataFrame()
	n := a.Seal(b)
	got := hex.EncodeToString(b[:n])
	const want = "02000000000202000000000188b5010104020082050000000002000000010102030400000007000000000000001400000000001400000ec3da3068656c6c6f2c206574686572676d20776f726c640007a100bab4ca5e7d32e37ecffaa659413faeb4"
	if got != want {
		t.Fatalf("sealed frame\n got %s\nwant %s", got, want)
	}
}

func TestAllocs(t *testing.T) {
	a := mustAuth(t, 7, testSecret, "old-cluster-secret-0123456789ab")
	b := dataFrame()
	n0 := wire.FrameLen(b)
	n := a.Seal(b)
	allocs := testing.AllocsPerRun(100, func() {
		a.Seal(b)
		if a.Open(b[:n], n0) != nil {
			panic("open")
		}
	})
	if allocs != 0 {
		t.Fatalf("Seal+Open allocate %v times", allocs)
	}
}

func benchFrame(size int) []byte {
	f := &wire.HeaderFields{Type: wire.TypeData, TargetPort: 4, SourcePort: 2, TargetNode: 2, SourceNode: 1, MsgLen: uint32(size)}
	b := wire.AppendFrame(make([]byte, 0, 9100), hostB, hostA, wire.EtherType, f, make([]byte, size))
	return b[:len(b)+TrailerLen]
}

// BenchmarkSeal and BenchmarkOpen measure the key's cost per frame: an
// 8-byte message (66-byte frame), a full frame at MTU 1500 (1436 bytes of
// payload with the trailer) and at MTU 9000.
func BenchmarkSeal(b *testing.B) {
	a := mustAuth(b, 7, testSecret)
	for _, size := range []int{8, 1436, 8936} {
		f := benchFrame(size)
		b.Run(itoa(size), func(b *testing.B) {
			b.SetBytes(int64(len(f)))
			b.ReportAllocs()
			for b.Loop() {
				a.Seal(f)
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	a := mustAuth(b, 7, testSecret)
	for _, size := range []int{8, 1436, 8936} {
		f := benchFrame(size)
		n0 := wire.FrameLen(f)
		a.Seal(f)
		b.Run(itoa(size), func(b *testing.B) {
			b.SetBytes(int64(len(f)))
			b.ReportAllocs()
			for b.Loop() {
				if a.Open(f, n0) != nil {
					b.Fatal("open")
				}
			}
		})
	}
}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}
