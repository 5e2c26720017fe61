// Command egm-demo is what `make demo` runs: it builds a small cluster of hosts
// in network namespaces on this machine, moves real EtherGM frames between
// them, prints what it measured, and removes everything it made:
//
//  1. the link layer alone: a 64-byte ping-pong over the AF_PACKET rings
//     (polling and blocking) and a stream of full frames;
//  2. the mappers: gm_mapper on every host (all dual-rail but the last,
//     which has one rail); they elect a mapper, which gives every host a
//     node id and the map; gm_board_info prints the result once the network
//     is fully configured;
//  3. GM ports on the mappers' map: `gm_allsize --verify` on one host
//     (loopback through the local unit, every byte checked), and a two-host
//     `gm_allsize` run across the switch;
//  4. multi-rail: the same two-host run with the unit "eth0,eth1" stripes
//     large messages over both rails; the server's second rail is cut while
//     it runs, and the new map, the routes and the transfer's result are
//     printed; the rail comes back and the mappers remap again.
//
// It needs root (CAP_NET_ADMIN for the namespaces, CAP_NET_RAW for the
// sockets) and the gm_allsize, gm_mapper, gm_board_info and gm_counters
// commands (--bin DIR, or built with `go build`). Its options follow the
// convention of every EtherGM command (package internal/cli): --help,
// --version, -v (every result line of gm_allsize).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/cli"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/wire"
)

func main() { os.Exit(run(os.Args[1:])) }

const description = `Build a cluster of hosts in network namespaces on this machine, move real
EtherGM frames between them (link-level ping-pong and streaming), start a
gm_mapper on every host and print gm_board_info once they have mapped the
network, run gm_allsize on one host and between two on the mappers' map,
then over two rails while one is cut, print what was measured, and remove
everything it made. It needs root.

Exit status: 0 on success, 1 on a failure, 2 for a bad command line.`

// options are the command line.
type options struct {
	hosts     int
	rounds    int
	streamFor time.Duration
	bin       string
	verbose   int
}

func run(args []string) int {
	var o options
	c := cli.New("egm-demo", os.Stdout, os.Stderr)
	c.Description(description)
	c.Flags.IntVar(&o.hosts, "hosts", 4, "hosts in the cluster (one switch per rail; the last has one rail), at least 3")
	c.Flags.IntVar(&o.rounds, "rounds", 20000, "link-level ping-pong round trips")
	c.Flags.DurationVar(&o.streamFor, "stream", 2*time.Second, "how long to stream full frames")
	c.Flags.StringVar(&o.bin, "bin", "", "the directory `DIR` holding gm_allsize, gm_mapper, gm_board_info and gm_counters (default: next to egm-demo, else build them with go build)")
	c.VerboseFlag(&o.verbose, "print every result line of gm_allsize, not only the first and last")
	if code, done := c.Parse(args); done {
		return code
	}
	switch {
	case o.hosts < 3 || o.hosts > netns.MaxHosts:
		return c.Usagef("invalid value \"%d\" for --hosts: want 3..%d", o.hosts, netns.MaxHosts)
	case o.rounds < 10:
		return c.Usagef("invalid value \"%d\" for --rounds: want at least 10", o.rounds)
	case o.streamFor <= 0:
		return c.Usagef("invalid value \"%v\" for --stream: want a positive duration", o.streamFor)
	}
	if err := netns.Available(); err != nil {
		return c.FailWith(err, "run it as root (sudo make demo), with iproute2 installed")
	}
	if err := demo(&o); err != nil {
		return c.Fail(err)
	}
	return cli.ExitOK
}

func demo(o *options) error {
	nhosts := o.hosts
	// Every host has two rails (one Linux bridge each), but the last, which
	// has only eth0 (a single-rail host among dual-rail ones).
	hostRails := make([][]int, nhosts)
	hostRails[nhosts-1] = []int{0}
	c, err := netns.NewCluster(netns.Options{Hosts: nhosts, Rails: 2, HostRails: hostRails})
	if err != nil {
		return err
	}
	defer func() {
		c.Close()
		fmt.Println("cleaned up: namespaces, links and processes removed")
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		c.Close()
		os.Exit(130)
	}()

	fmt.Printf("EtherGM demo: %d hosts in network namespaces, two rails (one Linux bridge per rail); %s has one rail\n", nhosts, c.Hosts[nhosts-1].Name)
	for _, h := range c.Hosts {
		var ifs []string
		for i := range h.Ifaces {
			ifs = append(ifs, h.Ifaces[i]+" "+h.MACs[i].String())
		}
		fmt.Printf("  %-6s netns %-22s %s\n", h.Name, h.NS, strings.Join(ifs, ", "))
	}

	a, b := c.Hosts[0], c.Hosts[1]
	const port = 2
	// SpinTime < 0: Wait sleeps in the kernel at once, so "blocking" below
	// really measures a receiver woken by the kernel.
	la, err := openIn(a, &link.Config{Ports: 1 << port, SpinTime: -1})
	if err != nil {
		return err
	}
	defer la.Close()
	lb, err := openIn(b, &link.Config{Ports: 1 << port, SpinTime: -1, QdiscBypass: true})
	if err != nil {
		return err
	}
	defer lb.Close()
	fmt.Printf("link mode: %s\n", la.Mode())

	for _, mode := range []struct {
		name string
		wait bool
	}{{"polling (busy-polled ring)", false}, {"blocking (asleep in the kernel)", true}} {
		n := o.rounds
		if mode.wait {
			n = o.rounds / 10
		}
		rtts, err := pingPong(la, lb, port, n, mode.wait)
		if err != nil {
			return fmt.Errorf("ping-pong %s: %w", mode.name, err)
		}
		fmt.Printf("ping-pong %s -> %s, 64-byte payload, %d round trips, %s: p50 %.1f us, p99 %.1f us\n",
			a.Name, b.Name, n, mode.name, pct(rtts, 50), pct(rtts, 99))
	}

	streamFor := o.streamFor
	got, gbps, err := stream(lb, la, port, streamFor)
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	fmt.Printf("stream %s -> %s, full 1514-byte frames for %v: %d frames received, %.2f Gbit/s of Ethernet payload\n",
		b.Name, a.Name, streamFor, got, gbps)
	sa, sb := la.Stats(), lb.Stats()
	fmt.Printf("counters %s: rx %d tx %d crc-errors %d kernel-drops %d; %s: rx %d tx %d crc-errors %d kernel-drops %d\n",
		a.Name, sa.RxFrames, sa.TxFrames, sa.CRCErrors, sa.KernelDrops,
		b.Name, sb.RxFrames, sb.TxFrames, sb.CRCErrors, sb.KernelDrops)
	la.Close()
	lb.Close()

	return gmDemo(c, o.bin, o.verbose > 0)
}

