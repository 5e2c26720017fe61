// Package auth implements EtherGM's optional cluster key: a trailer that
// carries a partition number and a keyed MAC after the payload of every
// frame (docs/PROTOCOL.md section 19, docs/SECURITY.md).
//
// A sealed frame is the ordinary frame with wire.FlagAuth set in its header
// (and its CRC32C recomputed), followed by a 20-byte trailer:
//
//	trailer
//	offset   0               1               2               3
//	        +---------------+---------------+---------------+---------------+
//	   0    |           partition           |    key id     |   reserved    |
//	        +---------------+---------------+---------------+---------------+
//	   4    |        tag (key, frame bytes 0 .. trailer 3), 16 bytes         |
//	        :                                                                :
//	        +---------------------------------------------------------------+
//
// The tag covers the whole frame from the first byte of the Ethernet header
// (MAC addresses and EtherType included) to the end of the payload, and the
// first four bytes of the trailer. Its MAC depends on that covered length
// alone: SipHash-2-4-128 for fewer than GHASHMin bytes (acks, small
// messages: the fastest MAC there), and GHASH-AES for GHASHMin bytes or
// more (full frames: several times faster than SipHash per byte with
// this package's GHASH, ghash.go), both keyed from the cluster key
// (docs/PROTOCOL.md section 19.2, docs/SECURITY.md section 5). Package
// link seals every frame it sends and opens (verifies and strips) every
// frame it receives when its Config.Auth is set; nothing else in EtherGM
// sees the trailer.
//
// The package is pure (no I/O) and allocation-free on the data path. An
// Authenticator is immutable after New and safe for concurrent use.
package auth

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"sync"

	"github.com/dchest/siphash"

	"github.com/ethergm/ethergm/wire"
)

// Trailer layout.
const (
	// TrailerLen is the length of the trailer a sealed frame carries after
	// its payload.
	TrailerLen = 20
	// TagLen is the length of the MAC at the end of the trailer.
	TagLen = 16
	// OffPartition, OffKeyID, OffReserved and OffTag are the offsets of the
	// trailer's fields from its first byte.
	OffPartition = 0
	OffKeyID     = 2
	OffReserved  = 3
	OffTag       = 4
	// MinSecretLen is the shortest secret NewKey accepts, in bytes.
	MinSecretLen = 16
	// MaxKeys is how many keys an Authenticator accepts at once: the
	// current key and, during a key rotation, one other.
	MaxKeys = 2
	// GHASHMin is the covered length (the frame and the trailer's first 4
	// bytes) from which the tag is GHASH-AES instead of SipHash-2-4-128.
	GHASHMin = 256
)

// kdfLabel separates the derivation of the SipHash key and the key id from
// any other use of the same secret; ghashLabel that of GHASH-AES's two AES
// keys.
const (
	kdfLabel   = "EtherGM cluster key v1\x00"
	ghashLabel = "EtherGM cluster key v1 GHASH-AES\x00"
)

// ghashNonce is the fixed GCM nonce of GHASH-AES: the GCM tag under it is
// GHASH of the frame masked by a constant, which the second AES key then
// encrypts (section 19.1 of docs/PROTOCOL.md).
var ghashNonce [12]byte

// Errors returned by Open. Each means the frame must be dropped; a link
// counts ErrPartition in Stats.ForeignPartition and the others in
// Stats.AuthFailures.
var (
	// ErrNoTrailer means the frame does not say it carries a trailer
	// (wire.FlagAuth clear) or is too short to hold one: it was sent by a
	// host without a cluster key, or forged.
	ErrNoTrailer = errors.New("auth: frame has no cluster-key trailer")
	// ErrPartition means the trailer names another partition.
	ErrPartition = errors.New("auth: frame of another partition")
	// ErrTag means no configured key produces the frame's tag: a wrong key,
	// a forged frame, or a frame changed after it was sealed.
	ErrTag = errors.New("auth: bad frame tag")
	// ErrSecret is returned by NewKey and ParseKeyFile for a secret that
	// is too short, and by New for a bad number of keys.
	ErrSecret = errors.New("auth: bad cluster key")
)

