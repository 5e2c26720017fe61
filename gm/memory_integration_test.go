package gm_test

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/netns"
)

// portHeapBound is the most heap an open port keeps before it has peers,
// as docs/RELIABILITY.md ("Bounds") states it: per send token an event
// slot and a send record (288 bytes), per receive token an event slot and
// a buffer slot (224 bytes), 64 transmit batch buffers of a frame each
// (plus a few more frame buffers), and a fixed part (the engine, the
// 64 KiB buffer of the open-port list, the port) with a little per rail.
func portHeapBound(cfg *gm.Config, mtu, rails int) uint64 {
	s, r := cfg.SendTokens, cfg.ReceiveTokens
	if s == 0 {
		s = 61
	}
	if r == 0 {
		r = 253
	}
	return uint64(70*(mtu+14) + 300*s + 240*r + 112<<10 + rails*16<<10)
}

// portRingBytes is what the rings of an open port map: a receive and a
// transmit ring per rail (link.RingMemory).
func portRingBytes(cfg *gm.Config, mtu, rails int) int64 {
	rx, tx := link.RingMemory(&cfg.Link, mtu)
	return int64(rails * (rx + tx))
}

// ringMaps are the process's mappings of packet socket rings, from
// /proc/self/smaps (named "socket:[inode]").
type ringMaps struct {
	n         int
	size, rss int64 // bytes
}

func readRingMaps(t *testing.T) ringMaps {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var m ringMaps
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") { // a mapping's first line
			in = len(f) >= 6 && strings.HasPrefix(f[5], "socket:[")
			if in {
				m.n++
			}
			continue
		}
		if !in || len(f) != 3 || f[2] != "kB" {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Size:":
			m.size += kb << 10
		case "Rss:":
			m.rss += kb << 10
		}
	}
	return m
}

