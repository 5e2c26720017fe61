package gm_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/nodemap"
)

// The messages of TestIntegrationMapRenumber: a request or its echo, the
// client's host, the server host the client meant it for, the server host
// that echoed it and a sequence number.
const (
	rnLen     = 32
	rnRequest = 'R'
	rnEcho    = 'E'
)

func rnMsg(kind, client, target, server byte, seq uint32) []byte {
	m := make([]byte, rnLen)
	m[0], m[1], m[2], m[3] = kind, client, target, server
	binary.BigEndian.PutUint32(m[4:], seq)
	return m
}

// rnServer echoes requests on p (host index self) until stop, checking
// that each was meant for this host and is not a duplicate. An echo that
// fails (the map changed this host's id) makes it resume the stream.
func rnServer(p *gm.Port, self byte, size uint8, stop *atomic.Bool, errs chan<- string, wg *sync.WaitGroup) {
	defer wg.Done()
	report := func(format string, a ...any) {
		select {
		case errs <- fmt.Sprintf("host%d: ", self) + fmt.Sprintf(format, a...):
		default:
		}
	}
	for i := 0; i < 48; i++ {
		_ = p.ProvideReceiveBuffer(make([]byte, 64), size, gm.LowPriority, 0)
	}
	seen := map[uint32]bool{}
	type echo struct {
		msg  []byte
		node gm.NodeID
		port int
	}
	var pending []echo
	var resume []gm.NodeID
	var resumeMu sync.Mutex
	cb := func(_ *gm.Port, ctx any, st gm.Status) {
		if st != gm.Success {
			resumeMu.Lock()
			resume = append(resume, ctx.(gm.NodeID))
			resumeMu.Unlock()
		}
	}
	for !stop.Load() {
		e := p.Receive()
		switch {
		case e.Type == gm.NoRecvEvent:
			runtime.Gosched()
		case e.Type.IsRecv():
			m := append([]byte(nil), e.Message[:e.Length]...)
			_ = p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
			seq := binary.BigEndian.Uint32(m[4:])
			switch {
			case len(m) != rnLen || m[0] != rnRequest:
				report("received %q from node %d: not a request", m, e.SenderNode)
				continue
			case m[2] != self:
				report("received request %d meant for host%d", seq, m[2])
				continue
			case seen[seq]:
				report("received request %d twice", seq)
				continue
			}
			seen[seq] = true
			pending = append(pending, echo{rnMsg(rnEcho, m[1], m[2], self, seq), e.SenderNode, int(e.SenderPort)})
		default:
			p.Unknown(e)
		}
		resumeMu.Lock()
		rs := resume
		resume = nil
		resumeMu.Unlock()
		for _, n := range rs {
			for p.ResumeSending(gm.LowPriority, n, 2, func(*gm.Port, any, gm.Status) {}, nil) != nil && !stop.Load() {
				p.Unknown(p.Receive())
			}
		}
		for len(pending) > 0 {
			x := pending[0]
			if p.SendWithCallback(x.msg, size, rnLen, gm.LowPriority, x.node, x.port, cb, x.node) != nil {
				break // no token: later
			}
			pending = pending[1:]
		}
	}
}

