package gm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
)

// helperEnv, when set, makes TestHelperReceiverProcess a receiving port
// for TestIntegrationKillReceiver: "host,statedir,mapfile,iface".
const helperEnv = "ETHERGM_HELPER_RECEIVER"

// The stream of the kill tests: node 1 port 2 to node 2 port 4, low
// priority, sizes 5..12 (every message carries its sequence number).
const (
	killPort       = 4
	killMinSize    = 5
	killMaxSize    = 12
	killStreamNode = 1
)

var killStream = streamID(killStreamNode, 2, gm.LowPriority)

// TestHelperReceiverProcess is not a test: run by TestIntegrationKillReceiver
// in a host's namespace (helperEnv set), it opens port 4, receives the kill
// stream and prints "GOT k" for every message, checked, or "ERR ..." for
// anything else, until it is killed.
func TestHelperReceiverProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		return
	}
	f := strings.Split(spec, ",")
	if len(f) != 4 {
		fmt.Println("ERR bad", helperEnv, spec)
		os.Exit(2)
	}
	cfg := &gm.Config{Host: f[0], StateDir: f[1], MapFile: f[2], ProgressTimeout: testProgressTimeout, LivenessTimeout: testLivenessTimeout, MapPoll: 50 * time.Millisecond}
	p, err := gm.Open(f[3], killPort, "kill-receiver", cfg)
	if err != nil {
		fmt.Println("ERR open:", err)
		os.Exit(1)
	}
	for size := uint8(killMinSize); size <= killMaxSize; size++ {
		for range 16 {
			if err := p.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, gm.LowPriority, 0); err != nil {
				fmt.Println("ERR provide:", err)
				os.Exit(1)
			}
		}
	}
	fmt.Println("READY")
	for {
		e := p.BlockingReceive()
		if !e.Type.IsRecv() {
			p.Unknown(e)
			continue
		}
		line := ""
		if len(e.Message) < 8 {
			line = fmt.Sprintf("ERR short message of %d bytes", len(e.Message))
		} else {
			id, k := binary.BigEndian.Uint32(e.Message), binary.BigEndian.Uint32(e.Message[4:])
			size, want := trafficMessage(id, k, killMinSize, killMaxSize)
			switch {
			case id != killStream || e.SenderNode != killStreamNode || e.SenderPort != trafficPort || e.Priority != gm.LowPriority:
				line = fmt.Sprintf("ERR message of stream %#x from %d:%d priority %d", id, e.SenderNode, e.SenderPort, e.Priority)
			case e.Size != size || !bytes.Equal(e.Message, want):
				line = fmt.Sprintf("ERR message %d changed", k)
			default:
				line = fmt.Sprintf("GOT %d", k)
			}
		}
		fmt.Println(line)
		_ = p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	}
}

// incarnation is one run of the helper receiver.
type incarnation struct {
	proc *netns.Proc
}

// got returns the messages the incarnation reported and its error lines.
func (in *incarnation) got() (ks []uint32, errs []string) {
	for line := range strings.Lines(in.proc.Output()) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "GOT "):
			k, err := strconv.ParseUint(line[4:], 10, 32)
			if err != nil {
				errs = append(errs, line)
				continue
			}
			ks = append(ks, uint32(k))
		case strings.HasPrefix(line, "ERR"):
			errs = append(errs, line)
		}
	}
	return ks, errs
}

// killSender streams the kill stream from port p to node 2 port 4.
type killSender struct {
	p    *gm.Port
	mu   sync.Mutex
	next uint32               // next message to submit
	done map[uint32]gm.Status // completion per message
	ch   chan struct{}

	// resume: the stream is resumed after each failure (resumeFailed),
	// failures of which have not been resumed yet.
	resume   bool
	failures int
}

