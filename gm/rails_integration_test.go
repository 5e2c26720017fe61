package gm_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
)

// openUnit opens port id of the unit made of interfaces ifaces on host h.
func openUnit(t testing.TB, h *netns.Host, ifaces []string, id int, cfg *gm.Config) *gm.Port {
	t.Helper()
	var p *gm.Port
	err := h.Do(func() error {
		var err error
		p, err = gm.Open(strings.Join(ifaces, ","), id, "rails", cfg)
		return err
	})
	if err != nil {
		t.Fatalf("open %s port %d on %v: %v", h.Name, id, ifaces, err)
	}
	t.Cleanup(func() { p.Close() })
	dumpOnFailure(t, h.Name, id, p)
	return p
}

// ifCounter reads a counter of interface ifname of host h from sysfs.
func ifCounter(t testing.TB, h *netns.Host, ifname, counter string) uint64 {
	t.Helper()
	out, err := h.Run("cat", "/sys/class/net/"+ifname+"/statistics/"+counter)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("%s %s %s: %q", h.Name, ifname, counter, out)
	}
	return v
}

// railStream sends count messages of msgLen bytes (distinct patterns) from
// a to port 4 of node bn (port b) at low priority and checks that all
// arrive, in order and intact, and that every send succeeds. mid, if set,
// runs once after half the messages were delivered.
func railStream(t *testing.T, a, b *gm.Port, bn gm.NodeID, count, msgLen int, seed uint64, mid func()) time.Duration {
	t.Helper()
	size := gm.MinSizeForLength(msgLen)
	var mu sync.Mutex
	var got [][]byte
	lb := startLoop(b, func(e *gm.Event) {
		mu.Lock()
		got = append(got, bytes.Clone(e.Message))
		mu.Unlock()
		_ = b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	defer lb.Stop()
	for i := 0; i < 16; i++ {
		if err := b.ProvideReceiveBuffer(make([]byte, msgLen), size, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	la := startLoop(a, nil)
	defer la.Stop()
	comps := newCompletions()
	want := make([][]byte, count)
	start := time.Now()
	sendEnd := start.Add(60 * time.Second)
	delivered := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	for i := 0; i < count; i++ {
		if mid != nil && i == count/2 {
			waitFor(t, 30*time.Second, "half the messages", func() bool { return delivered() >= count/4 })
			mid()
			mid = nil
		}
		want[i] = pattern(msgLen, seed+uint64(i))
		for {
			err := a.SendWithCallback(want[i], size, msgLen, gm.LowPriority, bn, 4, comps.cb, i)
			if err == nil {
				break
			}
			if !errors.Is(err, gm.ErrNoSendToken) {
				t.Fatal(err)
			}
			if time.Now().After(sendEnd) {
				t.Fatalf("send %d: no send token for 60 s (completions: %d)", i, len(comps.snapshot()))
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	cs := comps.wait(t, count, 60*time.Second)
	for _, c := range cs {
		if c.st != gm.Success {
			t.Fatalf("send %d: %v", c.id, c.st)
		}
	}
	waitFor(t, 10*time.Second, "all messages", func() bool { return delivered() >= count })
	el := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != count {
		t.Fatalf("received %d messages, want %d", len(got), count)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d differs (len %d, want %d)", i, len(got[i]), len(want[i]))
		}
	}
	return el
}

// railPair opens port 2 on host0 over ifaces0 and port 4 on host1 over
// ifaces1, with a node map of the cluster (every host's MACs) unless
// mapPath is given.
func railPair(t *testing.T, c *netns.Cluster, mapPath string, ifaces0, ifaces1 []string) (a, b *gm.Port) {
	t.Helper()
	if mapPath == "" {
		mapPath = writeMap(t, c)
	}
	a = openUnit(t, c.Hosts[0], ifaces0, 2, testConfig(c.Hosts[0], mapPath))
	b = openUnit(t, c.Hosts[1], ifaces1, 4, testConfig(c.Hosts[1], mapPath))
	return a, b
}

func railTx(p *gm.Port) []uint64 {
	var v []uint64
	for _, r := range p.RailStats() {
		v = append(v, r.Link.TxFrames)
	}
	return v
}

// TestIntegrationRails streams large messages over a two-rail unit: both
// rails carry a fair share of the data (the port's per-rail counters and
// the interfaces' own), every message arrives intact and in order, and
// striping causes no spurious retransmission.
func TestIntegrationRails(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2, Rails: 2})
	h0, h1 := c.Hosts[0], c.Hosts[1]
	a, b := railPair(t, c, "", h0.Ifaces, h1.Ifaces)
	if n := len(a.RailStats()); n != 2 {
		t.Fatalf("%d rails, want 2", n)
	}
	var sys0 [2]uint64
	for r := range 2 {
		sys0[r] = ifCounter(t, h0, h0.Ifaces[r], "tx_packets")
	}
	const count, msgLen = 120, 256 << 10
	el := railStream(t, a, b, b.NodeID(), count, msgLen, 100, nil)
	as, bs := a.Stats(), b.Stats()
	ra, rb := a.RailStats(), b.RailStats()
	t.Logf("%d x %d KiB in %v (%.0f MB/s); sender rails tx %v, receiver rails rx %d/%d",
		count, msgLen>>10, el, float64(count*msgLen)/el.Seconds()/1e6, railTx(a), rb[0].Link.RxFrames, rb[1].Link.RxFrames)
	t.Logf("sender %+v\nreceiver %+v", as, bs)
	// Each rail must carry a meaningful share of the data: an even split
	// gives each half of it, a unit that does not stripe gives one rail
	// (almost) nothing. 1/8 leaves room for the imbalance a loaded machine
	// causes (a rail whose ring or queue is busy gets less).
	for r := range 2 {
		tx := ra[r].Link.TxFrames
		if tx < as.DataSent/8 {
			t.Errorf("rail %d sent %d frames of %d data frames: not striped", r, tx, as.DataSent)
		}
		if rx := rb[r].Link.RxFrames; rx < as.DataSent/8 {
			t.Errorf("rail %d: receiver got %d frames of %d", r, rx, as.DataSent)
		}
		sys := ifCounter(t, h0, h0.Ifaces[r], "tx_packets") - sys0[r]
		if sys < tx {
			t.Errorf("%s %s: tx_packets grew by %d, the port sent %d frames on it", h0.Name, h0.Ifaces[r], sys, tx)
		}
		if ra[r].Down || rb[r].Down || ra[r].SuspectPeers != 0 {
			t.Errorf("rail %d: %+v / %+v", r, ra[r], rb[r])
		}
	}
	// Striping must not make the receiver drop frames of a message that
	// overtook an earlier one, nor make the sender resend frames it only
	// believes lost. A loaded machine excuses retransmissions: a receiver
	// descheduled for longer than the retransmission timeout, or whose
	// ring overflowed. Without either, a few fast retransmissions remain
	// possible when one rail's frames are delayed behind the other's on a
	// loaded machine; striping that treats every reordering as a loss
	// retransmits far more (each overtaken frame), hence the 5 % bound.
	// A receiver that refused a message for want of a buffer (its
	// application descheduled on a loaded machine) drops the frames sent
	// behind it until the sender goes back: those drops are not
	// striping's.
	drops := ra[0].Link.KernelDrops + ra[1].Link.KernelDrops + rb[0].Link.KernelDrops + rb[1].Link.KernelDrops
	if bs.OutOfWindow != 0 && bs.NacksSentNoBuffer == 0 && drops == 0 {
		t.Errorf("receiver dropped %d frames that arrived ahead of their message", bs.OutOfWindow)
	}
	t.Logf("retransmitted %d of %d data frames (%.2f %%); sender timeouts %d, ring drops %d",
		as.DataRetransmitted, as.DataSent, 100*float64(as.DataRetransmitted)/float64(max(as.DataSent, 1)), as.Timeouts, drops)
	if drops == 0 && as.Timeouts == 0 && as.DataRetransmitted > as.DataSent/20 {
		t.Errorf("%d of %d data frames retransmitted without a timeout or ring overflow: striping reorders", as.DataRetransmitted, as.DataSent)
	}
}

// TestIntegrationRailsFailover cuts one rail in the middle of a stream of
// large messages: every message still arrives, in order, and every send
// succeeds; after the rail is repaired it carries traffic again.
func TestIntegrationRailsFailover(t *testing.T) {
	for _, tc := range []struct {
		name       string
		host, rail int
	}{
		{"receiver-rail1", 1, 1}, // the sender learns it from missing answers
		{"sender-rail0", 0, 0},   // the sender's interface goes down
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := netns.New(t, netns.Options{Hosts: 2, Rails: 2})
			h0, h1 := c.Hosts[0], c.Hosts[1]
			a, b := railPair(t, c, "", h0.Ifaces, h1.Ifaces)
			h := c.Hosts[tc.host]
			const count, msgLen = 120, 128 << 10
			var txCut []uint64
			el := railStream(t, a, b, b.NodeID(), count, msgLen, 200, func() {
				if err := h.LinkDown(tc.rail); err != nil {
					t.Fatal(err)
				}
				txCut = railTx(a)
			})
			t.Logf("%d x %d KiB in %v with %s %s cut; sender %+v; receiver %+v",
				count, msgLen>>10, el, h.Name, h.Ifaces[tc.rail], a.Stats(), b.Stats())
			txAfter := railTx(a)
			t.Logf("sender rails tx at the cut %v, at the end %v; rails %+v", txCut, txAfter, a.RailStats())
			other := 1 - tc.rail
			if txAfter[other]-txCut[other] < a.Stats().DataSent/4 {
				t.Errorf("the remaining rail sent only %d frames after the cut", txAfter[other]-txCut[other])
			}

			// Repair: the rail comes back into use.
			if err := h.LinkUp(tc.rail); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 15*time.Second, "rail back", func() bool {
				for _, p := range []*gm.Port{a, b} {
					if rs := p.RailStats(); rs[tc.rail].Down {
						return false
					}
				}
				return true
			})
			before := railTx(a)
			deadline := time.Now().Add(30 * time.Second)
			for round := 0; ; round++ {
				railStream(t, a, b, b.NodeID(), 16, msgLen, uint64(1000+100*round), nil)
				if railTx(a)[tc.rail]-before[tc.rail] > 100 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("rail %d not used again after repair: tx %v -> %v, rails %+v", tc.rail, before, railTx(a), a.RailStats())
				}
				time.Sleep(60 * time.Millisecond) // let a probe revive it
			}
		})
	}
}

