package netns

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// netnsRunDir is where "ip netns" keeps its namespace files.
const netnsRunDir = "/run/netns"

// doResult carries the outcome of fn from the namespace goroutine.
type doResult struct {
	err      error
	panicked bool
	value    any
	goexit   bool
}

// doInNS runs fn on a fresh goroutine locked to an OS thread that has
// entered namespace name, re-raising a panic or Goexit of fn in the caller.
func doInNS(name string, fn func() error) error {
	target, err := unix.Open(filepath.Join(netnsRunDir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", name, err)
	}
	defer unix.Close(target)

	resc := make(chan doResult, 1)
	go func() {
		var res doResult
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			resc <- doResult{err: fmt.Errorf("open own namespace: %w", err)}
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			resc <- doResult{err: fmt.Errorf("setns %s: %w", name, err)}
			return
		}
		res.goexit = true // cleared if fn returns or panics
		defer func() {
			if res.goexit {
				if v := recover(); v != nil {
					res.goexit, res.panicked, res.value = false, true, v
				}
			}
			if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
				// Leave the thread locked: it exits with this goroutine
				// instead of serving others in the wrong namespace.
				res.err = errors.Join(res.err, fmt.Errorf("restore namespace: %w", err))
			} else {
				runtime.UnlockOSThread()
			}
			resc <- res
		}()
		res.err = fn()
		res.goexit = false
	}()
	res := <-resc
	switch {
	case res.panicked:
		panic(res.value)
	case res.goexit:
		runtime.Goexit()
	}
	return res.err
}

// procAttr returns the attributes of processes started by Host.Start: a
// process group of their own (so signals reach a daemon's children) and
// SIGKILL if this process dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killPid sends SIGKILL to pid.
func killPid(pid int) { unix.Kill(pid, unix.SIGKILL) }

// signalGroup sends sig to the process group pgid.
func signalGroup(pgid int, sig syscall.Signal) { unix.Kill(-pgid, sig) }

// Legacy ethtool ioctl commands (linux/ethtool.h).
const (
	ethtoolSTXCSUM = 0x17 // set TX checksum offload
	ethtoolSSG     = 0x19 // set scatter-gather
	ethtoolSTSO    = 0x1f // set TCP segmentation offload
	ethtoolSGSO    = 0x24 // set generic segmentation offload
	ethtoolSGRO    = 0x2c // set generic receive offload
)

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq with ifr_data.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// disableOffloads turns off checksum offload, segmentation and GRO on
// ifname in the current thread's namespace, so that frames copied by a
// packet socket are complete and valid on the wire.
func disableOffloads(ifname string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	for _, cmd := range []uint32{ethtoolSGRO, ethtoolSGSO, ethtoolSTSO, ethtoolSTXCSUM, ethtoolSSG} {
		v := ethtoolValue{cmd: cmd, data: 0}
		var ifr ifreqData
		copy(ifr.name[:], ifname)
		ifr.data = unsafe.Pointer(&v)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
		runtime.KeepAlive(&v)
		if errno != 0 && errno != unix.EOPNOTSUPP {
			return fmt.Errorf("ethtool %#x %s: %w", cmd, ifname, errno)
		}
	}
	return nil
}
