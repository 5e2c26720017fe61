package netns

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultStopGrace is how long [Proc.Stop] waits after SIGTERM before it
// sends SIGKILL, unless Proc.StopGrace says otherwise.
const DefaultStopGrace = 3 * time.Second

// maxOutput caps the output a Proc keeps (the tail is dropped).
const maxOutput = 16 << 20

// ErrKilled is wrapped by [Proc.Stop]'s error when the process did not exit
// within the grace period after SIGTERM and was killed.
var ErrKilled = errors.New("did not exit after SIGTERM, killed")

// Proc is a background process started by [Host.Start]. It runs in its own
// process group; signals go to the whole group. Its methods are safe for
// concurrent use.
type Proc struct {
	// Host is the host the process runs on.
	Host *Host
	// Args is the command line (without the "ip netns exec" prefix).
	Args []string
	// StopGrace, if positive, replaces DefaultStopGrace for Stop. Set it
	// before calling Stop.
	StopGrace time.Duration

	pid     int
	out     outputBuffer
	done    chan struct{} // closed when the process has exited and been reaped
	waitErr error         // valid after done is closed
	termed  atomic.Bool   // Stop or Kill has signalled the process
}

// Start starts name with args in the background inside the host's
// namespace. Its standard output and standard error are kept (see
// [Proc.Output]). Stop it with [Proc.Stop]; [Cluster.Close] kills every Proc
// still running.
func (h *Host) Start(name string, args ...string) (*Proc, error) {
	c := h.cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	p := &Proc{Host: h, Args: append([]string{name}, args...), done: make(chan struct{})}
	cmd := h.Command(name, args...)
	cmd.Stdout = &p.out
	cmd.Stderr = &p.out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", h.Name, name, err)
	}
	p.pid = cmd.Process.Pid
	c.procs = append(c.procs, p)
	go func() {
		p.waitErr = cmd.Wait()
		// Reap what is left of the group (children of a daemon).
		signalGroup(p.pid, syscall.SIGKILL)
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id (also its process group id).
func (p *Proc) Pid() int { return p.pid }

// Done returns a channel that is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns its exit error (as
// exec.Cmd.Wait does). It may be called many times.
func (p *Proc) Wait() error {
	<-p.done
	return p.waitErr
}

// Stop sends SIGTERM to the process group and waits for the process; if it
// has not exited after the grace period, Stop sends SIGKILL and returns an
// error wrapping [ErrKilled]. Stop returns nil when the process exited after
// SIGTERM, whatever its status, and the exit error of [Proc.Wait] when it had
// already exited before Stop.
func (p *Proc) Stop() error {
	select {
	case <-p.done:
		if p.termed.Load() {
			return nil
		}
		return p.waitErr
	default:
	}
	p.termed.Store(true)
	signalGroup(p.pid, syscall.SIGTERM)
	grace := p.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	p.kill()
	<-p.done
	return fmt.Errorf("%s: %s: %w", p.Host.Name, p.Args[0], ErrKilled)
}

// Kill sends SIGKILL to the process group and waits for the process. It
// returns nil if the process is gone.
func (p *Proc) Kill() error {
	p.kill()
	<-p.done
	return nil
}

// kill sends SIGKILL to the process group without waiting.
func (p *Proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.termed.Store(true)
	signalGroup(p.pid, syscall.SIGKILL)
}

// Output returns what the process has written to its standard output and
// standard error so far (interleaved as written).
func (p *Proc) Output() string { return p.out.String() }

// String describes the process for log messages.
func (p *Proc) String() string {
	return fmt.Sprintf("%s[%d] %s", p.Host.Name, p.pid, strings.Join(p.Args, " "))
}

// outputBuffer is a bytes.Buffer safe for concurrent writes and reads,
// capped at maxOutput bytes.
type outputBuffer struct {
	mu        sync.Mutex
	b         bytes.Buffer
	truncated bool
}

// Write appends b, or as much of it as fits.
func (o *outputBuffer) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(b)
	if room := maxOutput - o.b.Len(); len(b) > room {
		b = b[:max(room, 0)]
		if !o.truncated {
			o.truncated = true
			defer o.b.WriteString("\n[netns: output truncated]\n")
		}
	}
	o.b.Write(b)
	return n, nil
}

// String returns the output so far.
func (o *outputBuffer) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