// TestIntegrationRailsOpenDown opens a port on a two-rail unit whose
// first interface is down: the port opens with that rail down and streams
// over the other; once the interface is up the rail is used again, and
// when the other interface is then cut, every message still arrives over
// the first rail, once and in order. A unit whose interfaces are all down,
// or a one-rail unit on a down interface, still fails to open with
// Failure and the link's message.
func TestIntegrationRailsOpenDown(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2, Rails: 2})
	h0, h1 := c.Hosts[0], c.Hosts[1]
	mapPath := writeMap(t, c)
	for r := range 2 {
		if err := h0.LinkDown(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, ifs := range [][]string{h0.Ifaces, h0.Ifaces[:1]} {
		err := h0.Do(func() error {
			p, err := gm.Open(strings.Join(ifs, ","), 2, "rails", testConfig(h0, mapPath))
			if err == nil {
				p.Close()
			}
			return err
		})
		want := "link: interface " + ifs[0] + " is down (`ip link set " + ifs[0] + " up`)"
		if !errors.Is(err, gm.Failure) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("open %v with every interface down: %v, want Failure saying %q", ifs, err, want)
		}
	}
	if err := h0.LinkUp(1); err != nil {
		t.Fatal(err)
	}

	a, b := railPair(t, c, mapPath, h0.Ifaces, h1.Ifaces)
	if rs := a.RailStats(); !rs[0].Down || rs[1].Down {
		t.Fatalf("rails %+v, want rail 0 down", rs)
	}
	const count, msgLen = 40, 128 << 10
	railStream(t, a, b, b.NodeID(), count, msgLen, 300, nil)
	if tx := railTx(a); tx[0] != 0 {
		t.Errorf("the down rail sent %d frames (rails tx %v)", tx[0], tx)
	}

	if err := h0.LinkUp(0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "rail 0 up", func() bool {
		return !a.RailStats()[0].Down && !b.RailStats()[0].Down
	})
	var txCut []uint64
	railStream(t, a, b, b.NodeID(), 3*count, msgLen, 400, func() {
		if err := h0.LinkDown(1); err != nil {
			t.Fatal(err)
		}
		txCut = railTx(a)
	})
	txEnd := railTx(a)
	if txCut[0] == 0 {
		t.Errorf("rail 0 carried nothing between its interface coming up and the cut of rail 1 (rails tx %v)", txCut)
	}
	t.Logf("rails tx at the cut %v, at the end %v; sender %+v; rails %+v", txCut, txEnd, a.Stats(), a.RailStats())
	// Half the stream's messages at least went after the cut, all over
	// rail 0: a quarter of its data frames leaves room for frames resent.
	if sent := txEnd[0] - txCut[0]; sent < a.Stats().DataSent/4 {
		t.Errorf("rail 0 sent %d frames after rail 1 was cut (%d data frames in all)", sent, a.Stats().DataSent)
	}
	if !a.RailStats()[1].Down {
		t.Errorf("rail 1 not down after the cut: %+v", a.RailStats())
	}
}

