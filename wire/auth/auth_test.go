package auth

import (
	"encoding/binary"
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

// longFrame is a full DATA frame at MTU 1500 with a key (1436 bytes of
// payload): its tag is GHASH-AES.
func longFrame() []byte {
	f := &wire.HeaderFields{Type: wire.TypeData, TargetPort: 4, SourcePort: 2, Flags: wire.FlagAckRequest,
		Size: 14, TargetNode: 2, SourceNode: 1, Session: 0x01020304, Seq: 8, MsgLen: 4096, Offset: 1436}
	p := make([]byte, 1436)
	for i := range p {
		p[i] = byte(i * 13)
	}
	b := wire.AppendFrame(make([]byte, 0, 1600), hostB, hostA, wire.EtherType, f, p)
	return b[:len(b)+TrailerLen]
}

// frames are a test's frames: short ones (SipHash) and a long one
// (GHASH-AES).
func frames() map[string][]byte {
	return map[string][]byte{"DATA": dataFrame(), "PUT": putFrame(), "long DATA": longFrame()}
}

func putFrame() []byte {
	f := &wire.HeaderFields{Type: wire.TypePut, TargetPort: 4, SourcePort: 2, Flags: wire.FlagHigh,
		TargetNode: 2, SourceNode: 1, Session: 9, Seq: 9, MsgLen: 8, RemoteAddr: 0x0000010000001000}
	b := wire.AppendFrame(make([]byte, 0, 128), hostB, hostA, wire.EtherType, f, []byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3})
	return b[:len(b)+TrailerLen]
}