// TestIntegrationPortMemory measures what open ports cost a process
// (docs/RELIABILITY.md, "Bounds"): on a dual-rail unit, host 0 opens three
// ports with the default configuration and one with small rings and few
// tokens. The new packet-ring mappings (/proc/self/smaps) must be exactly
// two per rail and port, of the sizes link.RingMemory computes from each
// port's configuration; the heap must grow by at most portHeapBound per
// port and the goroutines by two per port. Then every port exchanges
// verified messages with a port of host 1: the rings do not change, and
// the heap stays within the bound plus one peer's state per port.
func TestIntegrationPortMemory(t *testing.T) {
	const mtu, rails = 1500, 2
	c := netns.New(t, netns.Options{Hosts: 2, Rails: rails, MTU: mtu})
	m := writeMap(t, c)
	h0, h1 := c.Hosts[0], c.Hosts[1]
	small := func(cfg *gm.Config) {
		cfg.Link.RxBlocks, cfg.Link.RxBlockSize, cfg.Link.TxFrames = 4, 64<<10, 32
		cfg.SendTokens, cfg.ReceiveTokens = 8, 2*8*vBuffers // the buffers startVPort provides
	}
	ids := []int{2, 4, 5, 6}
	cfgs := make([]*gm.Config, len(ids))
	var wantRings int64
	var wantHeap uint64
	for i := range ids {
		cfgs[i] = testConfig(h0, m)
		if i == len(ids)-1 {
			small(cfgs[i])
		}
		wantRings += portRingBytes(cfgs[i], mtu, rails)
		wantHeap += portHeapBound(cfgs[i], mtu, rails)
	}
	// The peer's port, opened first so that it is not counted.
	peer := openUnit(t, h1, h1.Ifaces, 7, testConfig(h1, m))
	pv, err := startVPort("host1 port 7", peer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pv.l.Stop)

	rings0, goroutines0, heap0 := readRingMaps(t), runtime.NumGoroutine(), heapAlloc()
	ports := make([]*gm.Port, len(ids))
	for i, id := range ids {
		ports[i] = openUnit(t, h0, h0.Ifaces, id, cfgs[i])
	}
	heap1, goroutines1, rings1 := heapAlloc(), runtime.NumGoroutine(), readRingMaps(t)
	opened := ringMaps{n: rings1.n - rings0.n, size: rings1.size - rings0.size, rss: rings1.rss - rings0.rss}
	rx, tx := link.RingMemory(nil, mtu)
	t.Logf("%d ports of %d rails: %d ring mappings of %d MiB (%d MiB resident); default rings per rail %d KiB + %d KiB, per port %.1f MiB",
		len(ids), rails, opened.n, opened.size>>20, opened.rss>>20, rx>>10, tx>>10, float64(portRingBytes(cfgs[0], mtu, rails))/(1<<20))
	t.Logf("heap %d KiB (bound %d KiB), goroutines %d", int64(heap1-heap0)>>10, wantHeap>>10, goroutines1-goroutines0)
	if opened.n != 2*rails*len(ids) || opened.size != wantRings || opened.rss > opened.size {
		t.Errorf("opening %d ports mapped %d rings of %d bytes (%d resident), want %d rings of %d bytes",
			len(ids), opened.n, opened.size, opened.rss, 2*rails*len(ids), wantRings)
	}
	if heap1 > heap0 && heap1-heap0 > wantHeap {
		t.Errorf("opening %d ports took %d bytes of heap, want at most %d", len(ids), heap1-heap0, wantHeap)
	}
	if g := goroutines1 - goroutines0; g > 2*len(ids) {
		t.Errorf("opening %d ports started %d goroutines, want at most %d", len(ids), g, 2*len(ids))
	}

	// Traffic: every port sends 40 messages to host 1's port and gets 40
	// from it. The receive buffers are the test's, allocated before the
	// heap is measured again.
	const msgs = 40
	vs := make([]*vPort, len(ports))
	for i, p := range ports {
		if vs[i], err = startVPort("host0 port "+strconv.Itoa(ids[i]), p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(vs[i].l.Stop)
	}
	heap2 := heapAlloc()
	deadline := time.Now().Add(60 * time.Second)
	var in []vStream
	for _, v := range vs {
		out := vStream{SrcNode: v.node, SrcPort: v.id, DstNode: pv.node, DstPort: pv.id}
		back := vStream{SrcNode: pv.node, SrcPort: pv.id, DstNode: v.node, DstPort: v.id}
		in = append(in, out)
		if err := v.send([]vStream{out}, msgs, deadline); err != nil {
			t.Fatal(err)
		}
		if err := pv.send([]vStream{back}, msgs, deadline); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "the verified exchange", func() bool {
		if pv.check(in, msgs) != nil || int(pv.ok.Load()) != msgs*len(vs) {
			return false
		}
		for _, v := range vs {
			if v.check([]vStream{{SrcNode: pv.node, SrcPort: pv.id, DstNode: v.node, DstPort: v.id}}, msgs) != nil || v.ok.Load() != msgs {
				return false
			}
		}
		return true
	})
	for _, v := range append(vs, pv) {
		if c := v.counts(); c.Bad > 0 || len(c.Errs) > 0 {
			t.Fatalf("%s: %+v", v.name, c)
		}
	}
	heap3, rings3 := heapAlloc(), readRingMaps(t)
	// One peer with one stream each way: at most 17 KiB (TestStateBounds).
	const onePeer = 17 << 10
	t.Logf("after the exchange: heap %+d KiB, rings unchanged: %v", (int64(heap3)-int64(heap2))>>10, rings3 == rings1)
	if rings3 != rings1 {
		t.Errorf("the ring mappings changed with traffic: %+v, then %+v", rings1, rings3)
	}
	if grown := int64(heap3) - int64(heap0) - (int64(heap2) - int64(heap1)); grown > int64(wantHeap)+int64(len(ids))*onePeer {
		t.Errorf("the ports keep %d bytes of heap after the exchange, want at most %d", grown, int64(wantHeap)+int64(len(ids))*onePeer)
	}
}
