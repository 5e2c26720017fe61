package gm_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// The GM calls that neither move messages nor fail them, over fake links:
// what a GM program reads of its port and of the node map, alarms,
// send-token accounting, acceptable sizes and resume, the GM-1 names.

// TestFakeIdentity: a port reports the id, name, unit and constants it was
// opened with, and the node map's lookups agree with the map the fake
// segment wrote (host i is node i+1 with MAC 02:00:00:00:00:i+1).
func TestFakeIdentity(t *testing.T) {
	n := newFakeNet(t, 3, 1)
	p := n.open(t, 1, 5, nil)
	if p.ID() != 5 || p.Name() != "fake" || p.Unit().Name != n.units[1] {
		t.Fatalf("port %d %q unit %q", p.ID(), p.Name(), p.Unit().Name)
	}
	if p.NumPorts() != gm.NumPorts || p.MTU() != gm.MTU || p.MinMessageSize() != gm.MinMessageSize || p.MaxNodeID() != gm.MaxNodeID {
		t.Fatalf("constants: %d ports, MTU %d, min size %d, max node %d", p.NumPorts(), p.MTU(), p.MinMessageSize(), p.MaxNodeID())
	}
	if got := len(p.NodeMap().Entries()); got != 3 {
		t.Fatalf("node map of %d entries, want 3", got)
	}
	if got := p.MaxNodeIDInUse(); got != 3 {
		t.Fatalf("max node id in use %d, want 3", got)
	}

	for _, name := range []string{"host2", "host2:0", "host2:17"} {
		if id, err := p.HostNameToNodeID(name); err != nil || id != 3 {
			t.Errorf("HostNameToNodeID(%q) = %d, %v; want 3", name, id, err)
		}
	}
	for _, name := range []string{"nohost", ":1", "host9:0"} {
		if _, err := p.HostNameToNodeID(name); !errors.Is(err, gm.NoMatch) {
			t.Errorf("HostNameToNodeID(%q): %v, want NoMatch", name, err)
		}
	}
	if h, err := p.NodeIDToHostName(1); err != nil || h != "host0" {
		t.Errorf("NodeIDToHostName(1) = %q, %v", h, err)
	}
	if _, err := p.NodeIDToHostName(9); !errors.Is(err, gm.NoMatch) {
		t.Errorf("NodeIDToHostName(9): %v, want NoMatch", err)
	}

	mac := n.macs["h2r0"]
	if id, err := p.UniqueIDToNodeID(mac); err != nil || id != 3 {
		t.Errorf("UniqueIDToNodeID(%x) = %d, %v", mac, id, err)
	}
	if _, err := p.UniqueIDToNodeID([6]byte{2, 9, 9, 9, 9, 9}); !errors.Is(err, gm.NoMatch) {
		t.Errorf("UniqueIDToNodeID of a stranger: %v, want NoMatch", err)
	}
	if m, err := p.NodeIDToUniqueID(3); err != nil || m != mac {
		t.Errorf("NodeIDToUniqueID(3) = %x, %v; want %x", m, err, mac)
	}
	if _, err := p.NodeIDToUniqueID(0); !errors.Is(err, gm.NoMatch) {
		t.Errorf("NodeIDToUniqueID(0): %v, want NoMatch", err)
	}

	// Global ids are the low 32 bits of the first MAC, and map back.
	g, err := p.NodeIDToGlobalID(3)
	if want := uint32(mac[2])<<24 | uint32(mac[3])<<16 | uint32(mac[4])<<8 | uint32(mac[5]); err != nil || g != want {
		t.Fatalf("NodeIDToGlobalID(3) = %#x, %v; want %#x", g, err, want)
	}
	if id, err := p.GlobalIDToNodeID(g); err != nil || id != 3 {
		t.Errorf("GlobalIDToNodeID(%#x) = %d, %v", g, id, err)
	}
	if _, err := p.NodeIDToGlobalID(7); !errors.Is(err, gm.NoMatch) {
		t.Errorf("NodeIDToGlobalID(7): %v, want NoMatch", err)
	}
	if _, err := p.GlobalIDToNodeID(0xdeadbeef); !errors.Is(err, gm.NoMatch) {
		t.Errorf("GlobalIDToNodeID(0xdeadbeef): %v, want NoMatch", err)
	}

	// Ticks count half microseconds from the open, and move forward.
	t0 := p.Ticks()
	time.Sleep(2 * time.Millisecond)
	if t1 := p.Ticks(); t1 < t0+2*1000*gm.TicksPerMicrosecond {
		t.Errorf("Ticks went from %d to %d over 2 ms", t0, t1)
	}
	if s := p.DebugState(); !strings.Contains(s, "port 5 (fake) node 2") {
		t.Errorf("DebugState does not name the port:\n%s", s)
	}
}