// openIn opens a link on the host's first interface from inside its namespace.
func openIn(h *netns.Host, cfg *link.Config) (*link.Link, error) {
	var l *link.Link
	err := h.Do(func() error {
		var err error
		l, err = link.Open(h.Ifaces[0], cfg)
		return err
	})
	return l, err
}

func mac6(l *link.Link) (m [6]byte) {
	copy(m[:], l.HardwareAddr())
	return m
}

// pingPong bounces a 64-byte frame between a and b n times and returns the
// round trip times in microseconds. Each reply is checked against its request.
func pingPong(a, b *link.Link, port uint8, n int, wait bool) ([]float64, error) {
	payload := make([]byte, 64)
	done := make(chan error, 1)
	go func() { // the echo side
		frames := make([][]byte, 16)
		out := make([]byte, 0, 256)
		for i := 0; i < n; {
			k, err := recv(b, frames, wait)
			if err != nil {
				done <- err
				return
			}
			for _, f := range frames[:k] {
				h, err := wire.ParseFrame(f, wire.EtherType)
				if err != nil {
					done <- err
					return
				}
				fields := wire.HeaderFields{Type: wire.TypeDatagram, TargetPort: port, SourcePort: port, Seq: h.Seq()}
				out = wire.AppendFrame(out[:0], mac6(a), mac6(b), wire.EtherType, &fields, h.Payload())
				if err := b.Send(out); err != nil {
					done <- err
					return
				}
				i++
			}
		}
		done <- nil
	}()

	rtts := make([]float64, 0, n)
	frames := make([][]byte, 16)
	out := make([]byte, 0, 256)
	for i := range n {
		payload[0] = byte(i)
		fields := wire.HeaderFields{Type: wire.TypeDatagram, TargetPort: port, SourcePort: port, Seq: uint32(i)}
		out = wire.AppendFrame(out[:0], mac6(b), mac6(a), wire.EtherType, &fields, payload)
		start := time.Now()
		if err := a.Send(out); err != nil {
			return nil, err
		}
		deadline := start.Add(2 * time.Second)
		for got := false; !got; {
			k, err := recv(a, frames, wait)
			if err != nil {
				return nil, err
			}
			for _, f := range frames[:k] {
				h, err := wire.ParseFrame(f, wire.EtherType)
				if err == nil && h.Seq() == uint32(i) && len(h.Payload()) == len(payload) && h.Payload()[0] == byte(i) {
					got = true
				}
			}
			if !got && time.Now().After(deadline) {
				return nil, fmt.Errorf("round trip %d: no reply within 2s", i)
			}
		}
		rtts = append(rtts, float64(time.Since(start).Nanoseconds())/1e3)
	}
	return rtts, <-done
}

func recv(l *link.Link, frames [][]byte, wait bool) (int, error) {
	if wait {
		return l.Wait(frames, 100*time.Millisecond)
	}
	return l.Recv(frames), nil
}

// stream sends full frames from tx to rx for d and returns how many arrived
// and the received Ethernet-payload goodput.
func stream(tx, rx *link.Link, port uint8, d time.Duration) (uint64, float64, error) {
	mtu := tx.MTU()
	payload := make([]byte, mtu-wire.HeaderLen)
	frameLen := wire.EthHeaderLen + wire.HeaderLen + len(payload)
	stop := make(chan struct{})
	var got, bytes uint64
	done := make(chan error, 1)
	go func() {
		frames := make([][]byte, 64)
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			k, err := rx.Wait(frames, 20*time.Millisecond)
			if err != nil {
				done <- err
				return
			}
			for _, f := range frames[:k] {
				got++
				bytes += uint64(len(f) - wire.EthHeaderLen)
			}
		}
	}()

	const batch = 32
	bufs := make([][]byte, batch)
	for i := range bufs {
		bufs[i] = make([]byte, 0, frameLen)
	}
	start := time.Now()
	var seq uint32
	for time.Since(start) < d {
		for i := range bufs {
			fields := wire.HeaderFields{Type: wire.TypeDatagram, TargetPort: port, SourcePort: port, Seq: seq}
			seq++
			bufs[i] = wire.AppendFrame(bufs[i][:0], mac6(rx), mac6(tx), wire.EtherType, &fields, payload)
		}
		if _, err := tx.SendBatch(bufs); err != nil {
			return 0, 0, err
		}
	}
	elapsed := time.Since(start)
	time.Sleep(50 * time.Millisecond) // let the last frames land
	close(stop)
	if err := <-done; err != nil {
		return 0, 0, err
	}
	return got, float64(bytes) * 8 / elapsed.Seconds() / 1e9, nil
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}