func (s *killSender) cb(_ *gm.Port, ctx any, st gm.Status) {
	s.mu.Lock()
	k := ctx.(uint32)
	if _, dup := s.done[k]; dup {
		st = 255 // a second completion: flagged by check
	}
	s.done[k] = st
	if s.resume && st != gm.Success && st != gm.SendDropped {
		s.failures++
	}
	s.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// sendUpTo submits messages until next == n, waiting for send tokens.
func (s *killSender) sendUpTo(t *testing.T, n uint32) {
	t.Helper()
	end := time.Now().Add(2 * time.Minute)
	for {
		s.mu.Lock()
		k := s.next
		s.mu.Unlock()
		if k >= n {
			return
		}
		s.resumeFailed(t)
		size, msg := trafficMessage(killStream, k, killMinSize, killMaxSize)
		err := s.p.SendWithCallback(msg, size, len(msg), gm.LowPriority, 2, killPort, s.cb, k)
		switch {
		case err == nil:
			s.mu.Lock()
			s.next++
			s.mu.Unlock()
		case errors.Is(err, gm.ErrNoSendToken):
			if time.Now().After(end) {
				t.Fatalf("no send token for 2 minutes at message %d", k)
			}
			time.Sleep(time.Millisecond)
		default:
			t.Fatal(err)
		}
	}
}

// resumeFailed calls ResumeSending once per failure not resumed yet (GM:
// once per error reported), as far as send tokens allow.
func (s *killSender) resumeFailed(t *testing.T) {
	t.Helper()
	for {
		s.mu.Lock()
		n := s.failures
		s.mu.Unlock()
		if n == 0 {
			return
		}
		err := s.p.ResumeSending(gm.LowPriority, 2, killPort, nil, nil)
		if errors.Is(err, gm.ErrNoSendToken) {
			return // later
		}
		if err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		s.failures--
		s.mu.Unlock()
	}
}

// waitFailure waits for the first completion with a status other than
// Success and returns it.
func (s *killSender) waitFailure(t *testing.T, timeout time.Duration) (uint32, gm.Status) {
	t.Helper()
	end := time.After(timeout)
	for {
		s.mu.Lock()
		for k, st := range s.done {
			if st != gm.Success {
				s.mu.Unlock()
				return k, st
			}
		}
		s.mu.Unlock()
		select {
		case <-s.ch:
		case <-end:
			t.Fatalf("no send failed within %v", timeout)
		}
	}
}

// waitAll waits until every submitted message has completed.
func (s *killSender) waitAll(t *testing.T, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "every send to complete", func() bool {
		s.resumeFailed(t)
		s.mu.Lock()
		defer s.mu.Unlock()
		return uint32(len(s.done)) == s.next
	})
}

// TestIntegrationKillReceiver kills (SIGKILL) the receiving process of a
// verified stream mid-transfer, twice:
//
//   - with a restart: a new process opens the same port, the sender's
//     failed stream is resumed (ResumeSending, once per failure) and
//     traffic flows again; the new incarnation receives a gap-free run of
//     intact messages in order, none that the old one received, every
//     message it received completed with Success, every message the
//     sender saw succeed reached one of the two, and every other one
//     completed with an error status: the messages sent to the first
//     incarnation and not acknowledged when it died, which it may have
//     received, fail (PORT_CLOSED or NODE_UNREACHABLE) when the
//     handshake with the second shows that the first is gone;
//   - without one: the sender's sends complete with a GM error status
//     (the node's liveness timeout, nothing answers on that host), and
//     DropSends completes the rest as dropped; nothing is delivered after
//     the kill.
//
// It logs how many messages the first incarnation received but had not
// acknowledged when it died (they completed with an error status).
func TestIntegrationKillReceiver(t *testing.T) { killReceiver(t) }

