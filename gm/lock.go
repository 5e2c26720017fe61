package gm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
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
// listening sockets of the namespace are listed in its /proc/net/unix,
// which the owner opens once, from the thread that opens the port, so that
// later reads see that thread's namespace whatever thread reads.
type portOwner struct {
	srv  *ctl.Server
	mine int

	prefix []byte // "@ethergm/<unit>/port": the ports' socket names without the number

	mu   sync.Mutex // guards unix, buf, last and mask
	unix *os.File   // /proc/thread-self/net/unix, or nil if it cannot be read
	buf  []byte
	last time.Time // when openMask last read unix
	mask uint32    // what it found
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
	// The name of port 0 without its number is the prefix of every port's.
	p0 := ctl.PortName(unit, 0)
	o.prefix = []byte("@" + p0[:len(p0)-1])
	if f, err := os.Open("/proc/thread-self/net/unix"); err == nil {
		o.unix = f
	}
	return o, nil
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

// Bits of the flags column of /proc/net/unix.
const soAcceptCon = 0x10000 // __SO_ACCEPTCON: a listening socket

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
	if o.unix == nil {
		return maskUnknown
	}
	now := time.Now()
	if minAge > 0 && now.Sub(o.last) < minAge {
		return o.mask
	}
	n, err := o.read()
	if err != nil {
		return maskUnknown
	}
	o.last = now
	o.mask = 1<<o.mine | parseOpenPorts(o.buf[:n], o.prefix)
	return o.mask
}

// read reads the whole socket list into o.buf, growing it as needed.
func (o *portOwner) read() (int, error) {
	if len(o.buf) == 0 {
		o.buf = make([]byte, 64<<10)
	}
	n := 0
	for {
		m, err := o.unix.ReadAt(o.buf[n:], int64(n))
		n += m
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		if n == len(o.buf) {
			o.buf = append(o.buf, make([]byte, len(o.buf))...)
		}
	}
}

// parseOpenPorts returns the ports (bit p set) that have a listening
// socket named prefix+p in list, the text of /proc/net/unix:
//
//	Num       RefCount Protocol Flags    Type St Inode Path
//	0000000000000000: 00000002 00000000 00010000 0001 01 4242 @ethergm/eth0/port2
func parseOpenPorts(list, prefix []byte) uint32 {
	var m uint32
	for len(list) > 0 {
		line := list
		if i := bytes.IndexByte(list, '\n'); i >= 0 {
			line, list = list[:i], list[i+1:]
		} else {
			list = nil
		}
		i := bytes.Index(line, prefix)
		if i < 0 {
			continue
		}
		port, ok := atoiPort(line[i+len(prefix):])
		if !ok {
			continue
		}
		if flags, ok := field(line, 3); ok && hexValue(flags)&soAcceptCon != 0 {
			m |= 1 << port
		}
	}
	return m
}

// atoiPort parses a port number 0..NumPorts-1 that is all of b.
func atoiPort(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 2 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n >= NumPorts || (len(b) == 2 && b[0] == '0') {
		return 0, false
	}
	return n, true
}

// field returns the i-th blank-separated field of line.
func field(line []byte, i int) ([]byte, bool) {
	for {
		line = bytes.TrimLeft(line, " ")
		if len(line) == 0 {
			return nil, false
		}
		end := bytes.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		if i == 0 {
			return line[:end], true
		}
		line = line[end:]
		i--
	}
}

func hexValue(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint64(c-'A'+10)
		default:
			return 0
		}
	}
	return v
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
	if o.unix != nil {
		o.unix.Close()
		o.unix = nil
	}
	o.mu.Unlock()
}
