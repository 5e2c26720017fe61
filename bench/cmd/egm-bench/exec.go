package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"

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

// pinned returns the command line that runs name pinned to cpu (taskset)
// at the configured nice level.
func (b *bench) pinned(cpu int, name string, args ...string) (string, []string) {
	argv := append([]string{"-c", fmt.Sprint(cpu), name}, args...)
	if b.cfg.nice == 0 {
		return "taskset", argv
	}
	return "nice", append([]string{"-n", fmt.Sprint(b.cfg.nice), "taskset"}, argv...)
}

// startServer starts a server on the server host, pinned to the server
// CPU, and waits until its output contains readyText (if not empty).
func (b *bench) startServer(readyText string, name string, args ...string) (*netns.Proc, error) {
	cmd, argv := b.pinned(b.cfg.serverCPU, name, args...)
	fmt.Fprintf(b.log, "$ [%s] %s %s &\n", b.server.Name, cmd, strings.Join(argv, " "))
	p, err := b.server.Start(cmd, argv...)
	if err != nil {
		return nil, err
	}
	if readyText == "" {
		return p, nil
	}
	deadline := time.After(10 * time.Second)
	for !strings.Contains(p.Output(), readyText) {
		select {
		case <-p.Done():
			out := p.Output()
			fmt.Fprint(b.log, out)
			return nil, fmt.Errorf("%s exited before it was ready: %v: %s", name, p.Wait(), lastLine(out))
		case <-deadline:
			_ = p.Kill()
			return nil, fmt.Errorf("%s not ready after 10s: %s", name, lastLine(p.Output()))
		case <-time.After(10 * time.Millisecond):
		}
	}
	return p, nil
}

// stopServer signals p's process group with sig, waits up to 5 s (then
// kills it) and returns its output.
func (b *bench) stopServer(p *netns.Proc, sig syscall.Signal) string {
	select {
	case <-p.Done():
	default:
		_ = syscall.Kill(-p.Pid(), sig)
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
			_ = p.Kill()
		}
	}
	out := p.Output()
	fmt.Fprintf(b.log, "--- server %s output:\n%s\n", p.Args[0], out)
	return out
}

// waitServer waits up to d for p to exit by itself (a receiver that saw the
// end of the stream), then kills it, and returns its output.
func (b *bench) waitServer(p *netns.Proc, d time.Duration) (string, error) {
	var err error
	select {
	case <-p.Done():
		err = p.Wait()
	case <-time.After(d):
		_ = p.Kill()
		err = fmt.Errorf("%s did not finish within %v", p.Args[0], d)
	}
	out := p.Output()
	fmt.Fprintf(b.log, "--- server %s output:\n%s\n", p.Args[0], out)
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, lastLine(out))
	}
	return out, nil
}

// runClient runs a client on the client host, pinned to the client CPU,
// with a timeout, and returns its combined output.
func (b *bench) runClient(timeout time.Duration, name string, args ...string) (string, error) {
	cmd, argv := b.pinned(b.cfg.clientCPU, name, args...)
	fmt.Fprintf(b.log, "$ [%s] %s %s\n", b.client.Name, cmd, strings.Join(argv, " "))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := b.client.CommandContext(ctx, cmd, argv...)
	out, err := c.CombinedOutput()
	fmt.Fprintf(b.log, "%s\n", out)
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("%s timed out after %v", name, timeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), fmt.Errorf("%s: %v: %s", name, err, lastLine(string(out)))
	}
	return string(out), err
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