// Key is a cluster key derived from a shared secret. The zero Key is not
// valid.
type Key struct {
	k0, k1 uint64
	id     uint8
	ok     bool
	gcm    cipher.AEAD  // AES-128-GCM under the GHASH key (the GHASH pass)
	outer  cipher.Block // AES-128 under the outer key (the tag's encryption)
	tab    ghashTable   // H^33 .. H^1 for ghashTag (ghash.go)
	mask   u128         // AES(K1, J0): GCM's mask of GHASH under the fixed nonce
}

// NewKey derives a Key from secret, which must hold at least MinSecretLen
// bytes (use a random one, e.g. 32 random bytes in base64). The SipHash key
// and the key id are the first 17 bytes of SHA-256(label || secret); the
// two AES-128 keys of GHASH-AES are SHA-256(GHASH label || secret).
func NewKey(secret []byte) (Key, error) {
	if len(secret) < MinSecretLen {
		return Key{}, ErrSecret
	}
	sum := derive(kdfLabel, secret)
	k := Key{
		k0: binary.LittleEndian.Uint64(sum[0:8]),
		k1: binary.LittleEndian.Uint64(sum[8:16]),
		id: sum[16],
		ok: true,
	}
	g := derive(ghashLabel, secret)
	inner, err := aes.NewCipher(g[:16])
	if err != nil {
		return Key{}, err
	}
	if k.gcm, err = cipher.NewGCM(inner); err != nil {
		return Key{}, err
	}
	var h, j0 [16]byte
	inner.Encrypt(h[:], h[:])
	k.tab = newGHASHTable(h[:])
	j0[15] = 1
	inner.Encrypt(j0[:], j0[:])
	k.mask = load(j0[:])
	if k.outer, err = aes.NewCipher(g[16:]); err != nil {
		return Key{}, err
	}
	return k, nil
}

// derive returns SHA-256(label || secret).
func derive(label string, secret []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(label))
	h.Write(secret)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// sum returns the tag of p under k: SipHash-2-4 with 128-bit output, its
// two 64-bit halves as the reference implementation's little-endian
// output bytes read them.
func (k *Key) sum(p []byte) (uint64, uint64) { return siphash.Hash128(k.k0, k.k1, p) }

// ghash writes the GHASH-AES tag of p under k into tag (TagLen bytes):
// AES-128-GCM under the GHASH key with a fixed zero nonce, p as additional
// data and no plaintext (which is GHASH of p masked by a constant), then
// encrypted once more by AES-128 under the outer key. Where the CPU has
// the assembly, ghashTag computes the same tag without GCM. tag must not
// overlap p. The GCM and AES calls go through interfaces, so tag must
// already live in memory the caller owns (the frame's own trailer): a
// local array would escape and allocate on every call.
func (k *Key) ghash(tag, p []byte) {
	if haveGHASHAsm {
		k.ghashTag(tag, p)
		return
	}
	t := k.gcm.Seal(tag[:0], ghashNonce[:], nil, p)
	k.outer.Encrypt(t, t)
}

// ID returns the key id, an 8-bit fingerprint of the key that sealed frames
// carry so that a receiver holding two keys knows which one to try (and a
// capture shows which key was used). It does not reveal the key.
func (k Key) ID() uint8 { return k.id }

