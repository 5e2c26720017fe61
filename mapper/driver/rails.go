package driver

import (
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/nodemap"
)

// Ring sizes of the Driver's links: mapper traffic is a few frames per
// host and verification interval, so small per-frame (TPACKET_V2) rings
// do, and need no start-up self-test.
const (
	mapperRxBlocks = 16 // x 128 KiB: 2 MiB, about 1,000 frames at MTU 1500
	closedRxBlocks = 2
	// closedMaxSleep caps the closed-ports answerer's sleeps in Wait
	// (link.Config.MaxSleep): it sleeps until a frame arrives, and the
	// default cap would wake every idle gm_mapper 10 times a second.
	closedMaxSleep = 2 * time.Second
	txFrames       = 8 // the Driver sends with Send, not the TX ring
)

// linkConfig returns the link configuration for the given port mask.
func (d *Driver) linkConfig(ports link.PortMask, blocks int) *link.Config {
	return &link.Config{
		EtherType: d.cfg.EtherType,
		Ports:     ports,
		SpinTime:  -1, // a daemon sleeps
		V2:        true,
		RxBlocks:  blocks,
		TxFrames:  txFrames,
		Auth:      d.cfg.Auth,
	}
}

// Prober is how a Driver looks at its interfaces.
type Prober interface {
	// State returns the interface's index (0 if it does not exist) and
	// whether it is up and running (IFF_UP, IFF_RUNNING). The Driver
	// calls it for every interface every PollInterval.
	State(name string) (ifindex int, up, running bool)
	// Addr returns the interface's MAC address and MTU. The Driver calls
	// it at start and when an interface's index changed.
	Addr(name string) (mac net.HardwareAddr, mtu int, err error)
}

// ifProbe is the kernel's Prober: two ioctls on a socket of the network
// namespace New ran in (no netlink dump, nothing allocated).
type ifProbe struct{ fd int }

func openIfProbe() (*ifProbe, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket for interface state: %w", err)
	}
	return &ifProbe{fd: fd}, nil
}

func (p *ifProbe) Addr(name string) (net.HardwareAddr, int, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, 0, err
	}
	return ifi.HardwareAddr, ifi.MTU, nil
}

func (p *ifProbe) close() {
	if p.fd > 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}

// state returns the interface's index (0 if it does not exist) and
// whether it is up and running (IFF_UP, IFF_RUNNING).
func (p *ifProbe) State(name string) (ifindex int, up, running bool) {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, false, false
	}
	if rawIoctlIfreq(p.fd, unix.SIOCGIFINDEX, ifr) != nil {
		return 0, false, false
	}
	ifindex = int(ifr.Uint32())
	if rawIoctlIfreq(p.fd, unix.SIOCGIFFLAGS, ifr) != nil {
		return 0, false, false
	}
	f := ifr.Uint16()
	return ifindex, f&unix.IFF_UP != 0, f&unix.IFF_RUNNING != 0
}

// rawIoctlIfreq is unix.IoctlIfreq without telling the Go scheduler: a
// system call made the usual way wakes the runtime's sysmon thread from
// its deep sleep, and it then polls every 20 µs for a millisecond and
// longer, at every wake-up of an idle gm_mapper (hundreds of them share a
// machine in the scale test). These ioctls never block.
func rawIoctlIfreq(fd int, req uint, ifr *unix.Ifreq) error {
	// An Ifreq is its C struct ifreq (unix.IoctlIfreq passes the same).
	if _, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(ifr))); e != 0 {
		return e
	}
	return nil
}

// pollInterfaces looks at every interface of the unit: present (with the
// same ifindex and MAC), up and running. It opens the mapper link of an
// interface that is up, closes the links of one that disappeared or was
// replaced, and tells the core about every change of a rail's state. The
// core starts with every rail up, so the first poll reports only rails that
// are down.
func (d *Driver) pollInterfaces(now mapper.Time, first bool) {
	for i, r := range d.rails {
		ifindex, up, running := d.probe.State(r.name)
		usable := false
		switch {
		case ifindex == 0:
			if r.ifindex != 0 || first {
				d.log.Warn("interface gone", "interface", r.name, "rail", i)
			}
			r.closeLinks()
			r.ifindex = 0
		case ifindex != r.ifindex && !d.sameMAC(i, r):
			r.closeLinks()
			r.ifindex = -1 // looked at again next time
		default:
			if r.ifindex > 0 && ifindex != r.ifindex {
				d.log.Warn("interface replaced", "interface", r.name, "rail", i, "ifindex", ifindex)
				r.closeLinks()
			}
			r.ifindex = ifindex
			if r.lk == nil && up {
				lk, err := d.cfg.OpenLink(r.name, d.linkConfig(1<<MapperPort, mapperRxBlocks))
				if err != nil {
					d.log.Warn("opening the interface", "interface", r.name, "rail", i, "err", err)
				} else {
					r.lk, r.mtu = lk, lk.MTU()
					r.drops, r.readAt = 0, now
					d.log.Debug("link open", "interface", r.name, "rail", i, "mode", lk.Stats().Mode)
				}
			}
			usable = r.lk != nil && up && running
		}
		if usable != r.up {
			r.up = usable
			d.core.SetRailUp(i, usable, now)
			if usable {
				d.log.Info("rail up", "interface", r.name, "rail", i)
			} else {
				d.log.Warn("rail down", "interface", r.name, "rail", i)
			}
		}
	}
}

// sameMAC reports whether rail i's interface (new, or with a new ifindex)
// still has the MAC address the core knows; it logs when not.
func (d *Driver) sameMAC(i int, r *rail) bool {
	mac, _, err := d.probe.Addr(r.name)
	if err != nil {
		return false
	}
	if len(mac) == 6 && nodemap.MAC(mac) == r.mac {
		return true
	}
	if r.ifindex != -1 {
		d.log.Error("interface changed its MAC address; restart gm_mapper to use it",
			"interface", r.name, "rail", i, "was", nodemap.FormatMAC(r.mac), "now", mac.String())
	}
	return false
}

// closeLinks closes the rail's links.
func (r *rail) closeLinks() {
	if r.lk != nil {
		r.lk.Close()
		r.lk = nil
	}
	r.closeClosed()
}

func (r *rail) closeClosed() {
	if r.closed != nil {
		r.closed.Close()
		<-r.answerer.done
		r.closed, r.answerer = nil, nil
		r.mask = 0
	}
}
