package driver

import (
	"net"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/nodemap"
)

// Ring sizes of the Driver's links: mapper traffic is a few frames per
// host and verification interval, so small per-frame (TPACKET_V2) rings
// do, and need no start-up self-test.
const (
	mapperRxBlocks = 8 // x 128 KiB: 1 MiB, about 500 frames at MTU 1500
	closedRxBlocks = 2
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
		Tap:       d.cfg.Tap,
	}
}

// pollInterfaces looks at every interface of the unit: present (with the
// same ifindex and MAC), up and running. It opens the mapper link of an
// interface that is up, closes the links of one that disappeared or was
// replaced, and tells the core about every change of a rail's state. The
// core starts with every rail up, so the first poll reports only rails that
// are down.
func (d *Driver) pollInterfaces(now mapper.Time, first bool) {
	for i, r := range d.rails {
		ifi, err := net.InterfaceByName(r.name)
		usable := false
		switch {
		case err != nil:
			if r.ifindex != 0 || first {
				d.log.Warn("interface gone", "interface", r.name, "rail", i)
			}
			r.closeLinks()
			r.ifindex = 0
		case len(ifi.HardwareAddr) != 6 || nodemap.MAC(ifi.HardwareAddr) != r.mac:
			if r.lk != nil || r.ifindex != -1 {
				d.log.Error("interface changed its MAC address; restart gm_mapper to use it",
					"interface", r.name, "rail", i, "was", nodemap.FormatMAC(r.mac), "now", ifi.HardwareAddr.String())
			}
			r.closeLinks()
			r.ifindex = -1
		default:
			if r.ifindex > 0 && ifi.Index != r.ifindex {
				d.log.Warn("interface replaced", "interface", r.name, "rail", i, "ifindex", ifi.Index)
				r.closeLinks()
			}
			r.ifindex = ifi.Index
			if r.lk == nil && ifi.Flags&net.FlagUp != 0 {
				lk, err := link.Open(r.name, d.linkConfig(1<<MapperPort, mapperRxBlocks))
				if err != nil {
					d.log.Warn("opening the interface", "interface", r.name, "rail", i, "err", err)
				} else {
					r.lk, r.mtu = lk, lk.MTU()
					d.log.Debug("link open", "interface", r.name, "rail", i, "mode", lk.Mode())
				}
			}
			usable = r.lk != nil && ifi.Flags&net.FlagUp != 0 && ifi.Flags&net.FlagRunning != 0
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
		r.closed = nil
		r.mask = 0
	}
}
