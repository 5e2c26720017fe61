package gm

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/ctl"
)

// portOwner makes a port exclusive: while a port is open, its process
// holds the abstract Unix socket ctl.PortName(unit, id) of its network
// namespace and answers tools' queries on it (PortInfo). The kernel frees
// the name when the process dies, and the name belongs to the network
// namespace, not to a directory: a port is exclusive per (network
// namespace, unit, port), whatever state directory or user a process has,
// and nothing is written to the file system.
//
// The same names tell which ports of the unit are open (openMask): the
// listening sockets of the namespace (ctl.PortList), opened from the
// thread that opens the port, so that later reads see that thread's
// namespace whatever thread reads.
//
// While the unit's gm_mapper runs, the owner also holds a connection to
// it (ctl.DialWatch): the mapper learns at once that the port closed or
// its process died, and tells the other ports, whose next look at the
// open ports (changed) comes at once instead of at the next MapPoll. The
// ports the mapper says are gone count as closed even while the dying
// process's name still lingers in the socket list.
type portOwner struct {
	srv  *ctl.Server
	unit string
	mine int

	changed atomic.Bool // the mapper said something: look at the open ports now

	mu    sync.Mutex // guards ports, last, mask and watch
	ports *ctl.PortList
	last  time.Time // when openMask last read ports
	mask  uint32    // what it found
	watch *ctl.WatchConn
}

// claimRetries bounds how often claimPort retries a name whose holder
// vanished between the failed Listen and the query of the holder.
const claimRetries = 3

// claimPort takes port id of unit for this process and serves info to
// the tools. It fails with Busy, naming the process that holds the port.
func claimPort(unit string, id int, info func() any) (*portOwner, error) {
	name := ctl.PortName(unit, id)
	o := &portOwner{mine: id}
	for try := 0; ; try++ {
		srv, err := ctl.Listen(name, info)
		if err == nil {
			o.srv = srv
			break
		}
		if !errors.Is(err, ctl.ErrInUse) {
			return nil, fmt.Errorf("%w: cannot take port %d of unit %s: %w", UntranslatedSystemError, id, unit, err)
		}
		var pi PortInfo
		pid, qerr := ctl.Query(name, &pi)
		if errors.Is(qerr, ctl.ErrNotFound) && try < claimRetries {
			continue // the holder has just gone
		}
		return nil, busyError(unit, id, pid, &pi, err)
	}
	o.unit = unit
	if l, err := ctl.OpenPortList(unit); err == nil {
		o.ports = l
	}
	o.keepWatch()
	return o, nil
}

// keepWatch connects the port to the unit's gm_mapper if it is not (the
// mapper may start after the port, or restart). It costs one failed
// connect while no mapper runs.
func (o *portOwner) keepWatch() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ports == nil || o.watch != nil && !o.watch.Done() {
		return // released, or connected
	}
	if o.watch != nil {
		o.watch.Close()
		o.watch = nil
	}
	if wc, err := ctl.DialWatch(o.unit, o.mine, func() { o.changed.Store(true) }); err == nil {
		o.watch = wc
	}
}

// takeChanged reports whether the mapper said something since the last
// call.
func (o *portOwner) takeChanged() bool {
	return o != nil && o.changed.Load() && o.changed.Swap(false)
}

// busyError says which process holds port id of unit (pid 0: unknown).
func busyError(unit string, id, pid int, pi *PortInfo, cause error) error {
	who := "another process"
	if pid > 0 {
		who = fmt.Sprintf("process %d", pid)
		switch {
		case pi.Program != "" && pi.Name != "":
			who += fmt.Sprintf(" (%s, port name %q)", pi.Program, pi.Name)
		case pi.Program != "":
			who += " (" + pi.Program + ")"
		}
	}
	return &statusError{st: Busy, msg: fmt.Sprintf("port %d of unit %s is open in %s", id, unit, who), cause: cause}
}

// maskUnknown is openMask's answer when the namespace's sockets cannot be
// listed: every port counts as open, so that no frame is answered with
// "port closed" on a guess.
const maskUnknown = 1<<NumPorts - 1

// openMask returns the set of ports of the unit open in this network
// namespace (bit p set), reading the namespace's socket list at most once
// per minAge (an older answer is reused). It allocates nothing once its
// buffer has grown to the list's size.
func (o *portOwner) openMask(minAge time.Duration) uint32 {
	if o == nil {
		return maskUnknown
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ports == nil {
		return maskUnknown
	}
	now := time.Now()
	if minAge > 0 && now.Sub(o.last) < minAge {
		return o.mask
	}
	m, err := o.ports.Ports()
	if err != nil {
		return maskUnknown
	}
	if o.watch != nil {
		m &^= o.watch.Gone()
	}
	o.last = now
	o.mask = 1<<o.mine | m
	return o.mask
}

// release gives the port up.
func (o *portOwner) release() {
	if o == nil {
		return
	}
	if o.srv != nil {
		o.srv.Close()
	}
	o.mu.Lock()
	if o.ports != nil {
		o.ports.Close()
		o.ports = nil
	}
	if o.watch != nil {
		o.watch.Close()
		o.watch = nil
	}
	o.mu.Unlock()
}
