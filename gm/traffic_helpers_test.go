package gm_test

import (
	"bytes"
	"encoding/binary"
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

// Verified traffic for the soak, fault and hostile-input tests: every host
// of a cluster opens port trafficPort and sends to the same port of every
// other host, in both priorities, messages of every size class from 3 (an
// empty message) to maxSize. Message k of a stream (source node, target
// node, priority) is a pure function of (stream, k) (trafficMessage), so a
// receiver checks each message it gets against the one it expects next on
// that stream: anything lost, duplicated, reordered or changed shows as a
// data error. A message of 8 bytes or more starts with its stream id and
// its sequence number k, so a data error says what arrived instead.

const trafficPort = 2

// trafficBuffers is the number of receive buffers provided per (size,
// priority): 2 priorities x 15 sizes x 8 = 240 of a port's 253 tokens.
const trafficBuffers = 8

// streamID names the stream from node src to node dst at priority pri.
func streamID(src, dst gm.NodeID, pri gm.Priority) uint32 {
	return uint32(src)<<16 | uint32(dst)<<8 | uint32(pri)
}

// trafficMessage returns message k of stream id: its size class is drawn
// uniformly from minSize..maxSize and its length uniformly within that
// class.
func trafficMessage(id uint32, k uint32, minSize, maxSize uint8) (size uint8, msg []byte) {
	r := rand.New(rand.NewPCG(uint64(id), uint64(k)))
	size = minSize + uint8(r.IntN(int(maxSize-minSize)+1))
	lo := 0
	if size > 3 {
		lo = gm.MaxLengthForSize(size-1) + 1
	}
	n := lo + r.IntN(gm.MaxLengthForSize(size)-lo+1)
	msg = make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(msg[i:], r.Uint64())
	}
	for i := n &^ 7; i < n; i++ {
		msg[i] = byte(r.Uint32())
	}
	if n >= 8 {
		binary.BigEndian.PutUint32(msg, id)
		binary.BigEndian.PutUint32(msg[4:], k)
	}
	return size, msg
}

// trafficNode is one host's port: its receive side checks every stream
// towards it, its send side feeds the streams from it.
type trafficNode struct {
	host *netns.Host
	p    *gm.Port
	node gm.NodeID
	l    *loop
	min  uint8
	max  uint8

	mu       sync.Mutex
	next     map[uint32]uint32 // next expected k per incoming stream
	received uint64
	rxBytes  uint64
	dataErrs []string // the first few data errors
	nErrs    int

	sent     map[uint32]uint32 // messages submitted per outgoing stream
	okSends  atomic.Uint64
	badSends atomic.Uint64
	sendErrs []string // the first few failed completions (under mu)
	inFlight atomic.Int64
}

// trafficCluster is the traffic of a whole cluster.
type trafficCluster struct {
	t     *testing.T
	c     *netns.Cluster
	nodes []*trafficNode
}

// startTraffic opens trafficPort on hosts (every host of c if nil) with
// cfg (per host), provides buffers for sizes minSize..maxSize and starts
// every port's event loop. Nothing is sent until run.
func startTraffic(t *testing.T, c *netns.Cluster, hosts []*netns.Host, cfg func(h *netns.Host) *gm.Config, minSize, maxSize uint8) *trafficCluster {
	tc := &trafficCluster{t: t, c: c}
	if hosts == nil {
		hosts = c.Hosts
	}
	for _, h := range hosts {
		n := &trafficNode{host: h, min: minSize, max: maxSize, next: map[uint32]uint32{}, sent: map[uint32]uint32{}}
		n.p = openPort(t, h, trafficPort, cfg(h))
		n.node = n.p.NodeID()
		for size := minSize; size <= maxSize; size++ {
			for pri := gm.LowPriority; pri <= gm.HighPriority; pri++ {
				for range trafficBuffers {
					if err := n.p.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, pri, size); err != nil {
						t.Fatalf("%s: provide size %d: %v", h.Name, size, err)
					}
				}
			}
		}
		n.l = startLoop(n.p, n.onRecv)
		t.Cleanup(n.l.Stop) // before the port closes (cleanups run last-in first-out)
		tc.nodes = append(tc.nodes, n)
	}
	return tc
}

