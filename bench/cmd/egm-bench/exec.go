package main

import (
	"io"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/bench/internal/runner"
	"github.com/ethergm/ethergm/tests/netns"
)

// bench is the state shared by the measurements.
type bench struct {
	cfg    *config
	bins   map[string]string
	cl     *netns.Cluster
	client *netns.Host // host0: clients and senders
	server *netns.Host // host1: servers and receivers
	log    io.Writer
	tmp    string
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

// lastLine returns the last non-empty line of s.
func lastLine(s string) string { return runner.LastLine(s) }
