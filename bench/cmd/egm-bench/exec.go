package main

import (
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/bench/internal/runner"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
	"github.com/ethergm/ethergm/internal/netns/relay"
)

// The networks the measurements run on. Each is a two-host cluster built
// once per run, before the first repetition, if a selected measurement
// needs it.
const (
	netDirect  = ""        // direct veth pair, MTU 1500
	netMTU9000 = "mtu9000" // direct veth pair, MTU 9000
	netRelay   = "relay"   // through the in-process impairment relay, MTU 1500
	netIncast  = "incast"  // incastHosts hosts on a bridge, MTU 1500 (incast.go)
)

// netOptions returns the cluster options of a network.
func netOptions(name string) netns.Options {
	switch name {
	case netMTU9000:
		return netns.Options{Hosts: 2, Direct: true, MTU: 9000}
	case netIncast:
		return netns.Options{Hosts: incastHosts, MTU: 1500}
	case netRelay:
		// Only EtherGM frames are impaired; the impairment is set by each
		// measurement (relayStream).
		return netns.Options{Hosts: 2, MTU: 1500, Relay: &relay.Config{Seed: 1, EtherType: 0x88B5}}
	}
	return netns.Options{Hosts: 2, Direct: true, MTU: 1500}
}

// pair is one two-host network: host0 runs clients and senders, host1
// servers and receivers.
type pair struct {
	cl      *netns.Cluster
	client  *netns.Host
	server  *netns.Host
	mapFile string // the GM node map (host i is node i+1)
}

// newPair wraps a cluster and writes its GM node map into the cluster's
// directory.
func newPair(cl *netns.Cluster) (*pair, error) {
	mapFile, err := gmmap.WriteInto(cl)
	if err != nil {
		return nil, err
	}
	return &pair{cl: cl, client: cl.Hosts[0], server: cl.Hosts[1], mapFile: mapFile}, nil
}

// openNets builds the networks the selected measurements need. The
// returned function removes them (also on error).
func openNets(sel []*spec) (map[string]*pair, func() error, error) {
	nets := map[string]*pair{}
	closeAll := func() error {
		var first error
		for _, p := range nets {
			if err := p.cl.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, s := range sel {
		if nets[s.net] != nil {
			continue
		}
		cl, err := netns.NewCluster(netOptions(s.net))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		p, err := newPair(cl)
		if err != nil {
			cl.Close()
			closeAll()
			return nil, nil, err
		}
		nets[s.net] = p
	}
	return nets, closeAll, nil
}

// bench is the state shared by the measurements.
type bench struct {
	cfg  *config
	bins map[string]string
	log  io.Writer
	tmp  string
	nets map[string]*pair
	// The network of the current measurement (see on).
	*pair
}

// on returns b set up to run on network name.
func (b *bench) on(name string) (*bench, error) {
	p := b.nets[name]
	if p == nil {
		return nil, fmt.Errorf("network %q was not built", name)
	}
	c := *b
	c.pair = p
	return &c, nil
}

func (b *bench) runner() *runner.Runner { return &runner.Runner{Log: b.log, Nice: b.cfg.nice} }

// startServer starts a server on the server host, pinned to the server
// CPU, and waits until its output contains readyText (if not empty).
func (b *bench) startServer(readyText string, name string, args ...string) (*netns.Proc, error) {
	return b.runner().StartServer(b.server, b.cfg.serverCPU, readyText, name, args...)
}

// stopServer signals p's process group with sig, waits up to 5 s (then
// kills it) and returns its output.
func (b *bench) stopServer(p *netns.Proc, sig syscall.Signal) string {
	return b.runner().StopServer(p, sig)
}

// waitServer waits up to d for p to exit by itself (a receiver that saw the
// end of the stream), then kills it, and returns its output.
func (b *bench) waitServer(p *netns.Proc, d time.Duration) (string, error) {
	return b.runner().WaitServer(p, d)
}

// runClient runs a client on the client host, pinned to the client CPU,
// with a timeout, and returns its combined output.
func (b *bench) runClient(timeout time.Duration, name string, args ...string) (string, error) {
	return b.runner().RunClient(b.client, b.cfg.clientCPU, timeout, name, args...)
}

// gmEnv returns the env(1) arguments that run egm-gmperf as host h of the
// current network (its GM host name, state directory and node map).
func (b *bench) gmEnv(h *netns.Host, args ...string) []string {
	return append([]string{"ETHERGM_HOST=" + h.Name, "ETHERGM_STATE_DIR=" + h.Dir, "ETHERGM_MAP=" + b.mapFile, b.bins["egm-gmperf"]}, args...)
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string { return runner.LastLine(s) }
