package gm

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// portLocks holds the lock files of one unit's ports. A port is open on
// this host exactly while some open file description holds an
// open-file-description (OFD) write lock on its file; the lock goes away
// with the process, so a crashed process never leaves a port busy. OFD
// locks (rather than flock) let other ports test a file without taking
// its lock (F_OFD_GETLK), which they do to answer frames for closed ports.
type portLocks struct {
	files [16]*os.File
	mine  int
}

func lockPath(dir, unit string, port int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.port%d.lock", unit, port))
}

func openLocks(dir, unit string, port int) (*portLocks, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: state directory: %v", UntranslatedSystemError, err)
	}
	l := &portLocks{mine: port}
	for p := range l.files {
		f, err := os.OpenFile(lockPath(dir, unit, p), os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("%w: lock file: %v", UntranslatedSystemError, err)
		}
		l.files[p] = f
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(l.files[port].Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		l.close()
		if err == unix.EAGAIN || err == unix.EACCES {
			return nil, fmt.Errorf("%w: port %d of unit %s is open in another process", Busy, port, unit)
		}
		return nil, fmt.Errorf("%w: lock: %v", UntranslatedSystemError, err)
	}
	return l, nil
}

// openMask returns the set of ports open on this unit (bit p set).
func (l *portLocks) openMask() uint32 {
	var m uint32
	for p, f := range l.files {
		if p == l.mine {
			m |= 1 << p
			continue
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK}
		if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err == nil && lk.Type != unix.F_UNLCK {
			m |= 1 << p
		}
	}
	return m
}

// isOpen reports whether port p of the unit is open now (one fcntl).
func (l *portLocks) isOpen(p int) bool {
	if p == l.mine {
		return true
	}
	f := l.files[p]
	if f == nil {
		return false
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	return unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk) == nil && lk.Type != unix.F_UNLCK
}

func (l *portLocks) close() {
	for i, f := range l.files {
		if f != nil {
			f.Close()
			l.files[i] = nil
		}
	}
}
