// Command simple_recv is EtherGM's gm_simple_example_recv: it opens a
// port, provides receive buffers, waits for one message, prints it and
// answers the sender with "ok".
//
// Usage:
//
//	simple_recv [--unit NAME] [--port N] [--hostname NAME] [--state-dir DIR] [--map-file FILE] [--timeout D]
//
// --hostname, --state-dir and --map-file default to ETHERGM_HOST, ETHERGM_STATE_DIR and
// ETHERGM_MAP. It exits 0 after answering, 1 on error or timeout.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ethergm/ethergm/gm"
)

func main() {
	unit := flag.String("unit", "", "unit (interface list or units-file name); default: the only interface that is up")
	port := flag.Int("port", 4, "port id to open")
	host := flag.String("hostname", "", "this host's `NAME` in the node map (default $ETHERGM_HOST, else the kernel's host name)")
	state := flag.String("state-dir", "", "the state directory `DIR` (default $ETHERGM_STATE_DIR, else "+gm.DefaultStateDir+")")
	mapFile := flag.String("map-file", "", "the node map `FILE` (default $ETHERGM_MAP, else DIR/map)")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	flag.Parse()
	if err := run(*unit, *port, &gm.Config{Host: *host, StateDir: *state, MapFile: *mapFile}, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "simple_recv:", err)
		os.Exit(1)
	}
}

func run(unit string, port int, cfg *gm.Config, timeout time.Duration) error {
	p, err := gm.Open(unit, port, "simple_recv", cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	// Like gm_simple_example: one buffer per size class we accept.
	const maxSize = 16
	for s := uint8(gm.MinMessageSize); s <= maxSize; s++ {
		if err := p.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(s)), s, gm.LowPriority, s); err != nil {
			return err
		}
	}
	fmt.Printf("simple_recv: node %d (%s) port %d waiting\n", p.NodeID(), p.HostName(), port)
	var alarm gm.Alarm
	expired := false
	p.SetAlarm(&alarm, uint64(timeout/time.Microsecond), func(any) { expired = true }, nil)
	done := false
	reply := []byte("ok")
	for !done {
		e := p.BlockingReceive()
		switch e.Type {
		case gm.RecvEvent, gm.PeerRecvEvent, gm.FastRecvEvent, gm.FastPeerRecvEvent:
			msg := e.Message // FAST: in the event; else Buffer[:Length]
			name, _ := p.NodeIDToHostName(e.SenderNode)
			fmt.Printf("simple_recv: received %q (%d bytes, size %d) from node %d (%s) port %d\n",
				msg, e.Length, e.Size, e.SenderNode, name, e.SenderPort)
			sender, sport := e.SenderNode, e.SenderPort
			p.Unknown(e) // gives the buffer back to the port
			err := p.SendWithCallback(reply, gm.MinSizeForLength(len(reply)), len(reply), gm.LowPriority, sender, sport,
				func(_ *gm.Port, _ any, st gm.Status) {
					if st != gm.Success {
						fmt.Fprintln(os.Stderr, "simple_recv: reply failed:", st)
					}
					done = true
				}, nil)
			if err != nil {
				return err
			}
		default:
			p.Unknown(e) // runs callbacks and alarms
			if expired {
				return fmt.Errorf("no message within %v", timeout)
			}
		}
	}
	fmt.Println("simple_recv: done")
	return nil
}