// TestIntegrationMapRenumber swaps two hosts' node ids in the map file
// while a client exchanges verified requests and echoes with one of them:
// nothing reaches the wrong host or arrives twice, the sends in flight at
// the change complete with an error status, and after ResumeSending the
// node id reaches the host the map now gives it.
func TestIntegrationMapRenumber(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3})
	mapf := writeMap(t, c)
	client := openPort(t, c.Hosts[0], 2, testConfig(c.Hosts[0], mapf))
	srv := []*gm.Port{nil, openPort(t, c.Hosts[1], 4, testConfig(c.Hosts[1], mapf)), openPort(t, c.Hosts[2], 4, testConfig(c.Hosts[2], mapf))}
	if client.NodeID() != 1 || srv[1].NodeID() != 2 || srv[2].NodeID() != 3 {
		t.Fatalf("node ids %d %d %d", client.NodeID(), srv[1].NodeID(), srv[2].NodeID())
	}
	size := gm.MinSizeForLength(rnLen)
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := 1; i <= 2; i++ {
		wg.Add(1)
		go rnServer(srv[i], byte(i), size, &stop, errs, &wg)
	}
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	for i := 0; i < 48; i++ {
		_ = client.ProvideReceiveBuffer(make([]byte, 64), size, gm.LowPriority, 0)
	}
	checkErrs := func() {
		t.Helper()
		select {
		case s := <-errs:
			t.Fatal(s)
		default:
		}
	}

	comps := newCompletions()
	status := map[int]gm.Status{} // by seq
	target := map[uint32]byte{}   // seq -> the host meant
	echoed := map[uint32]bool{}
	var seq uint32
	outstanding := 0 // requests sent whose echo has not come
	poll := func() {
		t.Helper()
		e := client.Receive()
		switch {
		case e.Type == gm.NoRecvEvent:
			runtime.Gosched()
		case e.Type.IsRecv():
			m := append([]byte(nil), e.Message[:e.Length]...)
			_ = client.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
			if len(m) != rnLen || m[0] != rnEcho || m[1] != 0 {
				t.Fatalf("client received %q from node %d: not an echo of its own", m, e.SenderNode)
			}
			s := binary.BigEndian.Uint32(m[4:])
			want, ok := target[s]
			switch {
			case !ok:
				t.Fatalf("client received an echo of request %d, never sent", s)
			case echoed[s]:
				t.Fatalf("client received the echo of request %d twice", s)
			case m[3] != want || m[2] != want:
				t.Fatalf("client received the echo of request %d (meant for host%d) from host%d", s, want, m[3])
			}
			echoed[s] = true
			outstanding--
		default:
			client.Unknown(e)
		}
		for _, cm := range comps.snapshot()[len(status):] {
			status[cm.id] = cm.st
		}
		checkErrs()
	}
	const window = 16
	send := func(node gm.NodeID, host byte) {
		t.Helper()
		s := seq
		if err := client.SendWithCallback(rnMsg(rnRequest, 0, host, 0, s), size, rnLen, gm.LowPriority, node, 4, comps.cb, int(s)); err != nil {
			poll()
			return
		}
		target[s] = host
		seq++
		outstanding++
	}
	// Phase 1: node 2 is host1.
	const phase1 = 300
	end := time.Now().Add(60 * time.Second)
	for len(echoed) < phase1 {
		if time.Now().After(end) {
			t.Fatalf("phase 1: %d echoes in 60 s", len(echoed))
		}
		if outstanding < window {
			send(2, 1)
		} else {
			poll()
		}
	}
	// Fill the window, then add a message host1 has no buffer for: it
	// stays in flight (the receiver refuses it) until the map changes.
	for outstanding < window {
		send(2, 1)
	}
	blocker := make([]byte, 1000)
	blockerCtx := -1
	for client.SendWithCallback(blocker, 10, len(blocker), gm.LowPriority, 2, 4, comps.cb, blockerCtx) != nil {
		poll()
	}
	// And a window of requests behind it: in flight at the change too.
	for i := 0; i < window; i++ {
		send(2, 1)
	}
	sent1 := int(seq)

	// Swap host1's and host2's node ids, atomically.
	data, err := os.ReadFile(mapf)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nodemap.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	entries := m.Entries()
	for i := range entries {
		switch entries[i].Host {
		case c.Hosts[1].Name:
			entries[i].ID = 3
		case c.Hosts[2].Name:
			entries[i].ID = 2
		}
	}
	m2, err := nodemap.New(m.Version, m.Mapper, entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := nodemap.WriteFile(mapf, m2); err != nil {
		t.Fatal(err)
	}

	// Every send of phase 1 completes: successes were echoed by host1 (or
	// their echo was lost to the change); the others, the blocker among
	// them, failed.
	end = time.Now().Add(90 * time.Second)
	for len(status) < sent1+1 {
		if time.Now().After(end) {
			t.Fatalf("phase 1: %d of %d sends completed 90 s after the map change", len(status), sent1+1)
		}
		poll()
	}
	failed := 0
	for _, st := range status {
		if st != gm.Success {
			// An error does not say the message was not delivered (its
			// ack may have been lost to the change): only that it may not
			// have been.
			failed++
		}
	}
	if failed < 1+window {
		t.Errorf("%d sends failed; the %d in flight at the map change must", failed, 1+window)
	}
	if st := status[blockerCtx]; st == gm.Success {
		t.Fatalf("the send in flight at the map change completed with %v", st)
	}
	t.Logf("phase 1: %d requests, %d echoed, %d failed (the in-flight one with %v); client %+v",
		sent1, len(echoed), failed, status[blockerCtx], client.Stats())
	if client.Stats().PeerResets == 0 {
		t.Fatalf("the client reset no peer")
	}
	waitFor(t, 30*time.Second, "the new map at every port", func() bool {
		n, _ := client.NodeIDToHostName(2)
		return n == c.Hosts[2].Name && srv[1].NodeID() == 3 && srv[2].NodeID() == 2
	})

	// Phase 2: node 2 is host2, after ResumeSending.
	resumed := false
	for !resumed {
		resumed = client.ResumeSending(gm.LowPriority, 2, 4, comps.cb, -2) == nil
		if !resumed {
			poll()
		}
	}
	outstanding = 0
	const phase2 = 200
	first2 := seq
	end = time.Now().Add(60 * time.Second)
	for int(seq-first2) < phase2 || outstanding > 0 {
		if time.Now().After(end) {
			t.Fatalf("phase 2: %d of %d echoes in 60 s", int(seq-first2)-outstanding, phase2)
		}
		if outstanding < window && int(seq-first2) < phase2 {
			send(2, 2)
		} else {
			poll()
		}
	}
	waitFor(t, 30*time.Second, "phase 2 completions", func() bool {
		poll()
		return len(status) >= int(seq)+2
	})
	for s := int(first2); s < int(seq); s++ {
		if st := status[s]; st != gm.Success {
			t.Fatalf("phase 2: request %d completed with %v", s, st)
		}
	}
	stop.Store(true)
	wg.Wait()
	checkErrs()
}