// TestFakeAlarmCancel: a cancelled alarm never fires; a rescheduled one
// fires once, at its new deadline; InitializeAlarm leaves an alarm that
// can be set again.
func TestFakeAlarmCancel(t *testing.T) {
	n := newFakeNet(t, 1, 1)
	p := n.open(t, 0, 2, nil)
	fired := make(chan string, 4)
	var cancelled, moved gm.Alarm
	gm.InitializeAlarm(&cancelled)
	p.SetAlarm(&cancelled, 1000, func(ctx any) { fired <- ctx.(string) }, "cancelled")
	p.CancelAlarm(&cancelled)
	p.CancelAlarm(&cancelled) // a second cancel does nothing
	p.SetAlarm(&moved, 1000, func(ctx any) { fired <- ctx.(string) }, "first")
	p.SetAlarm(&moved, 20000, func(ctx any) { fired <- ctx.(string) }, "moved")
	start := time.Now()
	for len(fired) == 0 {
		e := p.BlockingReceive()
		if e.Type != gm.AlarmEvent && e.Type != gm.NoRecvEvent {
			t.Fatalf("event %v", e.Type)
		}
		p.Unknown(e)
	}
	if got := <-fired; got != "moved" || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("alarm %q fired after %v, want \"moved\" after 20 ms", got, time.Since(start))
	}
	// Nothing else is due: the cancelled alarm and the first schedule are
	// gone. Poll a while past their deadlines to see.
	end := time.Now().Add(30 * time.Millisecond)
	for time.Now().Before(end) {
		if e := p.Receive(); e.Type != gm.NoRecvEvent {
			p.Unknown(e)
		}
	}
	if len(fired) != 0 {
		t.Fatalf("alarm %q fired too", <-fired)
	}
	gm.InitializeAlarm(&cancelled)
	p.SetAlarm(&cancelled, 0, func(ctx any) { fired <- ctx.(string) }, "again")
	for len(fired) == 0 {
		p.Unknown(p.BlockingReceive())
	}
	if got := <-fired; got != "again" {
		t.Fatalf("alarm %q fired, want \"again\"", got)
	}
}

