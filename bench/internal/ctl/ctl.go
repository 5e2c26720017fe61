// Package ctl holds what the benchmark programs egm-floor, egm-linkperf and
// egm-gmperf share for being driven by egm-bench (bench/internal/runner): a
// stop flag raised by SIGINT or SIGTERM, and the "ready" line a driver
// waits for before it starts the client. It uses nothing of EtherGM, so
// that egm-floor stays independent of the code it is the floor for.
package ctl

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// ReadyLine is what Ready prints on standard error.
const ReadyLine = "ready"

// StopFlag returns a flag that SIGINT or SIGTERM raises. The program's
// loops poll it and finish cleanly (servers print their counts then).
func StopFlag() *atomic.Bool {
	var stop atomic.Bool
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-c
		stop.Store(true)
	}()
	return &stop
}

// Ready tells the driver that the program listens: it prints ReadyLine on
// standard error.
func Ready() { fmt.Fprintln(os.Stderr, ReadyLine) }

// Idle tells a receiver's polling loop when to end: once the stop flag is
// raised, or once no frame came for a while: the timeout before the first
// frame (an error: nothing arrived), a second after it (the stream ended
// without its end marker). It looks at the clock only every 4096th empty
// poll, or at every one with Every1.
type Idle struct {
	stop    *atomic.Bool
	timeout time.Duration
	last    time.Time
	spins   uint32
	mask    uint32
	frames  bool
	Err     error // set when the loop ended because no frame came
}

// NewIdle returns an Idle for a loop stopped by stop that waits up to
// timeout for the first frame. every1 makes it check at every empty poll
// (a loop that sleeps in the kernel between them).
func NewIdle(stop *atomic.Bool, timeout time.Duration, every1 bool) *Idle {
	w := &Idle{stop: stop, timeout: timeout, last: time.Now(), mask: 4095}
	if every1 {
		w.mask = 0
	}
	return w
}

// Seen notes frames received at now.
func (w *Idle) Seen(now time.Time) {
	w.last = now
	if !w.frames {
		w.frames = true
		w.timeout = time.Second
	}
}

// Over is called after an empty poll: it reports whether the loop should
// end. Err then says why, if no frame ever came.
func (w *Idle) Over() bool {
	w.spins++
	if w.spins&w.mask != 0 { // the fast path, inlined
		return false
	}
	return w.check()
}

func (w *Idle) check() bool {
	if w.stop.Load() {
		return true
	}
	if time.Since(w.last) <= w.timeout {
		return false
	}
	if !w.frames {
		w.Err = fmt.Errorf("no frame within %v", w.timeout)
	}
	return true
}

// Resender tells a ping-pong client when to send its request again: once
// no reply came within the resend period, until the timeout has passed
// since the first send. Stop ends the wait too.
type Resender struct {
	stop     *atomic.Bool
	timeout  time.Duration
	first    time.Time
	last     time.Time
	period   time.Duration
	Retried  bool // this request was sent again
	Requests int  // every request sent again, over the run
}

// NewResender returns a Resender stopped by stop that gives up timeout
// past a request's last resend period.
func NewResender(stop *atomic.Bool, timeout time.Duration) *Resender {
	return &Resender{stop: stop, timeout: timeout}
}

// Sent notes that a new request went out at t0, to be sent again after
// period without a reply.
func (r *Resender) Sent(t0 time.Time, period time.Duration) {
	r.first, r.last, r.period, r.Retried = t0, t0, period, false
}

// Due reports whether the request should be sent again now (and counts it
// as sent); it fails if the run was stopped or the wait timed out.
func (r *Resender) Due() (bool, error) {
	if r.stop.Load() {
		return false, errors.New("interrupted")
	}
	if time.Since(r.last) < r.period {
		return false, nil
	}
	if waited := time.Since(r.first); waited > r.timeout+r.period {
		return false, fmt.Errorf("no reply after %v", waited.Round(time.Millisecond))
	}
	r.Retried = true
	r.Requests++
	r.last = time.Now()
	return true, nil
}