func killReceiver(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	m := writeMap(t, c)
	h0, h1 := c.Hosts[0], c.Hosts[1]
	const liveness = 3 * time.Second
	sp := openPort(t, h0, trafficPort, func() *gm.Config {
		cfg := testConfig(h0, m)
		cfg.LivenessTimeout = liveness
		return cfg
	}())
	ls := startLoop(sp, nil)
	defer ls.Stop()
	s := &killSender{p: sp, done: map[uint32]gm.Status{}, ch: make(chan struct{}, 1)}

	start := func() *incarnation {
		t.Helper()
		spec := strings.Join([]string{h1.Name, h1.Dir, m, h1.Ifaces[0]}, ",")
		p, err := h1.Start("env", helperEnv+"="+spec, os.Args[0], "-test.run=^TestHelperReceiverProcess$", "-test.count=1")
		if err != nil {
			t.Fatal(err)
		}
		in := &incarnation{proc: p}
		waitFor(t, time.Minute, "the receiver process to open its port", func() bool {
			select {
			case <-p.Done():
				t.Fatalf("receiver process exited: %s", p.Output())
			default:
			}
			return strings.Contains(p.Output(), "READY")
		})
		return in
	}
	received := func(in *incarnation) []uint32 {
		ks, errs := in.got()
		if len(errs) > 0 {
			t.Fatalf("receiver reported %d errors: %q", len(errs), errs)
		}
		return ks
	}

	// Incarnation 1 gets a few hundred messages, then dies mid-stream.
	old := start()
	s.sendUpTo(t, 300)
	waitFor(t, time.Minute, "the first incarnation to receive 200 messages", func() bool { return len(received(old)) >= 200 })
	s.sendUpTo(t, 400) // more in flight when it dies
	if err := old.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := s.next
	oldGot := received(old)
	t.Logf("first incarnation killed after %d of %d messages", len(oldGot), killedAt)
	// A fast receiver may have acknowledged every message before it died:
	// then one more goes to the dead port, and the sender learns of the
	// death through its failure.
	settled := func() (failed, all bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, st := range s.done {
			if st != gm.Success {
				return true, false
			}
		}
		return false, len(s.done) == int(killedAt)
	}
	waitFor(t, 10*liveness, "a send to fail or every send to complete", func() bool {
		failed, all := settled()
		return failed || all
	})
	if failed, _ := settled(); !failed {
		t.Logf("every message was acknowledged before the kill: one more goes to the dead port")
		s.sendUpTo(t, killedAt+1)
		killedAt++
	}

	// The sender learns of it through a failed send.
	k, st := s.waitFailure(t, 10*liveness)
	t.Logf("message %d failed: %v", k, st)
	if st != gm.SendTargetPortClosed && st != gm.SendTargetNodeUnreachable && st != gm.SendTimedOut {
		t.Errorf("message %d completed with %v, want a port-closed, unreachable or timed-out status", k, st)
	}

	// Incarnation 2 on the same port; the stream resumes.
	cur := start()
	s.mu.Lock()
	s.resume = true // the handshake fails what the first one may have had
	s.mu.Unlock()
	if err := sp.ResumeSending(gm.LowPriority, 2, killPort, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.sendUpTo(t, 700)
	s.waitAll(t, 2*time.Minute)
	// The receiver prints a message after the engine acknowledged it.
	waitFor(t, time.Minute, "the second incarnation to print message 699", func() bool {
		ks := received(cur)
		return len(ks) > 0 && ks[len(ks)-1] >= 699
	})
	newGot := received(cur)

	s.mu.Lock()
	done := make(map[uint32]gm.Status, len(s.done))
	for k, st := range s.done {
		done[k] = st
	}
	s.mu.Unlock()
	inOld := map[uint32]bool{}
	for _, k := range oldGot {
		if inOld[k] {
			t.Errorf("first incarnation got message %d twice", k)
		}
		inOld[k] = true
	}
	for i, k := range newGot {
		if inOld[k] {
			t.Errorf("message %d reached both incarnations", k)
		}
		if i > 0 && k != newGot[i-1]+1 {
			t.Errorf("second incarnation: message %d after %d", k, newGot[i-1])
		}
		if done[k] != gm.Success {
			t.Errorf("message %d reached the second incarnation but completed with %v", k, done[k])
		}
	}
	if len(newGot) == 0 || newGot[len(newGot)-1] != 699 {
		t.Fatalf("second incarnation got %d messages, last %v; want up to 699", len(newGot), newGot[max(len(newGot)-1, 0):])
	}
	inNew := map[uint32]bool{}
	for _, k := range newGot {
		inNew[k] = true
	}
	var failed, failedGot, lostOK int
	for k := uint32(0); k < 700; k++ {
		switch st := done[k]; {
		case st == 255:
			t.Errorf("message %d completed twice", k)
		case st != gm.Success:
			failed++
			if inOld[k] {
				failedGot++
			}
			if inNew[k] {
				t.Errorf("message %d failed (%v) but reached the second incarnation", k, st)
			}
			if k >= killedAt {
				t.Errorf("message %d, submitted after the kill, failed (%v)", k, st)
			}
			if st != gm.SendTargetPortClosed && st != gm.SendTargetNodeUnreachable && st != gm.SendTimedOut {
				t.Errorf("message %d completed with %v, want a port-closed, unreachable or timed-out status", k, st)
			}
		case !inOld[k] && !inNew[k]:
			// Delivered to the first incarnation, which died before it
			// printed it: possible only for its last messages.
			lostOK++
			if k < newGot[0] && len(oldGot) > 0 && k > oldGot[len(oldGot)-1] {
				continue
			}
			t.Errorf("message %d succeeded but reached neither incarnation", k)
		}
	}
	t.Logf("restart: first incarnation %d messages, second %d (from %d), %d failed at the kill (%d of them received by the first incarnation, unacknowledged), %d acknowledged by the first but not printed before it died",
		len(oldGot), len(newGot), newGot[0], failed, failedGot, lostOK)

	// Killed again, no restart: the sends fail; DropSends completes the rest.
	s.mu.Lock()
	s.resume = false
	s.mu.Unlock()
	s.sendUpTo(t, 800)
	if err := cur.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	before := len(received(cur))
	// A few more sends, at most as many as there are free tokens: the ones
	// outstanding hold their tokens until the stream fails and DropSends
	// completes them.
	s.sendUpTo(t, s.next+uint32(min(20, sp.FreeSendTokens())))
	s.mu.Lock()
	last := s.next
	for k, st := range s.done {
		if st != gm.Success {
			delete(s.done, k) // forget the first kill's failures
		}
	}
	s.mu.Unlock()
	k, st = s.waitFailure(t, 10*liveness)
	if k < 700 || (st != gm.SendTargetNodeUnreachable && st != gm.SendTargetPortClosed && st != gm.SendTimedOut) {
		t.Errorf("after the second kill message %d completed with %v", k, st)
	}
	if err := sp.DropSends(gm.LowPriority, 2, killPort, nil, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "every send to complete", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for k := uint32(700); k < last; k++ {
			if _, ok := s.done[k]; !ok {
				return false
			}
		}
		return true
	})
	s.mu.Lock()
	var dropped int
	for k := uint32(700); k < last; k++ {
		if s.done[k] == gm.SendDropped {
			dropped++
		}
	}
	s.mu.Unlock()
	if after := len(received(cur)); after != before {
		t.Errorf("the killed receiver reported %d more messages", after-before)
	}
	t.Logf("no restart: message %d failed with %v, %d dropped by DropSends", k, st, dropped)
	if dropped == 0 {
		t.Error("DropSends dropped nothing")
	}
}