func TestSealOpen(t *testing.T) {
	a := mustAuth(t, 7, testSecret)
	for name, b := range frames() {
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
	for name, b := range frames() {
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
	for name, b := range frames() {
		t.Run(name, func(t *testing.T) { testOpenErrors(t, b) })
	}
}

func testOpenErrors(t *testing.T, b []byte) {
	a := mustAuth(t, 7, testSecret)
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
	for name, b := range frames() {
		t.Run(name, func(t *testing.T) { testRotation(t, b) })
	}
}

func testRotation(t *testing.T, b []byte) {
	const oldS, newS = "old-cluster-secret-0123456789ab", "new-cluster-secret-0123456789ab"
	oldOnly := mustAuth(t, 1, oldS)
	both := mustAuth(t, 1, newS, oldS)
	newOnly := mustAuth(t, 1, newS)

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
	want := mustKey(t, testSecret)
	var got0, want0 [TagLen]byte
	keys[0].ghash(got0[:], make([]byte, 300)) // both GHASH-AES keys
	want.ghash(want0[:], make([]byte, 300))
	if keys[0].k0 != want.k0 || keys[0].k1 != want.k1 || keys[0].id != want.id || got0 != want0 {
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
	for name, b := range frames() {
		n0 := wire.FrameLen(b)
		n := a.Seal(b)
		allocs := testing.AllocsPerRun(100, func() {
			a.Seal(b)
			if a.Open(b[:n], n0) != nil {
				panic("open")
			}
		})
		if allocs != 0 {
			t.Fatalf("%s: Seal+Open allocate %v times", name, allocs)
		}
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
		h := wire.Header(f[wire.EthHeaderLen:])
		flags, crc := h.Flags(), h.CRC()
		b.Run(itoa(size), func(b *testing.B) {
			b.SetBytes(int64(len(f)))
			b.ReportAllocs()
			for b.Loop() {
				h.SetFlags(flags) // as built by the sender: no FlagAuth yet
				h.SetCRC(crc)
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

// TestSealCRC checks that Seal's incremental CRC update gives the CRC a
// full computation gives, for every payload length a table entry serves
// (DATA and PUT, whose extension moves the payload), for lengths past the
// table (full computation), and for a frame that already has FlagAuth.
func TestSealCRC(t *testing.T) {
	a := mustAuth(t, 7, testSecret)
	payload := make([]byte, 20000)
	for i := range payload {
		payload[i] = byte(i*7 + i>>8)
	}
	buf := make([]byte, 0, len(payload)+200)
	check := func(typ wire.Type, flags wire.Flags, size int) {
		t.Helper()
		f := &wire.HeaderFields{Type: typ, TargetPort: 4, SourcePort: 2, Flags: flags, TargetNode: 2, SourceNode: 1,
			Session: 5, Seq: uint32(size), MsgLen: uint32(size), RemoteAddr: 0x1000}
		b := wire.AppendFrame(buf[:0], hostB, hostA, wire.EtherType, f, payload[:size])
		b = b[:len(b)+TrailerLen]
		n := a.Seal(b)
		if n == 0 {
			t.Fatalf("%v, %d bytes: Seal refused", typ, size)
		}
		h := wire.Header(b[wire.EthHeaderLen : n-TrailerLen])
		if h.Flags()&wire.FlagAuth == 0 || h.Flags()&^wire.FlagAuth != flags&^wire.FlagAuth {
			t.Fatalf("%v, %d bytes: flags %v after Seal of %v", typ, size, h.Flags(), flags)
		}
		if got, want := h.CRC(), h.ComputeCRC(); got != want {
			t.Fatalf("%v, %v, %d bytes: CRC %08x after Seal, want %08x", typ, flags, size, got, want)
		}
	}
	for size := 0; size <= crcDeltaMax; size++ {
		check(wire.TypeData, wire.FlagAckRequest, size)
	}
	for _, size := range []int{0, 1, 1436, 8936, crcDeltaMax - 60, crcDeltaMax - 50, crcDeltaMax, 19999} {
		check(wire.TypePut, wire.FlagHigh, size)
		check(wire.TypeData, 0, size)
		check(wire.TypeData, wire.FlagAuth, size) // already set (a stale CRC is recomputed)
	}
	// A frame sealed twice: the second Seal sees FlagAuth and a CRC that
	// already covers it.
	b := dataFrame()
	n0 := wire.FrameLen(b)
	a.Seal(b)
	if n := a.Seal(b); n != n0+TrailerLen || !wire.Header(b[wire.EthHeaderLen:n0]).CheckCRC() || a.Open(b, n0) != nil {
		t.Fatal("a frame sealed twice does not open with a good CRC")
	}
}

// TestSealKeepsBadCRC: Seal updates the CRC for the flag it sets and does
// not recompute it, so a frame corrupted before sealing still shows a CRC
// error to a receiver without the key (its tag is valid: the sender sealed
// what it had).
func TestSealKeepsBadCRC(t *testing.T) {
	a := mustAuth(t, 7, testSecret)
	b := dataFrame()
	n0 := wire.FrameLen(b)
	b[n0-1] ^= 1
	n := a.Seal(b)
	if wire.Header(b[wire.EthHeaderLen:n0]).CheckCRC() {
		t.Fatal("a frame corrupted before Seal has a good CRC after it")
	}
	if a.Open(b[:n], n0) != nil {
		t.Fatal("the sealed frame does not open")
	}
}

// TestSipHashVectors checks the MAC primitive against the SipHash
// reference test vectors for SipHash-2-4 with 128-bit output (key 00..0f,
// message 00, 01, ... of length i; output bytes as the reference prints
// them, i.e. both halves little-endian). Seal stores the halves big-endian
// (docs/PROTOCOL.md section 19.1), which TestGoldenSealed pins.
func TestSipHashVectors(t *testing.T) {
	vectors := map[int]string{
		0:  "a3817f04ba25a8e66df67214c7550293",
		1:  "da87c1d86b99af44347659119b22fc45",
		7:  "a1f1ebbed8dbc153c0b84aa61ff08239",
		8:  "3b62a9ba6258f5610f83e264f31497b4",
		15: "5493e99933b0a8117e08ec0f97cfc3d9",
		16: "6ee2a4ca67b054bbfd3315bf85230577",
		63: "5150d1772f50834a503e069a973fbd7c",
	}
	var key [16]byte
	var msg [64]byte
	for i := range msg {
		msg[i] = byte(i)
		if i < 16 {
			key[i] = byte(i)
		}
	}
	k := Key{k0: binary.LittleEndian.Uint64(key[0:]), k1: binary.LittleEndian.Uint64(key[8:]), ok: true}
	for n, want := range vectors {
		h0, h1 := k.sum(msg[:n])
		var got [16]byte
		binary.LittleEndian.PutUint64(got[0:], h0)
		binary.LittleEndian.PutUint64(got[8:], h1)
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("SipHash-2-4-128 of %d bytes = %x, want %s", n, got, want)
		}
	}
}
