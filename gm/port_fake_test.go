package gm_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/gm/link/linktest"
)

// Ports over in-memory links (linktest): the port's behaviour without
// privileges, sockets or namespaces. The netns tests remain the proof on
// real sockets.

// fakeNet is a segment of fake hosts with a static node map: host i is
// node i+1, named hostI, with one interface per rail.
type fakeNet struct {
	hub   *linktest.Hub
	dir   string
	mapf  string
	macs  map[string][6]byte
	ifs   [][]string // interfaces of each host
	units []string
}

var fakeUnits atomic.Int64

// newFakeNet builds hosts hosts with rails interfaces each.
func newFakeNet(t testing.TB, hosts, rails int) *fakeNet {
	t.Helper()
	n := &fakeNet{hub: linktest.NewHub(), dir: t.TempDir(), macs: map[string][6]byte{}}
	var m bytes.Buffer
	for h := 0; h < hosts; h++ {
		// Unit names are unique in the machine's network namespace (ports
		// are owned through abstract sockets named after them).
		n.units = append(n.units, fmt.Sprintf("fake%d-%d", os.Getpid(), fakeUnits.Add(1)))
		var ifs []string
		fmt.Fprintf(&m, "%d host%d ", h+1, h)
		for r := 0; r < rails; r++ {
			name := fmt.Sprintf("h%dr%d", h, r)
			mac := [6]byte{2, 0, 0, 0, byte(r), byte(h + 1)}
			n.macs[name] = mac
			ifs = append(ifs, name)
			if r > 0 {
				m.WriteByte(',')
			}
			m.WriteString(net6(mac))
		}
		m.WriteByte('\n')
		n.ifs = append(n.ifs, ifs)
	}
	n.mapf = filepath.Join(n.dir, "map")
	if err := os.WriteFile(n.mapf, m.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}

func net6(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// config returns the configuration of a port of host h.
func (n *fakeNet) config(h int) *gm.Config {
	return &gm.Config{
		Host: fmt.Sprintf("host%d", h), StateDir: n.dir, MapFile: n.mapf,
		ProgressTimeout: testProgressTimeout, LivenessTimeout: testLivenessTimeout,
		MapPoll:  20 * time.Millisecond,
		OpenLink: n.hub.Opener(n.macs, 0),
	}
}

// open opens port id of host h; mod may change the configuration.
func (n *fakeNet) open(t testing.TB, h, id int, mod func(*gm.Config)) *gm.Port {
	t.Helper()
	cfg := n.config(h)
	if mod != nil {
		mod(cfg)
	}
	p, err := gm.OpenUnit(&gm.Unit{Name: n.units[h], Interfaces: n.ifs[h]}, id, "fake", cfg)
	if err != nil {
		t.Fatalf("open host%d port %d: %v", h, id, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// recvOne polls p until a receive event arrives (other events go to
// Unknown) and returns a copy of its message and the event.
func recvOne(t *testing.T, p *gm.Port, timeout time.Duration) ([]byte, gm.Event) {
	t.Helper()
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		e := p.Receive()
		switch {
		case e.Type.IsRecv():
			return bytes.Clone(e.Message), *e
		case e.Type == gm.NoRecvEvent:
			time.Sleep(20 * time.Microsecond)
		case e.Type == gm.PortClosedEvent:
			t.Fatal("port closed while receiving")
		default:
			p.Unknown(e)
		}
	}
	t.Fatalf("no message within %v", timeout)
	return nil, gm.Event{}
}

// TestFakeSendReceive: a FAST and a normal message go from host 0 to host
// 1, arrive with their sender, size, priority and tag, and complete with
// Success; tokens are taken and given back.
func TestFakeSendReceive(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	a, b := n.open(t, 0, 2, nil), n.open(t, 1, 4, nil)
	if a.NodeID() != 1 || b.NodeID() != 2 || a.UniqueID() != n.macs["h0r0"] {
		t.Fatalf("node ids %d %d, unique id %x", a.NodeID(), b.NodeID(), a.UniqueID())
	}
	la := startLoop(a, nil)
	defer la.Stop()
	sizeS, sizeL := gm.MinSizeForLength(8), gm.MinSizeForLength(3000)
	bufL := make([]byte, gm.MaxLengthForSize(sizeL))
	if err := b.ProvideReceiveBuffer(make([]byte, 16), sizeS, gm.HighPriority, 7); err != nil {
		t.Fatal(err)
	}
	if err := b.ProvideReceiveBuffer(bufL, sizeL, gm.LowPriority, 9); err != nil {
		t.Fatal(err)
	}
	if got, want := b.FreeReceiveTokens(), b.NumReceiveTokens()-2; got != want {
		t.Fatalf("free receive tokens %d, want %d", got, want)
	}
	comps := newCompletions()
	small, large := []byte("ping0000"), pattern(3000, 1)
	if err := a.SendWithCallback(small, sizeS, len(small), gm.HighPriority, 2, 4, comps.cb, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.SendWithCallback(large, sizeL, len(large), gm.LowPriority, 2, 4, comps.cb, 2); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		msg, e := recvOne(t, b, 5*time.Second)
		switch {
		case e.Type == gm.FastHighRecvEvent:
			if !bytes.Equal(msg, small) || e.Tag != 7 || e.Size != sizeS || e.SenderNode != 1 || e.SenderPort != 2 {
				t.Fatalf("FAST event %+v, message %q", e, msg)
			}
		case e.Type == gm.RecvEvent:
			if !bytes.Equal(msg, large) || e.Tag != 9 || e.Length != len(large) || &e.Buffer[0] != &bufL[0] {
				t.Fatalf("event %v tag %d length %d; message intact %v", e.Type, e.Tag, e.Length, bytes.Equal(msg, large))
			}
		default:
			t.Fatalf("event %v", e.Type)
		}
	}
	for _, c := range comps.wait(t, 2, 5*time.Second) {
		if c.st != gm.Success {
			t.Fatalf("send %d: %v", c.id, c.st)
		}
	}
	if got := a.FreeSendTokens(); got != a.NumSendTokens() {
		t.Fatalf("free send tokens %d of %d after the callbacks", got, a.NumSendTokens())
	}
	if got := b.FreeReceiveTokens(); got != b.NumReceiveTokens() {
		t.Fatalf("free receive tokens %d of %d after both messages", got, b.NumReceiveTokens())
	}
	if st := b.LinkStats(); st.RxFrames == 0 || st.Mode != "linktest" {
		t.Fatalf("link stats %+v", st)
	}
}

// TestFakeMisuse: misuse is refused at once, without taking a token.
func TestFakeMisuse(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	a := n.open(t, 0, 2, func(c *gm.Config) { c.SendTokens, c.ReceiveTokens = 2, 2 })
	n.open(t, 1, 4, nil)
	msg := make([]byte, 64)
	size := gm.MinSizeForLength(64)
	for _, c := range []struct {
		err  error
		send func() error
	}{
		{gm.ErrLength, func() error { return a.SendWithCallback(msg, size, 65, gm.LowPriority, 2, 4, nil, nil) }},
		{gm.ErrLength, func() error { return a.SendWithCallback(msg, 3, 64, gm.LowPriority, 2, 4, nil, nil) }},
		{gm.ErrSize, func() error { return a.SendWithCallback(msg, 2, 0, gm.LowPriority, 2, 4, nil, nil) }},
		{gm.ErrPriority, func() error { return a.SendWithCallback(msg, size, 64, 2, 2, 4, nil, nil) }},
		{gm.ErrPortID, func() error { return a.SendWithCallback(msg, size, 64, gm.LowPriority, 2, 16, nil, nil) }},
		{gm.ErrUnknownNode, func() error { return a.SendWithCallback(msg, size, 64, gm.LowPriority, 9, 4, nil, nil) }},
	} {
		if err := c.send(); !errors.Is(err, c.err) {
			t.Errorf("got %v, want %v", err, c.err)
		}
	}
	if a.FreeSendTokens() != 2 {
		t.Fatalf("misuse took tokens: %d free", a.FreeSendTokens())
	}
	// Two sends take both tokens; the third is refused.
	for i := range 2 {
		if err := a.SendWithCallback(msg, size, 64, gm.LowPriority, 2, 4, nil, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.SendWithCallback(msg, size, 64, gm.LowPriority, 2, 4, nil, 3); !errors.Is(err, gm.ErrNoSendToken) {
		t.Fatalf("third send with two tokens: %v", err)
	}
	for range 2 {
		if err := a.ProvideReceiveBuffer(make([]byte, 8), 4, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.ProvideReceiveBuffer(make([]byte, 8), 4, gm.LowPriority, 0); !errors.Is(err, gm.ErrNoReceiveToken) {
		t.Fatalf("third buffer with two receive tokens: %v", err)
	}
}

// TestFakeNoBuffer: a message the target has no buffer for is refused
// until the progress timeout, then fails with SendTimedOut; the stream is
// disabled until DropSends, after which a send with a buffer provided goes
// through.
func TestFakeNoBuffer(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	a := n.open(t, 0, 2, func(c *gm.Config) { c.ProgressTimeout = 100 * time.Millisecond })
	b := n.open(t, 1, 4, nil)
	la, lb := startLoop(a, nil), startLoop(b, nil)
	defer la.Stop()
	defer lb.Stop()
	comps := newCompletions()
	msg := []byte("nobody wants me")
	size := gm.MinSizeForLength(len(msg))
	if err := a.SendWithCallback(msg, size, len(msg), gm.LowPriority, 2, 4, comps.cb, 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if c := comps.wait(t, 1, 5*time.Second); c[0].st != gm.SendTimedOut {
		t.Fatalf("send without a buffer: %v, want %v", c[0].st, gm.SendTimedOut)
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Fatalf("failed after %v, before the progress timeout", d)
	}
	if a.Stats().NacksReceived == 0 {
		t.Fatal("no nack received")
	}
	if err := a.DropSends(gm.LowPriority, 2, 4, comps.cb, 2); err != nil {
		t.Fatal(err)
	}
	if c := comps.wait(t, 2, 5*time.Second); c[1].st != gm.Success {
		t.Fatalf("DropSends: %v", c[1].st)
	}
	lb.Stop()
	if err := b.ProvideReceiveBuffer(make([]byte, 32), size, gm.LowPriority, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.SendWithCallback(msg, size, len(msg), gm.LowPriority, 2, 4, comps.cb, 3); err != nil {
		t.Fatal(err)
	}
	if got, _ := recvOne(t, b, 5*time.Second); !bytes.Equal(got, msg) {
		t.Fatalf("received %q", got)
	}
	if c := comps.wait(t, 3, 5*time.Second); c[2].st != gm.Success {
		t.Fatalf("send after DropSends: %v", c[2].st)
	}
}

// TestFakeClosedPort: a send to a port that is not open fails with
// SendTargetPortClosed when another port of the host is open, and with
// SendTargetNodeUnreachable when none is; a closed port refuses every
// call and returns PortClosedEvent.
func TestFakeClosedPort(t *testing.T) {
	n := newFakeNet(t, 3, 1)
	a := n.open(t, 0, 2, func(c *gm.Config) { c.LivenessTimeout = 400 * time.Millisecond })
	n.open(t, 1, 5, nil) // host 1 has port 5 open, not port 4
	la := startLoop(a, nil)
	defer la.Stop()
	comps := newCompletions()
	msg := []byte("anyone?")
	size := gm.MinSizeForLength(len(msg))
	if err := a.SendWithCallback(msg, size, len(msg), gm.LowPriority, 2, 4, comps.cb, 1); err != nil {
		t.Fatal(err)
	}
	if c := comps.wait(t, 1, 5*time.Second); c[0].st != gm.SendTargetPortClosed {
		t.Fatalf("send to a closed port: %v, want %v", c[0].st, gm.SendTargetPortClosed)
	}
	// Host 2 has no port open: nothing answers.
	if err := a.SendWithCallback(msg, size, len(msg), gm.LowPriority, 3, 4, comps.cb, 2); err != nil {
		t.Fatal(err)
	}
	if c := comps.wait(t, 2, 5*time.Second); c[1].st != gm.SendTargetNodeUnreachable {
		t.Fatalf("send to a silent host: %v, want %v", c[1].st, gm.SendTargetNodeUnreachable)
	}
	la.Stop()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if e := a.Receive(); e.Type != gm.PortClosedEvent {
		t.Fatalf("Receive on a closed port: %v", e.Type)
	}
	if e := a.BlockingReceive(); e.Type != gm.PortClosedEvent {
		t.Fatalf("BlockingReceive on a closed port: %v", e.Type)
	}
	if err := a.SendWithCallback(msg, size, len(msg), gm.LowPriority, 2, 5, nil, nil); !errors.Is(err, gm.ErrClosed) {
		t.Fatalf("send on a closed port: %v", err)
	}
	if err := a.ProvideReceiveBuffer(make([]byte, 16), size, gm.LowPriority, 0); !errors.Is(err, gm.ErrClosed) {
		t.Fatalf("provide on a closed port: %v", err)
	}
	// The port is free again.
	n.open(t, 0, 2, nil).Close()
}

// TestFakeLossy: with every fifth frame dropped, a stream of messages
// still arrives whole and in order, by retransmission.
func TestFakeLossy(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	var mu sync.Mutex
	k := 0
	n.hub.SetDrop(func(f []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		k++
		return k%5 == 0
	})
	a, b := n.open(t, 0, 2, nil), n.open(t, 1, 4, nil)
	la := startLoop(a, nil)
	defer la.Stop()
	size := gm.MinSizeForLength(6000)
	for range 4 {
		if err := b.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	comps := newCompletions()
	const count = 12
	for i := range count {
		msg := pattern(6000, uint64(i))
		for {
			err := a.SendWithCallback(msg, size, len(msg), gm.LowPriority, 2, 4, comps.cb, i)
			if err == nil {
				break
			}
			if !errors.Is(err, gm.ErrNoSendToken) {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := range count {
		got, e := recvOne(t, b, 10*time.Second)
		if !bytes.Equal(got, pattern(6000, uint64(i))) {
			t.Fatalf("message %d differs", i)
		}
		b.Unknown(&e) // provides the buffer again
	}
	for _, c := range comps.wait(t, count, 10*time.Second) {
		if c.st != gm.Success {
			t.Fatalf("send %d: %v", c.id, c.st)
		}
	}
	if a.Stats().DataRetransmitted == 0 {
		t.Fatal("nothing retransmitted over a lossy segment")
	}
}

// TestFakeAlarm: an alarm comes back as AlarmEvent, and Unknown runs its
// callback.
func TestFakeAlarm(t *testing.T) {
	n := newFakeNet(t, 1, 1)
	a := n.open(t, 0, 2, nil)
	var al gm.Alarm
	fired := make(chan any, 1)
	start := time.Now() // before SetAlarm: its deadline counts from the call
	a.SetAlarm(&al, 2000, func(ctx any) { fired <- ctx }, "ctx")
	for {
		e := a.BlockingReceive()
		if e.Type != gm.AlarmEvent {
			t.Fatalf("event %v", e.Type)
		}
		a.Unknown(e)
		select {
		case ctx := <-fired:
			if ctx != "ctx" || time.Since(start) < 2*time.Millisecond {
				t.Fatalf("alarm fired with %v after %v", ctx, time.Since(start))
			}
			return
		default:
		}
	}
}

// TestFakePutGet: a put writes into the target's registered memory, a get
// reads it back, without events at the target.
func TestFakePutGet(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	a, b := n.open(t, 0, 2, nil), n.open(t, 1, 4, nil)
	mem := make([]byte, 10000)
	ptr, err := b.RegisterMemory(mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AllowRemoteMemoryAccess(); err != nil {
		t.Fatal(err)
	}
	la, lb := startLoop(a, nil), startLoop(b, func(e *gm.Event) { t.Errorf("event at the target: %v", e.Type) })
	defer la.Stop()
	defer lb.Stop()
	comps := newCompletions()
	src := pattern(7000, 3)
	if err := a.Put(src, ptr+100, len(src), gm.LowPriority, 2, 4, comps.cb, 1); err != nil {
		t.Fatal(err)
	}
	if c := comps.wait(t, 1, 5*time.Second); c[0].st != gm.Success {
		t.Fatalf("put: %v", c[0].st)
	}
	dst := make([]byte, len(src))
	if err := a.Get(ptr+100, dst, len(dst), gm.LowPriority, 2, 4, comps.cb, 2); err != nil {
		t.Fatal(err)
	}
	if c := comps.wait(t, 2, 5*time.Second); c[1].st != gm.Success {
		t.Fatalf("get: %v", c[1].st)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("get read back other bytes than the put wrote")
	}
}

// railSender starts the receive loops of a and of b (port 4 of node 2),
// provides b the buffers of two 200000-byte messages, and returns a
// function that sends one such message from a and fails the test, saying
// what, unless it completes with Success.
func railSender(t *testing.T, a, b *gm.Port) func(what string) {
	la, lb := startLoop(a, nil), startLoop(b, nil)
	t.Cleanup(func() { lb.Stop(); la.Stop() })
	size := gm.MinSizeForLength(200000)
	for range 2 {
		if err := b.ProvideReceiveBuffer(make([]byte, 200000), size, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	comps := newCompletions()
	msg := pattern(200000, 5)
	sent := 0
	return func(what string) {
		t.Helper()
		sent++
		if err := a.SendWithCallback(msg, size, len(msg), gm.LowPriority, 2, 4, comps.cb, sent); err != nil {
			t.Fatal(err)
		}
		if c := comps.wait(t, sent, 10*time.Second); c[sent-1].st != gm.Success {
			t.Fatalf("%s: %v", what, c[sent-1].st)
		}
	}
}

// TestFakeRails: a two-rail unit over fake links stripes a large message
// over both rails, and keeps working when one rail goes down.
func TestFakeRails(t *testing.T) {
	n := newFakeNet(t, 2, 2)
	var links []*linktest.Link
	var mu sync.Mutex
	open := func(c *gm.Config) {
		o := c.OpenLink
		c.OpenLink = func(ifname string, lc *link.Config) (link.Endpoint, error) {
			e, err := o(ifname, lc)
			if err == nil {
				mu.Lock()
				links = append(links, e.(*linktest.Link))
				mu.Unlock()
			}
			return e, err
		}
	}
	a, b := n.open(t, 0, 2, open), n.open(t, 1, 4, open)
	if rs := a.RailStats(); len(rs) != 2 {
		t.Fatalf("rails %+v", rs)
	}
	send := railSender(t, a, b)
	send("send")
	for i, r := range a.RailStats() {
		if r.Link.TxFrames < 10 {
			t.Fatalf("rail %d carried %d frames: no striping", i, r.Link.TxFrames)
		}
	}
	// Host 0's second rail goes down: the next message takes the first.
	links[1].SetRunning(false)
	send("send with a rail down")
	if !a.RailStats()[1].Down {
		t.Fatal("rail not reported down")
	}
}

// TestFakeRailsOpenDown: a two-rail unit whose first interface is down
// (its opener refuses it without link.Config.AllowDown, as link.Open does)
// opens with that rail down and sends on the other; the rail is used again
// once its interface runs. With every interface of the unit down, or the
// one interface of a one-rail unit, Open fails with Failure and the link's
// message, and leaves the port free.
func TestFakeRailsOpenDown(t *testing.T) {
	n := newFakeNet(t, 2, 2)
	isDown := map[string]bool{n.ifs[0][0]: true, n.ifs[0][1]: true}
	links := map[string]*linktest.Link{}
	downOpener := func(c *gm.Config) {
		o := c.OpenLink
		c.OpenLink = func(ifname string, lc *link.Config) (link.Endpoint, error) {
			if isDown[ifname] && !lc.AllowDown {
				return nil, &link.OpError{Op: "lookup", Interface: ifname, Err: link.ErrInterfaceDown}
			}
			e, err := o(ifname, lc)
			if err == nil {
				l := e.(*linktest.Link)
				l.SetRunning(!isDown[ifname])
				links[ifname] = l
			}
			return e, err
		}
	}
	for _, ifs := range [][]string{n.ifs[0], n.ifs[0][:1]} {
		cfg := n.config(0)
		downOpener(cfg)
		_, err := gm.OpenUnit(&gm.Unit{Name: n.units[0], Interfaces: ifs}, 2, "", cfg)
		want := "link: interface " + ifs[0] + " is down (`ip link set " + ifs[0] + " up`)"
		if !errors.Is(err, gm.Failure) || !errors.Is(err, link.ErrInterfaceDown) || !strings.Contains(err.Error(), want) {
			t.Errorf("unit %v down: %v, want Failure saying %q", ifs, err, want)
		}
	}
	if len(links) != 0 {
		t.Fatalf("a unit with every interface down opened %d links", len(links))
	}

	isDown[n.ifs[0][1]] = false
	a, b := n.open(t, 0, 2, downOpener), n.open(t, 1, 4, nil)
	if rs := a.RailStats(); len(rs) != 2 || !rs[0].Down || rs[1].Down {
		t.Fatalf("rails %+v, want rail 0 down", rs)
	}
	send := railSender(t, a, b)
	send("send with rail 0 down")
	if rs := a.RailStats(); rs[0].Link.TxFrames != 0 || rs[1].Link.TxFrames < 100 {
		t.Fatalf("rails %+v: the down rail carried frames", rs)
	}
	// The interface comes up: the rail is up again and carries its share.
	links[n.ifs[0][0]].SetRunning(true)
	waitFor(t, 10*time.Second, "rail 0 up", func() bool { return !a.RailStats()[0].Down })
	send("send after rail 0 came up")
	if tx := a.RailStats()[0].Link.TxFrames; tx < 10 {
		t.Fatalf("rail 0 carried %d frames after it came up", tx)
	}
}

// TestFakeOpenErrors: an interface the opener does not know is
// NoSuchDevice, a link without a 6-byte MAC or with too small an MTU is
// UnsupportedDevice, and the port is free again after each failure.
func TestFakeOpenErrors(t *testing.T) {
	n := newFakeNet(t, 1, 1)
	u := &gm.Unit{Name: n.units[0], Interfaces: []string{"nope0"}}
	if _, err := gm.OpenUnit(u, 2, "", n.config(0)); !errors.Is(err, gm.NoSuchDevice) || !errors.Is(err, link.ErrNoInterface) {
		t.Fatalf("unknown interface: %v", err)
	}
	cfg := n.config(0)
	cfg.OpenLink = n.hub.Opener(n.macs, link.MinMTU-1)
	if _, err := gm.OpenUnit(&gm.Unit{Name: n.units[0], Interfaces: n.ifs[0]}, 2, "", cfg); !errors.Is(err, gm.UnsupportedDevice) || !errors.Is(err, link.ErrMTU) {
		t.Fatalf("MTU %d: %v", link.MinMTU-1, err)
	}
	cfg.OpenLink = func(string, *link.Config) (link.Endpoint, error) {
		return noMAC{n.hub.Open("x", [6]byte{}, 0, nil)}, nil
	}
	if _, err := gm.OpenUnit(&gm.Unit{Name: n.units[0], Interfaces: n.ifs[0]}, 2, "", cfg); !errors.Is(err, gm.UnsupportedDevice) || !errors.Is(err, link.ErrNotEthernet) {
		t.Fatalf("no MAC: %v", err)
	}
	n.open(t, 0, 2, nil)
}

// noMAC is a link without a hardware address.
type noMAC struct{ *linktest.Link }

func (noMAC) HardwareAddr() net.HardwareAddr { return nil }

// TestFakePingPongAllocs: in steady state, a round trip of 8-byte
// messages through two ports (send, receive, provide the buffer again,
// completions) allocates nothing; the in-memory links allocate nothing
// either, so any allocation is the port's.
func TestFakePingPongAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	n := newFakeNet(t, 2, 1)
	quiet := func(c *gm.Config) { c.MapPoll = time.Hour } // no map reload (os.Stat) during the measure
	a, b := n.open(t, 0, 2, quiet), n.open(t, 1, 2, quiet)
	size := gm.MinSizeForLength(8)
	for _, p := range []*gm.Port{a, b} {
		for range 4 {
			if err := p.ProvideReceiveBuffer(make([]byte, 8), size, gm.HighPriority, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	msg := []byte("pingpong")
	// one sends on from and polls to until it receives, handling every
	// other event of both ports.
	one := func(from, to *gm.Port, node gm.NodeID) {
		for from.SendToPeerWithCallback(msg, size, len(msg), gm.HighPriority, node, nil, nil) != nil {
			from.Unknown(from.Receive())
		}
		for {
			e := to.Receive()
			switch {
			case e.Type.IsRecv():
				if len(e.Message) != len(msg) {
					panic("short message")
				}
				to.Unknown(e) // provides the buffer again
				return
			case e.Type != gm.NoRecvEvent:
				to.Unknown(e)
			}
		}
	}
	round := func() {
		one(a, b, 2)
		one(b, a, 1)
	}
	for range 500 {
		round()
	}
	if allocs := testing.AllocsPerRun(500, round); allocs != 0 {
		t.Fatalf("%.2f allocations per round trip, want 0", allocs)
	}
}

// TestFakeFastMessageHeld: a FAST event's Message (the port's one copy of
// the message) stays intact until the next receive call, while Unknown
// gives its buffer back, more messages arrive and the progress goroutine
// queues their events; MemorizeMessage then copies it into the buffer.
func TestFakeFastMessageHeld(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	a, b := n.open(t, 0, 2, nil), n.open(t, 1, 4, nil)
	la := startLoop(a, nil)
	defer la.Stop()
	size := gm.MinSizeForLength(8)
	for range 8 {
		if err := b.ProvideReceiveBuffer(make([]byte, 8), size, gm.HighPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	send := func(s string) {
		t.Helper()
		if err := a.SendWithCallback([]byte(s), size, len(s), gm.HighPriority, 2, 4, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	send("first-00")
	var e *gm.Event
	for end := time.Now().Add(5 * time.Second); e == nil || !e.Type.IsRecv(); {
		if time.Now().After(end) {
			t.Fatal("no message")
		}
		if e = b.Receive(); !e.Type.IsRecv() && e.Type != gm.NoRecvEvent {
			b.Unknown(e)
		}
	}
	if !e.Type.IsFast() || string(e.Message) != "first-00" {
		t.Fatalf("event %v message %q", e.Type, e.Message)
	}
	buf := e.Buffer
	b.Unknown(e) // gives the buffer back
	for i := range 6 {
		send(fmt.Sprintf("later-%02d", i))
	}
	// b does not poll: its progress goroutine drains the link and queues
	// the events (every millisecond once the application is quiet).
	for end := time.Now().Add(5 * time.Second); b.Stats().Delivered < 7; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("delivered %d of 7", b.Stats().Delivered)
		}
	}
	if string(e.Message) != "first-00" {
		t.Fatalf("message reads %q before the next receive call", e.Message)
	}
	if m := gm.MemorizeMessage(e.Message, buf, e.Length); string(m) != "first-00" || &m[0] != &buf[0] {
		t.Fatalf("memorized %q", m)
	}
	for i := range 6 {
		msg, ev := recvOne(t, b, 5*time.Second)
		if want := fmt.Sprintf("later-%02d", i); string(msg) != want || !ev.Type.IsFast() {
			t.Fatalf("message %d: %v %q, want %q", i, ev.Type, msg, want)
		}
		b.Unknown(&ev)
	}
}

// TestFakeSentTokensYield: a SENT_TOKENS event queued ahead of a receive
// event lets it pass, at most 8 times in a row (maxSentDefers), and only
// while the port has a free send token.
func TestFakeSentTokensYield(t *testing.T) {
	for _, tokens := range []int{1, 4} {
		t.Run(fmt.Sprintf("tokens=%d", tokens), func(t *testing.T) {
			n := newFakeNet(t, 2, 1)
			pa := n.open(t, 0, 2, func(c *gm.Config) { c.SendTokens = tokens })
			pb := n.open(t, 1, 4, nil)
			size := gm.MinSizeForLength(8)
			for _, p := range []*gm.Port{pa, pb} {
				for i := 0; i < 16; i++ {
					if err := p.ProvideReceiveBuffer(make([]byte, 8), size, gm.HighPriority, 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			send := func(from, to *gm.Port, port int) {
				t.Helper()
				if err := from.SendWithCallback([]byte("yieldmsg"), size, 8, gm.HighPriority, to.NodeID(), port, nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			// next returns the type of p's next event; a receive event's
			// buffer is provided again, a SENT_TOKENS event is handled.
			next := func(p *gm.Port) gm.EventType {
				t.Helper()
				for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
					e := p.Receive()
					if e.Type == gm.NoRecvEvent {
						continue
					}
					ty := e.Type
					p.Unknown(e)
					return ty
				}
				t.Fatal("no event within 10 s")
				return 0
			}
			// A first message from pb opens its session to pa. Then pb
			// acknowledges pa's message (its progress goroutine sends the
			// ack once the message was taken): pa's SENT_TOKENS event is
			// queued.
			// recv polls p until a receive event (a SENT_TOKENS event
			// of the sessions' set-up may come first).
			recv := func(p *gm.Port) {
				t.Helper()
				for ty := next(p); !ty.IsRecv(); ty = next(p) {
					if ty != gm.SentTokensEvent {
						t.Fatalf("event %v, want a receive", ty)
					}
				}
			}
			send(pb, pa, 2)
			recv(pa)
			send(pa, pb, 4)
			recv(pb)
			for end := time.Now().Add(10 * time.Second); !pa.ReceivePending(); time.Sleep(50 * time.Microsecond) {
				if time.Now().After(end) {
					t.Fatal("pa: no SENT_TOKENS event within 10 s")
				}
			}
			// sent sends a message from pb to pa and waits until it left
			// pb (it may wait for pa's ack of the one before, which pa's
			// progress goroutine sends): pa's next poll reads it.
			sent := func() {
				t.Helper()
				before := pb.LinkStats().TxFrames
				send(pb, pa, 2)
				for end := time.Now().Add(10 * time.Second); pb.LinkStats().TxFrames == before; time.Sleep(50 * time.Microsecond) {
					if time.Now().After(end) {
						t.Fatal("pb's message not sent within 10 s")
					}
				}
			}
			passes := 8
			if tokens == 1 {
				passes = 0 // pa's only token waits in the completion
			}
			for i := 0; i <= passes; i++ {
				sent()
				ty := next(pa)
				if i < passes && !ty.IsRecv() {
					t.Fatalf("message %d behind the SENT_TOKENS event: event %v, want it to pass (%d in a row)", i+1, ty, passes)
				}
				if i == passes && ty != gm.SentTokensEvent {
					t.Fatalf("message %d behind the SENT_TOKENS event: event %v, want SENT_TOKENS first", i+1, ty)
				}
			}
			if ty := next(pa); !ty.IsRecv() {
				t.Fatalf("after SENT_TOKENS: event %v, want the message", ty)
			}
			if free := pa.FreeSendTokens(); free != tokens {
				t.Fatalf("%d free send tokens, want %d", free, tokens)
			}
		})
	}
}