// ResendPeriod is how long a ping-pong client waits for the reply to round
// trip i (counted from 0) before it sends the request again: 200 ms in the
// first warmup round trips, while the server may not be up yet, then
// timeout.
func ResendPeriod(i, warmup int, timeout time.Duration) time.Duration {
	if i < warmup {
		return 200 * time.Millisecond
	}
	return timeout
}

// Resend sends req again with send if it is due (see Due).
func (r *Resender) Resend(send func([]byte) error, req []byte) error {
	due, err := r.Due()
	if !due || err != nil {
		return err
	}
	if err := send(req); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// Run holds the options that every benchmark program takes: its role and
// the length of its run.
type Run struct {
	Server, Client bool
	N, Warmup      int           // measured and warm-up round trips
	Duration       time.Duration // a stream's length (sender)
	Timeout        time.Duration // give up after this long without progress
}

// Flags registers the options of r on the default flag set.
func (r *Run) Flags() {
	flag.BoolVar(&r.Server, "server", false, "run the echo server (ping-pong) or the receiver (stream)")
	flag.BoolVar(&r.Client, "client", false, "run the ping-pong client or the stream sender")
	flag.IntVar(&r.N, "n", 20000, "measured round trips")
	flag.IntVar(&r.Warmup, "warmup", 2000, "warm-up round trips (not measured)")
	flag.DurationVar(&r.Duration, "d", 3*time.Second, "stream duration (sender)")
	flag.DurationVar(&r.Timeout, "timeout", 10*time.Second, "give up after this long without progress")
}

// Role fails unless exactly one of -server and -client was given.
func (r *Run) Role() error {
	if r.Server == r.Client {
		return errors.New("give exactly one of -server and -client")
	}
	return nil
}

// Mode is one -mode of a benchmark program whose options are an O: Check,
// if set, checks the options and fills in the mode's defaults; Server and
// Client run the two roles.
type Mode[O any] struct {
	Name           string
	Check          func(o *O) error
	Server, Client func(o *O) error
}

// Dispatch runs the mode of modes named name with options o: its Check,
// then its Server if server is set, else its Client.
func Dispatch[O any](modes []Mode[O], name string, server bool, o *O) error {
	for _, m := range modes {
		if m.Name != name {
			continue
		}
		if m.Check != nil {
			if err := m.Check(o); err != nil {
				return err
			}
		}
		if server {
			return m.Server(o)
		}
		return m.Client(o)
	}
	return fmt.Errorf("unknown -mode %q", name)
}

// Ether holds the options of the programs that send raw frames: the
// interface and the peer's MAC address.
type Ether struct {
	Iface string
	Peer  [6]byte // from -peer, after ParsePeer
	peer  string
}

// Flags registers the options of e on the default flag set.
func (e *Ether) Flags() {
	flag.StringVar(&e.Iface, "i", "eth0", "interface")
	flag.StringVar(&e.peer, "peer", "ff:ff:ff:ff:ff:ff", "destination MAC address (client)")
}

// ParsePeer sets Peer from -peer.
func (e *Ether) ParsePeer() error {
	mac, err := net.ParseMAC(e.peer)
	if err != nil || len(mac) != 6 {
		return fmt.Errorf("bad -peer %q", e.peer)
	}
	e.Peer = [6]byte(mac)
	return nil
}

// Deadline ends a sender's loop once its duration has passed or the stop
// flag is raised. It looks at the clock every 16th call only.
type Deadline struct {
	Start time.Time // when the loop started
	end   time.Time
	stop  *atomic.Bool
	n     uint32
}

// NewDeadline returns a Deadline d from now, stopped early by stop.
func NewDeadline(stop *atomic.Bool, d time.Duration) *Deadline {
	now := time.Now()
	return &Deadline{Start: now, end: now.Add(d), stop: stop}
}

// Done reports whether the loop should end.
func (t *Deadline) Done() bool {
	t.n++
	if (t.n-1)&15 != 0 { // the fast path, inlined
		return false
	}
	return t.over()
}

func (t *Deadline) over() bool { return time.Now().After(t.end) || t.stop.Load() }
