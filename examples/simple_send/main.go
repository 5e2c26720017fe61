// Command simple_send is EtherGM's gm_simple_example_send: it opens a
// port, sends one message to a port of another host, waits for the send's
// completion and for the receiver's reply, and prints both.
//
// Usage:
//
//	simple_send --remote-host HOST [--remote-port N] [--unit NAME] [--port N] [--hostname NAME] [--state-dir DIR] [--map-file FILE] [message]
//
// It exits 0 if the message was delivered and answered, 1 otherwise.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ethergm/ethergm/gm"
)

func main() {
	to := flag.String("remote-host", "", "the target `HOST`, a host name of the node map (required)")
	toPort := flag.Int("remote-port", 4, "target port id")
	unit := flag.String("unit", "", "unit (interface list or units-file name); default: the only interface that is up")
	port := flag.Int("port", 2, "port id to open")
	host := flag.String("hostname", "", "this host's `NAME` in the node map (default $ETHERGM_HOST, else the kernel's host name)")
	state := flag.String("state-dir", "", "the state directory `DIR` (default $ETHERGM_STATE_DIR, else "+gm.DefaultStateDir+")")
	mapFile := flag.String("map-file", "", "the node map `FILE` (default $ETHERGM_MAP, else DIR/map)")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	flag.Parse()
	msg := "hello from EtherGM"
	if flag.NArg() > 0 {
		msg = strings.Join(flag.Args(), " ")
	}
	if *to == "" {
		fmt.Fprintln(os.Stderr, "simple_send: --remote-host HOST is required")
		os.Exit(2)
	}
	cfg := &gm.Config{Host: *host, StateDir: *state, MapFile: *mapFile, ProgressTimeout: *timeout}
	if err := run(*unit, *port, cfg, *to, *toPort, msg, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "simple_send:", err)
		os.Exit(1)
	}
}

func run(unit string, port int, cfg *gm.Config, to string, toPort int, msg string, timeout time.Duration) error {
	p, err := gm.Open(unit, port, "simple_send", cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	target, err := p.HostNameToNodeID(to)
	if err != nil {
		return err
	}
	// A buffer for the reply.
	if err := p.ProvideReceiveBuffer(make([]byte, 8), gm.MinSizeForLength(8), gm.LowPriority, 0); err != nil {
		return err
	}
	data := []byte(msg)
	size := gm.MinSizeForLength(len(data))
	sent, replied := false, false
	var status gm.Status
	err = p.SendWithCallback(data, size, len(data), gm.LowPriority, target, toPort,
		func(_ *gm.Port, _ any, st gm.Status) { sent, status = true, st }, nil)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for !(sent && replied) && time.Now().Before(deadline) {
		e := p.BlockingReceive()
		switch e.Type {
		case gm.RecvEvent, gm.FastRecvEvent, gm.PeerRecvEvent, gm.FastPeerRecvEvent:
			fmt.Printf("simple_send: reply %q from node %d\n", e.Message, e.SenderNode)
			replied = true
			p.Unknown(e)
		default:
			p.Unknown(e)
		}
		if sent && status != gm.Success {
			return fmt.Errorf("send to %s (node %d) port %d: %w", to, target, toPort, status)
		}
	}
	if !sent || !replied {
		return fmt.Errorf("no completion or reply within %v", timeout)
	}
	fmt.Printf("simple_send: sent %q (%d bytes, size %d) to %s (node %d) port %d: %s\n", msg, len(data), size, to, target, toPort, status.String())
	return nil
}