// TestIntegrationRailsPairing checks units with fewer rails: a one-rail
// unit behaves as before (on the second interface too, which pairs with
// the peer's second MAC), and a two-rail unit sends to a peer whose map
// entry lists one MAC on that rail only.
func TestIntegrationRailsPairing(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2, Rails: 2})
	h0, h1 := c.Hosts[0], c.Hosts[1]
	const count, msgLen = 40, 64 << 10

	t.Run("one-rail-eth1", func(t *testing.T) {
		a, b := railPair(t, c, "", h0.Ifaces[1:], h1.Ifaces[1:])
		if rs := a.RailStats(); len(rs) != 1 || rs[0].Interface != h0.Ifaces[1] {
			t.Fatalf("rails %+v", rs)
		}
		sys := ifCounter(t, h0, h0.Ifaces[0], "tx_packets")
		railStream(t, a, b, b.NodeID(), count, msgLen, 300, nil)
		if d := ifCounter(t, h0, h0.Ifaces[0], "tx_packets") - sys; d > 10 {
			t.Errorf("%s sent %d frames on the unused %s", h0.Name, d, h0.Ifaces[0])
		}
		if ls := a.LinkStats(); ls.TxFrames < a.Stats().DataSent {
			t.Errorf("link stats %+v, data sent %d", ls, a.Stats().DataSent)
		}
	})

	t.Run("peer-with-one-rail", func(t *testing.T) {
		// host1's entry lists only its first MAC.
		m, err := gm.NewNodeMap([]gm.MapEntry{
			{ID: 1, Host: h0.Name, MACs: [][6]byte{[6]byte(h0.MACs[0]), [6]byte(h0.MACs[1])}},
			{ID: 2, Host: h1.Name, MACs: [][6]byte{[6]byte(h1.MACs[0])}},
		})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "map")
		if err := os.WriteFile(path, m.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
		a, b := railPair(t, c, path, h0.Ifaces, h1.Ifaces[:1])
		railStream(t, a, b, b.NodeID(), count, msgLen, 400, nil)
		tx := railTx(a)
		if tx[1] > 10 || tx[0] < a.Stats().DataSent {
			t.Errorf("rails tx %v for a peer on rail 0 only (data sent %d)", tx, a.Stats().DataSent)
		}
	})
}