// TestFakeSendTokenAccounting: the accounting counters of GM's send-token
// helpers start empty, take deposits up to the real token count, and give
// out no more than was deposited, per priority.
func TestFakeSendTokenAccounting(t *testing.T) {
	n := newFakeNet(t, 1, 1)
	p := n.open(t, 0, 2, nil)
	if p.SendTokenAvailable(gm.LowPriority) || p.AllocSendToken(gm.LowPriority) {
		t.Fatal("a token before any deposit")
	}
	if err := p.DepositSendTokens(gm.LowPriority, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.DepositSendTokens(gm.HighPriority, p.NumSendTokens()); !errors.Is(err, gm.ErrTokenAccounting) {
		t.Fatalf("deposit beyond the real tokens: %v, want ErrTokenAccounting", err)
	}
	if err := p.DepositSendTokens(gm.LowPriority, -1); !errors.Is(err, gm.ErrTokenAccounting) {
		t.Fatalf("negative deposit: %v, want ErrTokenAccounting", err)
	}
	for i := range 2 {
		if !p.SendTokenAvailable(gm.LowPriority) || !p.AllocSendToken(gm.LowPriority) {
			t.Fatalf("token %d of 2 not given", i)
		}
	}
	if p.AllocSendToken(gm.LowPriority) || p.SendTokenAvailable(gm.HighPriority) {
		t.Fatal("more tokens than deposited, or a deposit crossed priorities")
	}
	if err := p.FreeSendToken(gm.LowPriority); err != nil {
		t.Fatal(err)
	}
	if !p.AllocSendToken(gm.LowPriority) {
		t.Fatal("a freed token is not given again")
	}
	if err := p.FreeSendToken(gm.LowPriority); err != nil {
		t.Fatal(err)
	}
	if err := p.FreeSendToken(gm.LowPriority); err != nil {
		t.Fatal(err)
	}
	if err := p.FreeSendToken(gm.LowPriority); !errors.Is(err, gm.ErrTokenAccounting) {
		t.Fatalf("freeing more than allocated: %v, want ErrTokenAccounting", err)
	}
}

// TestFakeRejectedResume: a size the receiver does not accept fails with
// SendRejected and holds the stream's next send; ResumeSending lets it go
// (the refused one is not resent), and the held message arrives.
func TestFakeRejectedResume(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	a, b := n.open(t, 0, 2, nil), n.open(t, 1, 4, nil)
	size := gm.MinSizeForLength(100)
	if err := b.SetAcceptableSizes(gm.LowPriority, 1<<(size+1)); err != nil {
		t.Fatal(err)
	}
	if err := b.SetAcceptableSizes(gm.NumPriorities, 0); err == nil {
		t.Fatal("SetAcceptableSizes of a bad priority: no error")
	}
	la := startLoop(a, nil)
	defer la.Stop()
	c := newCompletions()
	if err := a.SendWithCallback([]byte(strings.Repeat("r", 100)), size, 100, gm.LowPriority, 2, 4, c.cb, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.SendWithCallback([]byte("held"), size, 4, gm.LowPriority, 2, 4, c.cb, 2); err != nil {
		t.Fatal(err)
	}
	expect(t, c.wait(t, 1, 10*time.Second), completion{1, gm.SendRejected})
	if err := b.SetAcceptableSizes(gm.LowPriority, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	if err := b.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, gm.LowPriority, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.ResumeSending(gm.LowPriority, 2, 4, c.cb, 100); err != nil {
		t.Fatal(err)
	}
	got, e := recvOne(t, b, 10*time.Second)
	if string(got) != "held" || e.SenderNode != 1 || e.SenderPort != 2 {
		t.Fatalf("received %q from node %d port %d, want \"held\" from node 1 port 2", got, e.SenderNode, e.SenderPort)
	}
	expect(t, c.wait(t, 3, 10*time.Second), completion{1, gm.SendRejected}, completion{100, gm.Success}, completion{2, gm.Success})
}

// TestFakeDirectedSendNoSpin: GM-1's directed send writes the target's
// registered memory like Put, and BlockingReceiveNoSpin hands over the
// message that follows it, whose FAST copy Memorize keeps.
func TestFakeDirectedSendNoSpin(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	a, b := n.open(t, 0, 2, nil), n.open(t, 1, 4, nil)
	mem := make([]byte, 4096)
	ptr, err := b.RegisterMemory(mem)
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Offset() != 0 || ptr.Add(10).Offset() != 10 || ptr.Add(10).Region() != ptr.Region() {
		t.Fatalf("remote pointer %v: region %d offset %d", ptr, ptr.Region(), ptr.Offset())
	}
	if want := strings.SplitN(ptr.Add(16).String(), ":", 2); len(want) != 2 || want[1] != "0x10" {
		t.Fatalf("remote pointer %v + 16 formats as %q", ptr, ptr.Add(16).String())
	}
	if err := b.AllowRemoteMemoryAccess(); err != nil {
		t.Fatal(err)
	}
	la := startLoop(a, nil)
	defer la.Stop()
	c := newCompletions()
	src := pattern(1000, 5)
	if err := a.DirectedSendWithCallback(src, ptr.Add(64), len(src), gm.HighPriority, 2, 4, c.cb, 1); err != nil {
		t.Fatal(err)
	}
	size := gm.MinSizeForLength(8)
	buf := make([]byte, gm.MaxLengthForSize(size))
	if err := b.ProvideReceiveBuffer(buf, size, gm.HighPriority, 3); err != nil {
		t.Fatal(err)
	}
	if err := a.SendWithCallback([]byte("after it"), size, 8, gm.HighPriority, 2, 4, c.cb, 2); err != nil {
		t.Fatal(err)
	}
	var e *gm.Event
	for {
		e = b.BlockingReceiveNoSpin()
		if e.Type.IsRecv() {
			break
		}
		b.Unknown(e)
	}
	if e.Type.String() != "GM_FAST_HIGH_RECV_EVENT" || e.Tag != 3 {
		t.Fatalf("event %v tag %d, want GM_FAST_HIGH_RECV_EVENT tag 3", e.Type, e.Tag)
	}
	if got := e.Memorize(); string(got) != "after it" || &got[0] != &buf[0] {
		t.Fatalf("Memorize gave %q, not in the provided buffer", got)
	}
	// The put travelled before the message in the same stream.
	if !bytes.Equal(mem[64:64+len(src)], src) {
		t.Fatal("the directed send's data is not in the target's memory")
	}
	expect(t, c.wait(t, 2, 10*time.Second), completion{1, gm.Success}, completion{2, gm.Success})
	if gm.EventType(200).String() != "GM_EVENT(200)" {
		t.Fatalf("unknown event type formats as %q", gm.EventType(200).String())
	}
}

// TestPerror: Perror writes GM's "message: description" line to standard
// error.
func TestPerror(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	gm.Perror("gm_open", gm.Busy)
	os.Stderr = old
	w.Close()
	out, _ := io.ReadAll(r)
	if want := "gm_open: " + gm.Strerror(gm.Busy) + "\n"; string(out) != want {
		t.Fatalf("Perror wrote %q, want %q", out, want)
	}
}

// rewriteMap replaces the fake segment's node map with lines (a new file
// renamed over the old, as the mapper writes it).
func (n *fakeNet) rewriteMap(t *testing.T, lines ...string) {
	t.Helper()
	tmp := n.mapf + ".new"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, n.mapf); err != nil {
		t.Fatal(err)
	}
}

// waitNodeID waits until p's node id is want.
func waitNodeID(t *testing.T, p *gm.Port, want gm.NodeID) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for p.NodeID() != want {
		if time.Now().After(end) {
			t.Fatalf("node id %d, want %d, 10 s after the map changed", p.NodeID(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFakeMapChanges: a port whose host the node map does not list yet
// refuses to send (NodeIDNotYetSet, naming the host and the map) and
// takes its node id when the map lists it; when the map renumbers a host,
// its peers address it by the new id and see its messages come from it.
func TestFakeMapChanges(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	host0 := "1 host0 " + net6(n.macs["h0r0"])
	n.rewriteMap(t, host0)
	a := n.open(t, 0, 2, nil)
	b := n.open(t, 1, 4, nil)
	if b.NodeID() != gm.NoSuchNodeID {
		t.Fatalf("node id %d before the map lists the host", b.NodeID())
	}
	err := b.SendWithCallback([]byte("x"), 5, 1, gm.LowPriority, 1, 2, nil, 0)
	if !errors.Is(err, gm.NodeIDNotYetSet) || !strings.Contains(err.Error(), `"host1"`) || !strings.Contains(err.Error(), n.mapf) {
		t.Fatalf("send before the map lists the host: %v\nwant NodeIDNotYetSet naming host1 and %s", err, n.mapf)
	}

	n.rewriteMap(t, host0, "2 host1 "+net6(n.macs["h1r0"]))
	waitNodeID(t, b, 2)
	exchange := func(bNode gm.NodeID, tag int) {
		t.Helper()
		size := gm.MinSizeForLength(8)
		if err := a.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
		lb := startLoop(b, nil)
		c := newCompletions()
		if err := b.SendWithCallback([]byte("from b"), size, 6, gm.LowPriority, 1, 2, c.cb, tag); err != nil {
			t.Fatal(err)
		}
		got, e := recvOne(t, a, 10*time.Second)
		if string(got) != "from b" || e.SenderNode != bNode {
			t.Fatalf("received %q from node %d, want \"from b\" from node %d", got, e.SenderNode, bNode)
		}
		expect(t, c.wait(t, 1, 10*time.Second), completion{tag, gm.Success})
		lb.Stop()
	}
	exchange(2, 1)

	// Renumbered: host1 becomes node 7 for both ports.
	n.rewriteMap(t, host0, "7 host1 "+net6(n.macs["h1r0"]))
	waitNodeID(t, b, 7)
	end := time.Now().Add(10 * time.Second)
	for a.MaxNodeIDInUse() != 7 {
		if time.Now().After(end) {
			t.Fatal("host0's port did not follow the renumbered map")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.SendWithCallback([]byte("x"), 5, 1, gm.LowPriority, 2, 4, nil, 0); !errors.Is(err, gm.ErrUnknownNode) {
		t.Fatalf("send to the old node id: %v, want ErrUnknownNode", err)
	}
	exchange(7, 2)
}