// TestIntegrationLinkDown takes one of three hosts' link down for 5
// seconds in the middle of verified traffic among them (every size class
// 3..14, both priorities, 6 streams), then up again: every stream must
// deliver every message exactly once and in order, and every send must
// succeed (the liveness timeout, 30 s here, is longer than the cut).
func TestIntegrationLinkDown(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3})
	m := writeMap(t, c)
	tc := startTraffic(t, c, nil, func(h *netns.Host) *gm.Config { return testConfig(h, m) }, 3, 14)
	h := c.Hosts[2]
	t.Cleanup(func() { _ = h.LinkUp(0) })
	var during uint64
	tc.while("link down for 5 s", func() {
		time.Sleep(2 * time.Second)
		if err := h.LinkDown(0); err != nil {
			t.Fatal(err)
		}
		r0 := tc.totals().Received
		time.Sleep(5 * time.Second)
		during = tc.totals().Received - r0
		if err := h.LinkUp(0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
	})
	s, _, _ := tc.portStats()
	t.Logf("link down: %d messages delivered during the cut (between the two other hosts); %d retransmissions, %d timeouts", during, s.DataRetransmitted, s.Timeouts)
	// No assertion on "during": the senders' tokens fill up with messages
	// to the absent host (GM's per-port tokens), so the other streams may
	// nearly stop, the more so on a loaded machine.
}
