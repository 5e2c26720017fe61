package gm_test

import (
	"os"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/relay"
	"github.com/ethergm/ethergm/wire"
)

// SoakEnv, set to a duration ("10m"), makes TestIntegrationSoak run that
// long in all instead of about a minute.
const soakEnv = "ETHERGM_SOAK"

// soakDuration is the traffic time of the whole soak.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv(soakEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 10m", soakEnv, v)
		}
		return d
	}
	return 40 * time.Second
}

// soakSizeMax is the largest size class of the soak: messages of up to
// 128 KiB - 8 bytes, 90 frames at MTU 1500.
const soakSizeMax = 17

// TestIntegrationSoak runs verified traffic (every size class 3..17, both
// priorities, 24 streams: each of 4 hosts to each other one) through the
// impairment relay, a learning switch joining the 4 hosts, in four phases:
//
//   - mixed: every frame of every host at 5 % drop, 2 % duplication, 5 %
//     reordering, 0.5 % corruption (a bit anywhere after the Ethernet
//     header) and up to 1 ms of jitter;
//   - tails: 20 % of the last frames of messages (DATA, DATA_LAST) dropped;
//   - acks: 30 % of the acks dropped;
//   - large: 10 % of the frames longer than 1000 bytes dropped.
//
// After each phase every stream must have delivered exactly the messages
// sent, in order, unchanged, every send must have completed with Success,
// the relay's and ports' counters must show that the phase's impairments
// were applied and seen, and memory and goroutines must stay flat.
// ETHERGM_SOAK=10m runs it for 10 minutes.
func TestIntegrationSoak(t *testing.T) {
	total := soakDuration(t)
	c := netns.New(t, netns.Options{Hosts: 4, Relay: &relay.Config{
		Seed: time.Now().UnixNano(), EtherType: wire.EtherType,
		Ports: make([]relay.Impairment, 4),
	}})
	r := c.Relay()
	m := writeMap(t, c)
	tc := startTraffic(t, c, nil, func(h *netns.Host) *gm.Config { return testConfig(h, m) }, 3, soakSizeMax)

	set := func(imp relay.Impairment) {
		for i := range c.Hosts {
			if err := r.SetImpairment(relay.From(i), imp); err != nil {
				t.Fatal(err)
			}
		}
	}
	sum := func() relay.Stats {
		var s relay.Stats
		for i := range c.Hosts {
			x := r.Stats(relay.From(i))
			s.Received += x.Received
			s.Forwarded += x.Forwarded
			s.Matched += x.Matched
			s.Dropped += x.Dropped
			s.Duplicated += x.Duplicated
			s.Reordered += x.Reordered
			s.Delayed += x.Delayed
			s.Corrupted += x.Corrupted
			s.Overflows += x.Overflows
		}
		return s
	}
	delta := func(a, b relay.Stats) relay.Stats {
		return relay.Stats{Received: b.Received - a.Received, Forwarded: b.Forwarded - a.Forwarded, Matched: b.Matched - a.Matched,
			Dropped: b.Dropped - a.Dropped, Duplicated: b.Duplicated - a.Duplicated, Reordered: b.Reordered - a.Reordered,
			Delayed: b.Delayed - a.Delayed, Corrupted: b.Corrupted - a.Corrupted, Overflows: b.Overflows - a.Overflows}
	}

	// A short clean warm-up: every stream, buffer and goroutine exists
	// before the baseline sample.
	tc.run("warm-up", 2*time.Second, nil)
	base := sampleResources()
	t.Logf("baseline: heap in use %d KiB, %d goroutines", base.heapInuse>>10, base.goroutines)

	mixed := relay.Impairment{Drop: 0.05, Duplicate: 0.02, Reorder: 0.05, ReorderGap: 3, Corrupt: 0.005, CorruptFrom: wire.EthHeaderLen, Jitter: time.Millisecond}
	phases := []struct {
		name  string
		share time.Duration // of total, in 1/8
		imp   relay.Impairment
		// hit reports whether the phase's impairments all happened (and,
		// for corruption, were caught by the receivers' CRC or frame
		// checks) since the phase began.
		hit func(rs relay.Stats, ps gm.Stats, crc, malformed uint64) bool
	}{
		{"mixed", 4, mixed, func(rs relay.Stats, ps gm.Stats, crc, malformed uint64) bool {
			return rs.Dropped > 0 && rs.Duplicated > 0 && rs.Reordered > 0 && rs.Corrupted > 0 && rs.Delayed > 0 &&
				crc+malformed > 0 && ps.Duplicates > 0 && ps.DataRetransmitted > 0
		}},
		{"tails", 4, relay.Impairment{Drop: 0.2, Only: relay.MatchTails}, func(rs relay.Stats, ps gm.Stats, _, _ uint64) bool {
			return rs.Matched > 0 && rs.Dropped > 0 && ps.DataRetransmitted > 0
		}},
		{"acks", 4, relay.Impairment{Drop: 0.3, Only: relay.MatchAcks}, func(rs relay.Stats, ps gm.Stats, _, _ uint64) bool {
			return rs.Matched > 0 && rs.Dropped > 0
		}},
		{"large", 4, relay.Impairment{Drop: 0.1, Only: relay.MatchLarger(1000)}, func(rs relay.Stats, ps gm.Stats, _, _ uint64) bool {
			return rs.Matched > 0 && rs.Dropped > 0 && ps.DataRetransmitted > 0
		}},
	}
	var shares time.Duration
	for _, ph := range phases {
		shares += ph.share
	}
	var last resources
	for _, ph := range phases {
		rs0 := sum()
		ps0, crc0, mal0 := tc.portStats()
		set(ph.imp)
		hit := func() bool {
			ps, crc, mal := tc.portStats()
			ps.Duplicates -= ps0.Duplicates
			ps.DataRetransmitted -= ps0.DataRetransmitted
			return ph.hit(delta(rs0, sum()), ps, crc-crc0, mal-mal0)
		}
		// Run the phase's time, and on until every impairment was hit
		// (a slow machine may send few frames).
		tc.run(ph.name, total*ph.share/shares, func() bool { return !hit() })
		set(relay.Impairment{})
		rs := delta(rs0, sum())
		ps, crc, mal := tc.portStats()
		t.Logf("%s: relay %+v; ports: %d data frames sent, %d retransmitted, %d duplicates, %d CRC errors, %d malformed",
			ph.name, rs, ps.DataSent-ps0.DataSent, ps.DataRetransmitted-ps0.DataRetransmitted, ps.Duplicates-ps0.Duplicates, crc-crc0, mal-mal0)
		if !hit() {
			t.Errorf("%s: not every impairment was applied and seen: relay %+v", ph.name, rs)
		}
		last = sampleResources()
		t.Logf("%s: heap in use %d KiB, %d goroutines", ph.name, last.heapInuse>>10, last.goroutines)
	}
	s := tc.totals()
	t.Logf("soak: %d messages (%d MiB) verified, exactly once and in order; relay: %d frames dropped, %d duplicated, %d reordered, %d corrupted, %d delayed",
		s.Received, s.Bytes>>20, sum().Dropped, sum().Duplicated, sum().Reordered, sum().Corrupted, sum().Delayed)
	// Flat: the heap may grow by buffers of the runtime and the relay's
	// queues, not with the traffic (which is many times larger).
	if limit := base.heapInuse + 64<<20; last.heapInuse > limit {
		t.Errorf("heap in use grew from %d KiB to %d KiB", base.heapInuse>>10, last.heapInuse>>10)
	}
	if last.goroutines > base.goroutines+4 {
		t.Errorf("goroutines grew from %d to %d", base.goroutines, last.goroutines)
	}
}