// onRecv checks one received message against the one expected next on its
// stream and gives the buffer back.
func (n *trafficNode) onRecv(e *gm.Event) {
	id := streamID(e.SenderNode, n.node, e.Priority)
	n.mu.Lock()
	k := n.next[id]
	n.next[id] = k + 1
	n.received++
	n.rxBytes += uint64(len(e.Message))
	size, want := trafficMessage(id, k, n.min, n.max)
	if e.SenderPort != trafficPort || e.Size != size || !bytes.Equal(e.Message, want) {
		n.nErrs++
		if len(n.dataErrs) < 10 {
			what := "changed"
			if len(e.Message) >= 8 {
				gotID, gotK := binary.BigEndian.Uint32(e.Message), binary.BigEndian.Uint32(e.Message[4:])
				switch {
				case gotID != id:
					what = fmt.Sprintf("carries stream %#x", gotID)
				case gotK < k:
					what = fmt.Sprintf("duplicate of message %d", gotK)
				case gotK > k:
					what = fmt.Sprintf("message %d: %d skipped", gotK, gotK-k)
				}
			}
			n.dataErrs = append(n.dataErrs, fmt.Sprintf("%s: stream %#x from %d:%d message %d (size %d, %d bytes; want size %d, %d bytes): %s",
				n.host.Name, id, e.SenderNode, e.SenderPort, k, e.Size, len(e.Message), size, len(want), what))
		}
	}
	n.mu.Unlock()
	_ = n.p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
}

// completion of a send.
func (n *trafficNode) sent1(_ *gm.Port, ctx any, st gm.Status) {
	n.inFlight.Add(-1)
	if st == gm.Success {
		n.okSends.Add(1)
		return
	}
	n.badSends.Add(1)
	n.mu.Lock()
	if len(n.sendErrs) < 10 {
		n.sendErrs = append(n.sendErrs, fmt.Sprintf("%s: send %v: %v", n.host.Name, ctx, st))
	}
	n.mu.Unlock()
}

// sendLoop sends messages on random streams from n until stop is closed,
// waiting when the port has no send token. It returns the number sent.
func (n *trafficNode) sendLoop(tc *trafficCluster, stop <-chan struct{}, seed uint64) (sent int, err error) {
	rng := rand.New(rand.NewPCG(seed, uint64(n.node)))
	var peers []gm.NodeID
	for _, o := range tc.nodes {
		if o != n {
			peers = append(peers, o.node)
		}
	}
	for {
		select {
		case <-stop:
			return sent, nil
		default:
		}
		dst := peers[rng.IntN(len(peers))]
		pri := gm.Priority(rng.IntN(2))
		id := streamID(n.node, dst, pri)
		n.mu.Lock()
		k := n.sent[id]
		n.mu.Unlock()
		size, msg := trafficMessage(id, k, n.min, n.max)
		for {
			n.inFlight.Add(1)
			err := n.p.SendWithCallback(msg, size, len(msg), pri, dst, trafficPort, n.sent1, fmt.Sprintf("%#x/%d", id, k))
			if err == nil {
				break
			}
			n.inFlight.Add(-1)
			if !errors.Is(err, gm.ErrNoSendToken) {
				return sent, fmt.Errorf("%s: send: %w", n.host.Name, err)
			}
			select {
			case <-stop:
				return sent, nil
			case <-time.After(200 * time.Microsecond):
			}
		}
		n.mu.Lock()
		n.sent[id] = k + 1
		n.mu.Unlock()
		sent++
	}
}

// trafficTotals are cluster-wide figures.
type trafficTotals struct {
	Sent, OK, Failed, Received, Bytes uint64
	DataErrors                        int
}

func (tc *trafficCluster) totals() trafficTotals {
	var s trafficTotals
	for _, n := range tc.nodes {
		n.mu.Lock()
		for _, k := range n.sent {
			s.Sent += uint64(k)
		}
		s.Received += n.received
		s.Bytes += n.rxBytes
		s.DataErrors += n.nErrs
		n.mu.Unlock()
		s.OK += n.okSends.Load()
		s.Failed += n.badSends.Load()
	}
	return s
}

// run sends on every node until the duration has passed and more(), if not
// nil, returns false; then it waits (generously) for every send to complete
// and every message to arrive, and checks that each stream delivered
// exactly what was sent, in order, with every send a Success.
func (tc *trafficCluster) run(what string, d time.Duration, more func() bool) {
	tc.t.Helper()
	stop := tc.start(what)
	start := time.Now()
	// Run for d, then until more says enough, at most 10 minutes more.
	for time.Since(start) < d || (more != nil && more() && time.Since(start) < d+10*time.Minute) {
		time.Sleep(100 * time.Millisecond)
		if tc.totals().DataErrors > 0 {
			break
		}
	}
	stop()
}

