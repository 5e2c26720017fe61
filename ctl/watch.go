package ctl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// WatchName is the abstract socket name on which the gm_mapper of unit
// watches the unit's ports: every open port holds a connection to it for
// as long as it is open, so that the mapper learns that a port closed, or
// that its process died, when the kernel ends the connection, not at its
// next look at the socket list (PortList).
func WatchName(unit string) string {
	return fmt.Sprintf("%s%s/mapper-watch", Prefix, unit)
}

// The watch protocol: a port sends one byte, its port number, and then
// only reads; the mapper sends 4-byte messages (big-endian), each the set
// of the unit's ports (bit p) it knows closed by their connection's end
// and not open again since: ports whose name another port may still see
// in the socket list for a moment after their process died.

// Watch is the mapper's side: it accepts the ports' connections and keeps
// count of them.
type Watch struct {
	ln     *net.UnixListener
	notify func()

	mu        sync.Mutex
	conns     map[*net.UnixConn]int // port of each registered connection
	count     [wire.NumPorts]int    // registered connections per port
	ended     uint32                // ports whose last connection ended since the last Take
	opens     uint64
	closes    uint64
	published uint32
	wg        sync.WaitGroup
	closed    bool
}

// ListenWatch takes WatchName(unit). notify, if not nil, is called (from
// a goroutine of the Watch, without locks held) after a port registered
// or its connection ended; it must not block. ListenWatch fails with an
// error wrapping ErrInUse if another process holds the name.
func ListenWatch(unit string, notify func()) (*Watch, error) {
	name := WatchName(unit)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: "@" + name, Net: "unix"})
	if err != nil {
		if isAddrInUse(err) {
			return nil, fmt.Errorf("%w: %s: %w", ErrInUse, name, err)
		}
		return nil, err
	}
	if notify == nil {
		notify = func() {}
	}
	w := &Watch{ln: ln, notify: notify, conns: make(map[*net.UnixConn]int)}
	w.wg.Add(1)
	go w.accept()
	return w, nil
}

func (w *Watch) accept() {
	defer w.wg.Done()
	for {
		c, err := w.ln.AcceptUnix()
		if err != nil {
			return // closed
		}
		w.wg.Add(1)
		go w.serve(c)
	}
}

// serve reads the port's number, registers it and waits for the end of the
// connection.
func (w *Watch) serve(c *net.UnixConn) {
	defer w.wg.Done()
	var b [1]byte
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(b[:]); err != nil || int(b[0]) >= wire.NumPorts {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	port := int(b[0])
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		c.Close()
		return
	}
	w.conns[c] = port
	w.count[port]++
	w.opens++
	// The port learns the mapper's view at once.
	writeMask(c, w.published)
	w.mu.Unlock()
	w.notify()

	for {
		if _, err := c.Read(b[:]); err != nil {
			break // the port closed, or its process died
		}
	}
	w.mu.Lock()
	if _, ok := w.conns[c]; ok {
		delete(w.conns, c)
		if w.count[port]--; w.count[port] == 0 {
			w.ended |= 1 << port
		}
		w.closes++
	}
	w.mu.Unlock()
	c.Close()
	w.notify()
}

// Take returns the ports that hold a connection now, and the ports whose
// last connection ended since the last Take (a port may be in both: it
// closed and opened again).
func (w *Watch) Take() (connected, ended uint32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, n := range w.count {
		if n > 0 {
			connected |= 1 << p
		}
	}
	ended, w.ended = w.ended, 0
	return connected, ended
}

// Counts returns how many registrations and ends of connections the Watch
// has seen.
func (w *Watch) Counts() (opens, closes uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opens, w.closes
}

// Publish tells every connected port the set of ports (bit p) known
// closed by the end of their connection, if it changed.
func (w *Watch) Publish(gone uint32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gone == w.published {
		return
	}
	w.published = gone
	for c := range w.conns {
		writeMask(c, gone)
	}
}

// writeMask sends one message; a port that does not read it within the
// deadline (its process stopped) misses it and its connection is left to
// end.
func writeMask(c *net.UnixConn, m uint32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], m)
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	c.Write(b[:])
}

// Close releases the name, ends every connection and waits for the
// Watch's goroutines.
func (w *Watch) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	err := w.ln.Close()
	for c := range w.conns {
		c.Close()
	}
	w.mu.Unlock()
	w.wg.Wait()
	return err
}

// WatchConn is a port's side: its connection to the mapper's Watch.
type WatchConn struct {
	c    *net.UnixConn
	gone atomic.Uint32
	done atomic.Bool
	wg   sync.WaitGroup
}

// DialWatch registers port of unit with the unit's gm_mapper and holds the
// connection until Close (or the end of the process). changed, if not nil,
// is called from the connection's goroutine after each message of the
// mapper, and when the mapper goes away; it must not block. DialWatch
// fails with an error wrapping ErrNotFound when no gm_mapper of the unit
// runs in the network namespace.
func DialWatch(unit string, port int, changed func()) (*WatchConn, error) {
	if port < 0 || port >= wire.NumPorts {
		return nil, fmt.Errorf("ctl: no port %d", port)
	}
	name := WatchName(unit)
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: "@" + name, Net: "unix"})
	if err != nil {
		if isRefused(err) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
		}
		return nil, err
	}
	if _, err := c.Write([]byte{byte(port)}); err != nil {
		c.Close()
		return nil, err
	}
	if changed == nil {
		changed = func() {}
	}
	wc := &WatchConn{c: c}
	wc.wg.Add(1)
	go wc.read(changed)
	return wc, nil
}

func (wc *WatchConn) read(changed func()) {
	defer wc.wg.Done()
	var b [4]byte
	for {
		if _, err := readFull(wc.c, b[:]); err != nil {
			wc.gone.Store(0)
			wc.done.Store(true)
			changed()
			return
		}
		wc.gone.Store(binary.BigEndian.Uint32(b[:]))
		changed()
	}
}

func readFull(c *net.UnixConn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, errors.New("short read")
		}
	}
	return n, nil
}

// Gone returns the ports the mapper last said are closed by the end of
// their connection (0 once the mapper went away).
func (wc *WatchConn) Gone() uint32 { return wc.gone.Load() }

// Done reports whether the connection ended (the mapper went away, or
// Close): a port dials again later.
func (wc *WatchConn) Done() bool { return wc.done.Load() }

// Close ends the registration and waits for the connection's goroutine.
func (wc *WatchConn) Close() error {
	err := wc.c.Close()
	wc.wg.Wait()
	return err
}
