package gm_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
)

// pair is two hosts with one open port each (port 2 on host0, port 4 on
// host1).
type pair struct {
	c      *netns.Cluster
	mapf   string
	a, b   *gm.Port
	an, bn gm.NodeID
}

func newPair(t *testing.T, opts netns.Options, mod func(*gm.Config)) *pair {
	c := netns.New(t, opts)
	return pairOn(t, c, mod)
}

func pairOn(t *testing.T, c *netns.Cluster, mod func(*gm.Config)) *pair {
	m := writeMap(t, c)
	ca, cb := testConfig(c.Hosts[0], m), testConfig(c.Hosts[1], m)
	if mod != nil {
		mod(ca)
		mod(cb)
	}
	pr := &pair{c: c, mapf: m, a: openPort(t, c.Hosts[0], 2, ca), b: openPort(t, c.Hosts[1], 4, cb)}
	pr.an, pr.bn = pr.a.NodeID(), pr.b.NodeID()
	if pr.an != 1 || pr.bn != 2 {
		t.Fatalf("node ids %d %d", pr.an, pr.bn)
	}
	return pr
}

func TestIntegrationPingPong(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	const rounds = 2000
	bufA, bufB := make([]byte, 64), make([]byte, 64)
	size := gm.MinSizeForLength(8)
	if err := pr.a.ProvideReceiveBuffer(bufA, size, gm.HighPriority, 0); err != nil {
		t.Fatal(err)
	}
	if err := pr.b.ProvideReceiveBuffer(bufB, size, gm.HighPriority, 0); err != nil {
		t.Fatal(err)
	}
	msgA, msgB := []byte("ping0000"), []byte("pong0000")
	var wg sync.WaitGroup
	wg.Add(1)
	errc := make(chan error, 1)
	var stop atomic.Bool
	go func() { // echo side, polling
		defer wg.Done()
		for n := 0; n < rounds && !stop.Load(); {
			e := pr.b.Receive()
			switch {
			case e.Type == gm.NoRecvEvent:
				// Let the other poller run when they share a CPU
				// (GOMAXPROCS=1, or a loaded machine).
				runtime.Gosched()
			case e.Type == gm.FastHighRecvEvent:
				if !bytes.Equal(e.Message, msgA) || e.SenderNode != pr.an || e.SenderPort != 2 {
					errc <- fmt.Errorf("echo got %q from %d:%d", e.Message, e.SenderNode, e.SenderPort)
					return
				}
				_ = pr.b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
				for pr.b.SendWithCallback(msgB, size, 8, gm.HighPriority, pr.an, 2, nil, nil) != nil {
					pr.b.Unknown(pr.b.Receive())
				}
				n++
			default:
				pr.b.Unknown(e)
			}
		}
	}()
	start := time.Now()
	// On a loaded machine round trips can take milliseconds: stop after a
	// few seconds rather than after every round.
	end := start.Add(5 * time.Second)
	n := 0
	for n < rounds && time.Now().Before(end) {
		if err := pr.a.SendWithCallback(msgA, size, 8, gm.HighPriority, pr.bn, 4, nil, nil); err != nil {
			pr.a.Unknown(pr.a.Receive())
			continue
		}
		for {
			e := pr.a.Receive()
			if e.Type == gm.FastHighRecvEvent {
				if !bytes.Equal(e.Message, msgB) {
					t.Fatalf("got %q", e.Message)
				}
				_ = pr.a.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
				break
			}
			if e.Type == gm.NoRecvEvent {
				if time.Since(end) > 10*time.Second {
					t.Fatalf("round %d: no reply for 10 s", n)
				}
				runtime.Gosched()
			} else {
				pr.a.Unknown(e)
			}
		}
		n++
	}
	el := time.Since(start)
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	t.Logf("%d round trips of 8 bytes: half round trip %.2f us", n, float64(el.Microseconds())/float64(n)/2)
	t.Logf("A %+v", pr.a.Stats())
}

// TestIntegrationAllSizes sends every size class 3..24 with lengths 0, 1,
// the maximum and a random one, at both priorities, and checks the data.
func TestIntegrationAllSizes(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	type rec struct {
		size uint8
		pri  gm.Priority
		data []byte
	}
	var mu sync.Mutex
	got := map[gm.Priority][]rec{}
	l := startLoop(pr.b, func(e *gm.Event) {
		mu.Lock()
		got[e.Priority] = append(got[e.Priority], rec{e.Size, e.Priority, bytes.Clone(e.Message)})
		mu.Unlock()
		if e.Type.IsFast() != (e.Length <= gm.MaxFastRecvBytes) {
			t.Errorf("length %d arrived as %v", e.Length, e.Type)
		}
		if e.SenderNode != pr.an || e.SenderPort != 2 || e.Type == gm.PeerRecvEvent {
			t.Errorf("bad sender/type %d:%d %v", e.SenderNode, e.SenderPort, e.Type)
		}
		if err := pr.b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag); err != nil {
			t.Error(err)
		}
	})
	defer l.Stop()
	// One buffer per (size, priority), each as long as its class allows
	// (sizes 23 and 24 get 2 and 1 MiB-sized buffers? no: full size).
	for s := uint8(3); s <= 24; s++ {
		for pri := gm.LowPriority; pri <= gm.HighPriority; pri++ {
			if err := pr.b.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(s)), s, pri, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	comps := newCompletions()
	la := startLoop(pr.a, nil)
	defer la.Stop()
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[gm.Priority][]rec{}
	n := 0
	sendEnd := time.Now().Add(15 * time.Second)
	for s := uint8(3); s <= 24; s++ {
		max := gm.MaxLengthForSize(s)
		for _, ln := range []int{0, 1, max, rng.IntN(max + 1)} {
			if ln > max {
				continue
			}
			for pri := gm.LowPriority; pri <= gm.HighPriority; pri++ {
				data := pattern(ln, uint64(n))
				want[pri] = append(want[pri], rec{s, pri, data})
				for {
					err := pr.a.SendWithCallback(data, s, ln, pri, pr.bn, 4, comps.cb, n)
					if err == nil {
						break
					}
					if !errors.Is(err, gm.ErrNoSendToken) {
						t.Fatal(err)
					}
					if time.Now().After(sendEnd) {
						t.Fatalf("send %d: no send token for 15 s (completions so far: %d)", n, len(comps.snapshot()))
					}
					time.Sleep(time.Millisecond)
				}
				n++
			}
		}
	}
	start := time.Now()
	cs := comps.wait(t, n, 15*time.Second)
	for _, c := range cs {
		if c.st != gm.Success {
			t.Fatalf("send %d: %v", c.id, c.st)
		}
	}
	waitFor(t, 10*time.Second, "all messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got[0])+len(got[1]) == n
	})
	mu.Lock()
	defer mu.Unlock()
	for pri := gm.LowPriority; pri <= gm.HighPriority; pri++ {
		if len(got[pri]) != len(want[pri]) {
			t.Fatalf("priority %d: %d messages, want %d", pri, len(got[pri]), len(want[pri]))
		}
		for i, w := range want[pri] {
			g := got[pri][i]
			if g.size != w.size || !bytes.Equal(g.data, w.data) {
				t.Fatalf("priority %d message %d: size %d len %d, want size %d len %d", pri, i, g.size, len(g.data), w.size, len(w.data))
			}
		}
	}
	t.Logf("%d messages in %v; A %+v", n, time.Since(start), pr.a.Stats())
}