// while runs fn while every node sends, then stops, drains and checks as
// run does.
func (tc *trafficCluster) while(what string, fn func()) {
	tc.t.Helper()
	stop := tc.start(what)
	defer stop()
	fn()
}

// start starts sending on every node; the function it returns stops,
// drains and checks (the first time it is called, from the test's
// goroutine).
func (tc *trafficCluster) start(what string) func() {
	t := tc.t
	stopc := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	seed := uint64(time.Now().UnixNano())
	for _, n := range tc.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := n.sendLoop(tc, stopc, seed); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	s0 := tc.totals()
	stopped := false
	return func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		close(stopc)
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("%s: %v", what, errs)
		}
		tc.drain(what)
		s := tc.totals()
		t.Logf("%s: %v: %d messages (%d KiB) sent and verified (%d in all so far)", what, time.Since(start).Round(time.Millisecond),
			s.Received-s0.Received, (s.Bytes-s0.Bytes)>>10, s.Received)
	}
}

// drain waits until every send completed and every message sent arrived,
// then checks the streams.
func (tc *trafficCluster) drain(what string) {
	t := tc.t
	t.Helper()
	end := time.Now().Add(2 * time.Minute) // progress, not speed: a loaded machine may be slow
	for {
		s := tc.totals()
		var inFlight int64
		for _, n := range tc.nodes {
			inFlight += n.inFlight.Load()
		}
		if inFlight == 0 && s.Received >= s.Sent || s.DataErrors > 0 || time.Now().After(end) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.check(what)
}

// check fails the test on any data error, failed send, or stream whose
// receiver did not get exactly what its sender sent.
func (tc *trafficCluster) check(what string) {
	t := tc.t
	t.Helper()
	var problems []string
	for _, n := range tc.nodes {
		n.mu.Lock()
		problems = append(problems, n.dataErrs...)
		problems = append(problems, n.sendErrs...)
		if f := n.inFlight.Load(); f != 0 {
			problems = append(problems, fmt.Sprintf("%s: %d sends not completed", n.host.Name, f))
		}
		n.mu.Unlock()
	}
	for _, src := range tc.nodes {
		src.mu.Lock()
		sent := make(map[uint32]uint32, len(src.sent))
		for id, k := range src.sent {
			sent[id] = k
		}
		src.mu.Unlock()
		for _, dst := range tc.nodes {
			if dst == src {
				continue
			}
			dst.mu.Lock()
			for pri := gm.LowPriority; pri <= gm.HighPriority; pri++ {
				id := streamID(src.node, dst.node, pri)
				if got, want := dst.next[id], sent[id]; got != want {
					problems = append(problems, fmt.Sprintf("stream %#x (%s to %s, priority %d): %d messages received, %d sent",
						id, src.host.Name, dst.host.Name, pri, got, want))
				}
			}
			dst.mu.Unlock()
		}
	}
	if len(problems) > 0 {
		s := tc.totals()
		t.Fatalf("%s: %d data errors, %d failed sends, %d problems:\n%s", what, s.DataErrors, s.Failed, len(problems), joinLines(problems))
	}
}

// portStats sums the engine and link counters of every port.
func (tc *trafficCluster) portStats() (gm.Stats, uint64, uint64) {
	var s gm.Stats
	var crc, malformed uint64
	for _, n := range tc.nodes {
		x := n.p.Stats()
		s.DataSent += x.DataSent
		s.DataRetransmitted += x.DataRetransmitted
		s.Duplicates += x.Duplicates
		s.OutOfWindow += x.OutOfWindow
		s.Delivered += x.Delivered
		s.NacksSent += x.NacksSent
		s.Timeouts += x.Timeouts
		s.Malformed += x.Malformed
		s.StaleDropped += x.StaleDropped
		ls := n.p.LinkStats()
		crc += ls.CRCErrors
		malformed += ls.Malformed
	}
	return s, crc, malformed
}

func joinLines(ss []string) string {
	var b bytes.Buffer
	for _, s := range ss {
		b.WriteString("  ")
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// resources is a sample of the process's memory and goroutines, taken
// after a garbage collection.
type resources struct {
	heapInuse  uint64
	goroutines int
}

func sampleResources() resources {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return resources{heapInuse: m.HeapInuse, goroutines: runtime.NumGoroutine()}
}
