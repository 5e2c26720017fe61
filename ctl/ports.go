package ctl

import (
	"bytes"
	"io"
	"os"

	"github.com/ethergm/ethergm/wire"
)

// PortList lists the open ports of one unit: the ports whose abstract
// socket (PortName) is listening in the network namespace. One read of
// the namespace's socket list (/proc/net/unix) answers for every port, and
// no port's process is asked (as connecting to each port's name would).
//
// The list is /proc/thread-self/net/unix opened by the thread that calls
// OpenPortList, so that later reads, from any thread, list that thread's
// network namespace (/proc/net is the main thread's). A PortList is not
// safe for concurrent use.
type PortList struct {
	f      *os.File
	prefix []byte // "@ethergm/<unit>/port": the ports' socket names without the number
	buf    []byte
}

// OpenPortList opens the socket list of the calling thread's network
// namespace for the ports of unit.
func OpenPortList(unit string) (*PortList, error) {
	f, err := os.Open("/proc/thread-self/net/unix")
	if err != nil {
		return nil, err
	}
	p0 := PortName(unit, 0)
	return &PortList{f: f, prefix: []byte("@" + p0[:len(p0)-1])}, nil
}

// Ports returns the unit's open ports (bit p for port p). It allocates
// nothing once its buffer has grown to the list's size.
func (l *PortList) Ports() (uint32, error) {
	if len(l.buf) == 0 {
		l.buf = make([]byte, 64<<10)
	}
	n := 0
	for {
		m, err := l.f.ReadAt(l.buf[n:], int64(n))
		n += m
		if err == io.EOF || err == nil && m == 0 {
			break
		}
		if err != nil {
			return 0, err
		}
		if n == len(l.buf) {
			l.buf = append(l.buf, make([]byte, len(l.buf))...)
		}
	}
	return parsePorts(l.buf[:n], l.prefix), nil
}

// Close closes the list.
func (l *PortList) Close() error { return l.f.Close() }

// soAcceptCon is __SO_ACCEPTCON (linux/net.h), the bit of the Flags
// column of /proc/net/unix that marks a listening socket.
const soAcceptCon = 0x10000

// parsePorts returns the ports (bit p set) that have a listening socket
// named prefix+p in list, the text of /proc/net/unix:
//
//	Num       RefCount Protocol Flags    Type St Inode Path
//	0000000000000000: 00000002 00000000 00010000 0001 01 4242 @ethergm/eth0/port2
func parsePorts(list, prefix []byte) uint32 {
	var m uint32
	for len(list) > 0 {
		line := list
		if i := bytes.IndexByte(list, '\n'); i >= 0 {
			line, list = list[:i], list[i+1:]
		} else {
			list = nil
		}
		path, ok := field(line, 7)
		if !ok || !bytes.HasPrefix(path, prefix) {
			continue
		}
		port, ok := atoiPort(path[len(prefix):])
		if !ok {
			continue
		}
		if flags, ok := field(line, 3); ok && hexValue(flags)&soAcceptCon != 0 {
			m |= 1 << port
		}
	}
	return m
}

// atoiPort parses a port number 0..wire.NumPorts-1 that is all of b.
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
	if n >= wire.NumPorts || (len(b) == 2 && b[0] == '0') {
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
