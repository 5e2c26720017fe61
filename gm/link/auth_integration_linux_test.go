package link

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/wire"
	"github.com/ethergm/ethergm/wire/auth"
)

func testAuth(tb testing.TB, partition uint16, secrets ...string) *auth.Authenticator {
	tb.Helper()
	var keys []auth.Key
	for _, s := range secrets {
		k, err := auth.NewKey([]byte(s))
		if err != nil {
			tb.Fatal(err)
		}
		keys = append(keys, k)
	}
	a, err := auth.New(partition, keys...)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

const (
	clusterSecret = "integration-cluster-key-0123456789"
	otherSecret   = "some-other-cluster-key-0123456789"
)

// collect reads frames from l for d and returns copies of them.
func collect(l *Link, d time.Duration) [][]byte {
	var got [][]byte
	frames := make([][]byte, 64)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		n, err := l.Wait(frames, 10*time.Millisecond)
		if err != nil {
			break
		}
		for _, f := range frames[:n] {
			got = append(got, bytes.Clone(f))
		}
	}
	return got
}

// TestIntegrationClusterKey runs five hosts on one bridge: A and B share the
// cluster key in partition 1, C has no key, D has the key but partition 2,
// E has another key in partition 1. A and B exchange every frame intact;
// nothing that C, D or E sends reaches B, whether new, forged, or replayed
// and altered from A's sealed frames, and B counts each such frame.
func TestIntegrationClusterKey(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 5})
	keyP1 := testAuth(t, 1, clusterSecret)
	a := openOn(t, c.Hosts[0], &Config{Auth: keyP1})
	b := openOn(t, c.Hosts[1], &Config{Auth: keyP1})
	cl := openOn(t, c.Hosts[2], nil)
	d := openOn(t, c.Hosts[3], &Config{Auth: testAuth(t, 2, clusterSecret)})
	e := openOn(t, c.Hosts[4], &Config{Auth: testAuth(t, 1, otherSecret)})
	macA, macB := mac6(a.HardwareAddr()), mac6(b.HardwareAddr())

	if a.MTU() != 1500-auth.TrailerLen || cl.MTU() != 1500 {
		t.Fatalf("MTU with a key %d, without %d", a.MTU(), cl.MTU())
	}

	// A -> B: every size, through Send, SendBatch and TxSlot/TxCommit.
	const port = 5
	var want [][]byte
	buf := make([]byte, 0, 9100)
	sizes := []int{8, 100, 1000, a.MTU() - wire.HeaderLen}
	for i, size := range sizes {
		f := bytes.Clone(testFrame(buf, macB, macA, port, uint64(i), size))
		want = append(want, f)
		if err := a.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	var batch [][]byte
	for i, size := range sizes {
		f := bytes.Clone(testFrame(buf, macB, macA, port, uint64(100+i), size))
		want = append(want, f)
		batch = append(batch, f)
	}
	if _, err := a.SendBatch(batch); err != nil {
		t.Fatal(err)
	}
	for i, size := range sizes {
		f := testFrame(buf, macB, macA, port, uint64(200+i), size)
		want = append(want, bytes.Clone(f))
		s := a.TxSlot()
		if s == nil {
			t.Fatal("no TX slot")
		}
		if err := a.TxCommit(copy(s, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	// A frame longer than the MTU left by the trailer is refused.
	if err := a.Send(testFrame(buf, macB, macA, port, 999, a.MTU()-wire.HeaderLen+1)); err == nil {
		t.Fatal("Send of a frame that leaves no room for the trailer succeeded")
	}
	got := collect(b, 300*time.Millisecond)
	if len(got) != len(want) {
		t.Fatalf("B received %d frames, want %d", len(got), len(want))
	}
	for i, f := range got {
		h, err := wire.ParseFrameCRC(f, wire.EtherType)
		if err != nil || h.Flags()&wire.FlagAuth == 0 {
			t.Fatalf("frame %d: %v, flags %v", i, err, h.Flags())
		}
		// The delivered frame is the frame sent, with FlagAuth (and the
		// CRC) changed and the trailer stripped.
		w := bytes.Clone(want[i])
		wh := wire.Header(w[wire.EthHeaderLen:])
		wh.SetFlags(wh.Flags() | wire.FlagAuth)
		wh.UpdateCRC()
		if !bytes.Equal(f, w) {
			t.Fatalf("frame %d differs from the one sent", i)
		}
	}
	// A's frames as they went on the wire: sealing is deterministic, so
	// a copy of a frame A sent, sealed with A's key, is the frame A put on
	// the wire (the exact replay below passes B's check).
	sealed := make([][]byte, len(want))
	for i, f := range want {
		s := append(bytes.Clone(f), make([]byte, auth.TrailerLen)...)
		sealed[i] = s[:keyP1.Seal(s)]
	}
	for i, f := range sealed {
		if len(f) != len(want[i])+auth.TrailerLen || binary.BigEndian.Uint16(f[len(want[i]):]) != 1 {
			t.Fatalf("sealed frame %d: %d bytes, partition %x", i, len(f), f[len(want[i]):len(want[i])+2])
		}
	}
	st := b.Stats()
	if st.AuthFailures != 0 || st.ForeignPartition != 0 || st.CRCErrors != 0 {
		t.Fatalf("B's counters after legitimate traffic: %+v", st)
	}

	// B answers A: the other direction works too.
	if err := b.Send(testFrame(buf, macA, macB, port, 7, 64)); err != nil {
		t.Fatal(err)
	}
	if got := collect(a, 100*time.Millisecond); len(got) != 1 || frameSeq(got[0]) != 7 {
		t.Fatalf("A received %d frames from B", len(got))
	}

	// The attack: C (no key) sends plain frames, frames with FlagAuth and
	// a made-up trailer, and A's sealed frames replayed with one changed
	// byte (payload, sequence number, destination, partition, tag);
	// D (partition 2) and E (another key) send sealed frames of their own.
	macC := mac6(cl.HardwareAddr())
	forged := 0
	send := func(l *Link, f []byte) {
		t.Helper()
		if err := l.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		send(cl, testFrame(buf, macB, macA, port, uint64(1000+i), 64))
		forged++
	}
	for i := 0; i < 10; i++ {
		f := testFrame(buf, macB, macC, port, uint64(2000+i), 64)
		h := wire.Header(f[wire.EthHeaderLen:])
		h.SetFlags(h.Flags() | wire.FlagAuth)
		h.UpdateCRC()
		trailer := make([]byte, auth.TrailerLen)
		binary.BigEndian.PutUint16(trailer, 1)
		trailer[auth.OffKeyID] = keyP1.KeyID()
		for j := auth.OffTag; j < auth.TrailerLen; j++ {
			trailer[j] = byte(i*31 + j)
		}
		send(cl, append(f, trailer...))
		forged++
	}
	replay := sealed[0]
	n := wire.FrameLen(replay)
	for _, off := range []int{
		n - 1,                               // last payload byte
		wire.EthHeaderLen + wire.OffSeq + 3, // sequence number
		n + auth.OffPartition + 1,           // partition (low byte)
		n + auth.OffTag + 5,                 // tag
		11,                                  // source MAC
	} {
		f := bytes.Clone(replay)
		f[off] ^= 0x04
		wire.Header(f[wire.EthHeaderLen:n]).UpdateCRC() // a good CRC: only the MAC can tell
		send(cl, f)
		forged++
	}
	foreign := 0
	for i := 0; i < 5; i++ {
		send(d, testFrame(buf, macB, mac6(d.HardwareAddr()), port, uint64(3000+i), 64))
		foreign++
		send(e, testFrame(buf, macB, mac6(e.HardwareAddr()), port, uint64(4000+i), 64))
		forged++
	}
	if got := collect(b, 300*time.Millisecond); len(got) != 0 {
		t.Fatalf("B received %d frames from hosts without the key or partition (first seq %d)", len(got), frameSeq(got[0]))
	}
	st = b.Stats()
	// The changed partition byte is counted as a foreign partition.
	if st.AuthFailures+st.ForeignPartition != uint64(forged+foreign) || st.ForeignPartition != uint64(foreign+1) {
		t.Fatalf("B counted %d auth failures and %d foreign-partition frames; sent %d forged and %d of partition 2",
			st.AuthFailures, st.ForeignPartition, forged, foreign)
	}

	// Partitions are symmetric: D does not hear from B either.
	send(b, testFrame(buf, mac6(d.HardwareAddr()), macB, port, 5000, 64))
	if got := collect(d, 100*time.Millisecond); len(got) != 0 {
		t.Fatal("partition 2 received a frame of partition 1")
	}
	if d.Stats().ForeignPartition != 1 {
		t.Fatalf("D's counters: %+v", d.Stats())
	}

	// What the key does not stop (docs/SECURITY.md): an unchanged replay
	// of a sealed frame passes the link; the GM sessions and sequence
	// numbers above it make it a duplicate.
	send(cl, replay)
	if got := collect(b, 100*time.Millisecond); len(got) != 1 {
		t.Fatalf("an exact replay: B received %d frames, want 1 (the link does not detect replays)", len(got))
	}
}