// ParseKeyFile parses the contents of a cluster key file: one secret per
// line, surrounding white space removed; empty lines and lines starting
// with '#' are ignored. The first secret is the current key (it seals and
// opens); a second one is accepted when opening only, for key rotation
// (docs/SECURITY.md). Each must have at least MinSecretLen bytes.
func ParseKeyFile(data []byte) ([]Key, error) {
	var keys []Key
	for line := range bytes.Lines(data) {
		s := strings.TrimSpace(string(line))
		if s == "" || s[0] == '#' {
			continue
		}
		k, err := NewKey([]byte(s))
		if err != nil {
			return nil, errors.New("auth: a cluster key file line holds fewer than 16 bytes")
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 || len(keys) > MaxKeys {
		return nil, errors.New("auth: a cluster key file must hold one secret, or two during a key rotation")
	}
	return keys, nil
}

// Authenticator seals and opens the frames of one partition with one or
// two keys.
type Authenticator struct {
	keys      [MaxKeys]Key
	n         int
	partition uint16
}

// New returns an Authenticator for partition that seals with keys[0] and
// opens frames sealed with any of keys (one, or two during a key rotation).
func New(partition uint16, keys ...Key) (*Authenticator, error) {
	if len(keys) == 0 || len(keys) > MaxKeys {
		return nil, ErrSecret
	}
	buildCRCDelta()
	a := &Authenticator{partition: partition, n: len(keys)}
	for i, k := range keys {
		if !k.ok {
			return nil, ErrSecret
		}
		a.keys[i] = k
	}
	return a, nil
}

// Partition returns the partition the Authenticator seals and accepts.
func (a *Authenticator) Partition() uint16 { return a.partition }

// KeyID returns the id of the key that seals.
func (a *Authenticator) KeyID() uint8 { return a.keys[0].id }

// Seal turns the EtherGM frame at the start of b into a sealed frame and
// returns its length, or 0 if b does not start with a well-formed EtherGM
// frame (then b is unchanged; a link sends such bytes as they are, and
// receivers with the key drop them). The frame's declared length n
// (wire.FrameLen) must leave room for the trailer: len(b) >= n+TrailerLen.
// Seal sets wire.FlagAuth, updates the CRC32C for it (without a second pass
// over the frame: a frame whose CRC was wrong keeps a wrong one) and writes
// the trailer at b[n:]; bytes after the declared length (padding) are
// overwritten. It does not allocate.
func (a *Authenticator) Seal(b []byte) int {
	n := wire.FrameLen(b)
	if n < 0 || n+TrailerLen > len(b) {
		return 0
	}
	h := wire.Header(b[wire.EthHeaderLen:n])
	if h.Len()+h.PayloadLen() != len(h) {
		return 0
	}
	setAuthFlag(h)
	t := b[n : n+TrailerLen]
	binary.BigEndian.PutUint16(t[OffPartition:], a.partition)
	t[OffKeyID] = a.keys[0].id
	t[OffReserved] = 0
	if n+OffTag >= GHASHMin {
		a.keys[0].ghash(t[OffTag:OffTag+TagLen], b[:n+OffTag])
		return n + TrailerLen
	}
	h0, h1 := a.keys[0].sum(b[:n+OffTag])
	binary.BigEndian.PutUint64(t[OffTag:], h0)
	binary.BigEndian.PutUint64(t[OffTag+8:], h1)
	return n + TrailerLen
}

// The CRC32C of a frame covers its flags (wire.Header.ComputeCRC), so Seal
// must change the CRC when it sets wire.FlagAuth. Instead of computing the
// CRC again over the whole frame (a second pass over every byte on the
// sender), it adds the difference that one bit makes: the CRC is linear,
// so for two byte strings of one length crc(a) XOR crc(b) is the raw CRC
// register after b XOR a, starting from zero, which for a single set bit
// depends only on how many bytes follow it. crcDelta[k] is that
// difference for wire.FlagAuth's bit followed by k covered bytes.
const (
	// authFlagOff is the header offset of the byte that holds
	// wire.FlagAuth (the low byte of the big-endian flags).
	authFlagOff = wire.OffFlags + 1
	// crcDeltaMax bounds the covered length the table serves: every frame
	// up to a 9216-byte jumbo Ethernet frame. Longer frames (the loopback
	// interface's) get a full CRC computation.
	crcDeltaMax = 9216
)

// wire.FlagAuth must lie in the flags' low byte (authFlagOff).
const _ = uint8(wire.FlagAuth)

var (
	crcDeltaOnce sync.Once
	crcDelta     []uint32
)

// buildCRCDelta fills crcDelta (once, on the first New: a process without
// a cluster key never builds it; 36 KiB, a few microseconds).
func buildCRCDelta() {
	crcDeltaOnce.Do(func() {
		tab := crc32.MakeTable(crc32.Castagnoli)
		d := make([]uint32, crcDeltaMax)
		r := tab[byte(wire.FlagAuth)]
		for k := range d {
			d[k] = r
			r = tab[byte(r)] ^ r>>8
		}
		crcDelta = d
	})
}

// setAuthFlag sets wire.FlagAuth in h, a whole well-formed header (its
// declared length is len(h)), and keeps its CRC32C what ComputeCRC would
// return. A frame whose CRC was wrong keeps a wrong one.
func setAuthFlag(h wire.Header) {
	f := h.Flags()
	if f&wire.FlagAuth != 0 {
		h.UpdateCRC() // already set: the stored CRC may or may not include it
		return
	}
	h.SetFlags(f | wire.FlagAuth)
	// Covered bytes after the flag's byte: the rest of bytes 0..OffCRC-1,
	// then everything after the CRC field.
	k := len(h) - (authFlagOff + 1) - (wire.HeaderLen - wire.OffCRC)
	if uint(k) < uint(len(crcDelta)) {
		h.SetCRC(h.CRC() ^ crcDelta[k])
		return
	}
	h.UpdateCRC()
}

// Open verifies the sealed frame at the start of b, whose declared length
// (wire.FrameLen) is n, and returns nil if its trailer, at b[n:], names
// this partition and carries the tag of one of the keys. The caller has
// already checked the frame (wire.ParseFrame) and may check the CRC before
// or after. It checks, in order: wire.FlagAuth and room for the trailer
// (ErrNoTrailer), the partition (ErrPartition), the tag (ErrTag). It does
// not allocate and takes the same time for every tag of a given frame.
//
// To verify a GHASH-AES tag without allocating, Open computes the expected
// tag in the trailer's tag bytes and puts the received tag back before it
// returns: b must be writable, and nothing may read it while Open runs.
func (a *Authenticator) Open(b []byte, n int) error {
	if n < wire.MinFrameLen || n+TrailerLen > len(b) {
		return ErrNoTrailer
	}
	if wire.Header(b[wire.EthHeaderLen:]).Flags()&wire.FlagAuth == 0 {
		return ErrNoTrailer
	}
	t := b[n : n+TrailerLen]
	if binary.BigEndian.Uint16(t[OffPartition:]) != a.partition {
		return ErrPartition
	}
	id := t[OffKeyID]
	if n+OffTag >= GHASHMin {
		return a.openGHASH(b[:n+OffTag], t[OffTag:OffTag+TagLen], id)
	}
	t0 := binary.BigEndian.Uint64(t[OffTag:])
	t1 := binary.BigEndian.Uint64(t[OffTag+8:])
	for i := 0; i < a.n; i++ {
		k := &a.keys[i]
		if k.id != id {
			continue
		}
		h0, h1 := k.sum(b[:n+OffTag])
		if (h0^t0)|(h1^t1) == 0 {
			return nil
		}
	}
	return ErrTag
}

// openGHASH verifies the GHASH-AES tag of covered, the received tag, with
// each key of id: it keeps a copy of the received tag, computes the
// expected one in its place, compares them in constant time and restores
// the received tag.
func (a *Authenticator) openGHASH(covered, tag []byte, id uint8) error {
	var got [TagLen]byte
	copy(got[:], tag)
	ok := 0
	for i := 0; i < a.n; i++ {
		k := &a.keys[i]
		if k.id != id {
			continue
		}
		k.ghash(tag, covered)
		ok |= subtle.ConstantTimeCompare(tag, got[:])
	}
	copy(tag, got[:])
	if ok == 1 {
		return nil
	}
	return ErrTag
}
