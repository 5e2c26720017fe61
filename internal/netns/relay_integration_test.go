//go:build linux

package netns_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/relay"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

const etherGM = 0x88B5

// listenGM opens an EtherGM packet socket on the host's eth0 with a large
// receive buffer.
func listenGM(t *testing.T, h *netns.Host) *packet.Conn {
	t.Helper()
	var c *packet.Conn
	err := h.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		c, err = packet.Listen(ifi, packet.Raw, etherGM, nil)
		if err != nil {
			return err
		}
		rc, err := c.SyscallConn()
		if err != nil {
			return err
		}
		return rc.Control(func(fd uintptr) {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// gmFrame is a 200-byte EtherGM frame from src to dst whose payload
// starts with seq, with a pattern from payload byte 44 on.
func gmFrame(dst, src net.HardwareAddr, seq uint32) []byte {
	payload := make([]byte, 200-14)
	binary.BigEndian.PutUint32(payload, seq)
	for i := 44; i < len(payload); i++ {
		payload[i] = byte((i + 14) * 7)
	}
	ef := ethernet.Frame{Destination: dst, Source: src, EtherType: etherGM, Payload: payload}
	f, err := ef.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return f
}

// seqOf returns the sequence number gmFrame put in f, or 0 if f is not a
// frame of gmFrame's.
func seqOf(f []byte) uint32 {
	var ef ethernet.Frame
	if ef.UnmarshalBinary(f) != nil || len(ef.Payload) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(ef.Payload)
}

// sendRecv sends n frames from tx to rx through direction AtoB of r and
// returns the frames received: it waits (up to a generous deadline) until
// the relay has read the n frames and rx has received as many as the relay
// handed on, then for the line to be idle for a while, so that a stall of
// the relay on a loaded machine does not cut the capture short and any
// frame beyond what the relay counted is still caught.
func sendRecv(t *testing.T, r *relay.Relay, tx, rx *packet.Conn, from, to *netns.Host, n int) [][]byte {
	t.Helper()
	const idle = 300 * time.Millisecond
	before := r.Stats(relay.AtoB)
	var count atomic.Int64
	stop := make(chan struct{})
	got := make(chan [][]byte)
	go func() {
		var frames [][]byte
		buf := make([]byte, 2048)
		for {
			stopping := false
			select {
			case <-stop:
				stopping = true
			default:
			}
			rx.SetReadDeadline(time.Now().Add(idle))
			m, _, err := rx.ReadFrom(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) && !stopping {
				continue
			}
			if err != nil {
				got <- frames
				return
			}
			frames = append(frames, append([]byte(nil), buf[:m]...))
			count.Add(1)
		}
	}()
	for i := range n {
		f := gmFrame(to.MACs[0], from.MACs[0], uint32(i))
		if _, err := tx.WriteTo(f, &packet.Addr{HardwareAddr: to.MACs[0]}); err != nil {
			close(stop)
			<-got
			t.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(time.Millisecond) // stay well within socket buffers
		}
	}
	// Frames lost to the kernel's queues keep the condition false: the
	// deadline ends the wait and the caller's tolerance judges.
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		s := r.Stats(relay.AtoB)
		out := (s.Forwarded - before.Forwarded) - (s.Overflows - before.Overflows) - (s.Errors - before.Errors)
		if s.Received-before.Received >= uint64(n) && count.Load() >= int64(out) {
			break
		}
	}
	close(stop)
	return <-got
}

// near reports whether got is want, give or take 1% (lost to the kernel's
// queues on a busy machine).
func near(got, want int) bool {
	return got <= want && float64(got) >= 0.99*float64(want)
}

// checkRate checks that count/n is within 5 standard deviations of p.
func checkRate(t *testing.T, what string, count uint64, n int, p float64) {
	t.Helper()
	got := float64(count) / float64(n)
	if tol := 5 * math.Sqrt(p*(1-p)/float64(n)); math.Abs(got-p) > tol {
		t.Errorf("%s rate %.3f, want %.3f ± %.3f", what, got, p, tol)
	}
}

func TestIntegrationRelay(t *testing.T) {
	t.Parallel()
	c := netns.NewImpairedPair(t, relay.Config{
		Seed:      1,
		EtherType: etherGM,
		AtoB:      relay.Impairment{Drop: 0.2},
	})
	r := c.Relay()
	if r == nil || c.Switch == nil || c.Switch.Name != "relay" || len(c.Switch.Ifaces) != 2 {
		t.Fatalf("relay %v, switch %+v", r, c.Switch)
	}
	h0, h1 := c.Hosts[0], c.Hosts[1]
	tx, rx := listenGM(t, h0), listenGM(t, h1)
	const n = 2000

	// Drop: what arrives is exactly what the relay forwarded.
	frames := sendRecv(t, r, tx, rx, h0, h1, n)
	s := r.Stats(relay.AtoB)
	checkRate(t, "drop", s.Dropped, n, 0.2)
	if s.Received != n || !near(len(frames), int(s.Forwarded)) || s.Errors != 0 {
		t.Errorf("drop: received %d frames, stats %+v", len(frames), s)
	}

	// Duplicate.
	if err := r.SetImpairment(relay.AtoB, relay.Impairment{Duplicate: 0.25}); err != nil {
		t.Fatal(err)
	}
	frames = sendRecv(t, r, tx, rx, h0, h1, n)
	s2 := r.Stats(relay.AtoB)
	dups := s2.Duplicated - s.Duplicated
	checkRate(t, "duplicate", dups, n, 0.25)
	seen := map[uint32]int{}
	for _, f := range frames {
		seen[seqOf(f)]++
	}
	var extra int
	for _, k := range seen {
		extra += k - 1
	}
	if !near(len(seen), n) || !near(n+extra, n+int(dups)) {
		t.Errorf("duplicate: %d distinct of %d, %d extra copies, relay says %d", len(seen), n, extra, dups)
	}

	// Corrupt: every frame has exactly one flipped bit in the payload area.
	if err := r.SetImpairment(relay.AtoB, relay.Impairment{Corrupt: 1}); err != nil {
		t.Fatal(err)
	}
	frames = sendRecv(t, r, tx, rx, h0, h1, 200)
	if !near(len(frames), 200) {
		t.Errorf("corrupt: %d frames, want 200", len(frames))
	}
	for _, f := range frames {
		want := gmFrame(h1.MACs[0], h0.MACs[0], seqOf(f))
		var flipped, at int
		for i := range min(len(f), len(want)) {
			if d := bits.OnesCount8(f[i] ^ want[i]); d > 0 {
				flipped, at = flipped+d, i
			}
		}
		if flipped != 1 || at < relay.DefaultCorruptFrom || len(f) != len(want) {
			t.Fatalf("corrupt: %d bits flipped, last at %d", flipped, at)
		}
	}

	// The other direction and non-EtherGM traffic (ARP, ICMP) are untouched.
	if err := r.SetImpairment(relay.AtoB, relay.Impairment{Drop: 1}); err != nil {
		t.Fatal(err)
	}
	if err := h0.Ping(h1.Addrs[0], 5*time.Second); err != nil {
		t.Errorf("ping through the relay: %v", err)
	}
	if b := r.Stats(relay.BtoA); b.Passed == 0 || b.Dropped != 0 {
		t.Errorf("BtoA stats %+v", b)
	}
	frames = sendRecv(t, r, tx, rx, h0, h1, 10)
	if len(frames) != 0 {
		t.Errorf("Drop 1 let %d frames through", len(frames))
	}
}

func TestIntegrationRelayDelay(t *testing.T) {
	t.Parallel()
	const delay = 20 * time.Millisecond
	c := netns.NewImpairedPair(t, relay.Config{BtoA: relay.Impairment{Delay: delay}})
	h0, h1 := c.Hosts[0], c.Hosts[1]
	a, b := listenGM(t, h0), listenGM(t, h1)
	f := gmFrame(h0.MACs[0], h1.MACs[0], 1)
	start := time.Now()
	if _, err := b.WriteTo(f, &packet.Addr{HardwareAddr: h0.MACs[0]}); err != nil {
		t.Fatal(err)
	}
	a.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := a.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < delay {
		t.Errorf("frame arrived after %v, want >= %v", el, delay)
	}
	if !bytes.Equal(buf[:n], f) {
		t.Error("frame changed")
	}
	// IPv4 through the relay with every frame delayed (offloads are off, so
	// UDP checksums survive the copy).
	if err := h1.Ping(h0.Addrs[0], 5*time.Second); err != nil {
		t.Error(err)
	}
	udpThrough(t, h0, h1)
}

// udpThrough sends a UDP datagram from h0 to h1 and checks it arrives.
func udpThrough(t *testing.T, h0, h1 *netns.Host) {
	t.Helper()
	var srv, cli *net.UDPConn
	err := h1.Do(func() error {
		var err error
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: h1.Addrs[0].AsSlice(), Port: 9000})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	err = h0.Do(func() error {
		var err error
		cli, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: h1.Addrs[0].AsSlice(), Port: 9000})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	msg := bytes.Repeat([]byte("udp through relay "), 50)
	buf := make([]byte, 2048)
	for range 20 {
		cli.Write(msg)
		srv.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := srv.ReadFromUDP(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:n], msg) {
			t.Fatal("UDP payload changed")
		}
		return
	}
	t.Error("no UDP datagram through the relay")
}

// TestIntegrationRelaySwitch joins 3 hosts through the relay (a learning
// switch): every host reaches every other (ARP broadcasts flooded, unicast
// forwarded by learned MAC), each host's frames are counted and impaired
// on its own port, and a unicast EtherGM frame reaches only its target.
func TestIntegrationRelaySwitch(t *testing.T) {
	t.Parallel()
	c := netns.New(t, netns.Options{Hosts: 3, Relay: &relay.Config{Seed: 1, EtherType: etherGM}})
	r := c.Relay()
	if r.Ports() != 3 || len(c.Switch.Ifaces) != 3 {
		t.Fatalf("relay with %d ports, switch %+v", r.Ports(), c.Switch)
	}
	for _, a := range c.Hosts {
		for _, b := range c.Hosts {
			if a != b {
				if err := a.Ping(b.Addrs[0], 5*time.Second); err != nil {
					t.Errorf("%s to %s: %v", a.Name, b.Name, err)
				}
			}
		}
	}
	for i := range c.Hosts {
		if s := r.Stats(relay.From(i)); s.Received == 0 || s.Passed == 0 {
			t.Errorf("host%d: stats %+v", i, s)
		}
	}
	// host0's EtherGM frames are all dropped; host1's reach host2 only.
	if err := r.SetImpairment(relay.From(0), relay.Impairment{Drop: 1}); err != nil {
		t.Fatal(err)
	}
	h0, h1, h2 := c.Hosts[0], c.Hosts[1], c.Hosts[2]
	c0, c1, c2 := listenGM(t, h0), listenGM(t, h1), listenGM(t, h2)
	for i := range 10 {
		if _, err := c0.WriteTo(gmFrame(h2.MACs[0], h0.MACs[0], uint32(i)), &packet.Addr{HardwareAddr: h2.MACs[0]}); err != nil {
			t.Fatal(err)
		}
		if _, err := c1.WriteTo(gmFrame(h2.MACs[0], h1.MACs[0], uint32(i)), &packet.Addr{HardwareAddr: h2.MACs[0]}); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 2048)
	got := 0
	for got < 10 {
		c2.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := c2.ReadFrom(buf)
		if err != nil {
			t.Fatalf("host2 got %d of host1's 10 frames: %v", got, err)
		}
		var ef ethernet.Frame
		if err := ef.UnmarshalBinary(buf[:n]); err != nil || !bytes.Equal(ef.Source, h1.MACs[0]) || n != 200 {
			t.Fatalf("host2 got a %d-byte frame from %v (%v)", n, ef.Source, err)
		}
		got++
	}
	c0.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, _, err := c0.ReadFrom(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("host0 received a frame meant for host2 (%v)", err)
	}
	if s := r.Stats(relay.From(0)); s.Dropped != 10 {
		t.Errorf("host0's port dropped %d EtherGM frames, want 10", s.Dropped)
	}
}
