package mapper

import (
	"github.com/ethergm/ethergm/nodemap"
)

// State is what a mapper persists across restarts (GM-1's hosts file plus
// the last map version): every host ever mapped with its node id, and the
// highest map version used or seen.
type State struct {
	// LastVersion is the highest map version this host used or installed.
	LastVersion uint32
	// Hosts is the hosts table in node id order.
	Hosts []HostRecord
}

// HostRecord is one host of the hosts table.
type HostRecord struct {
	// ID is the host's node id, never reused for another host.
	ID nodemap.NodeID
	// Name is the host name.
	Name string
	// UniqueID is the host's unique id (MACs[0]).
	UniqueID nodemap.MAC
	// MACs are the host's interfaces in rail order.
	MACs []nodemap.MAC
	// Absent is true for a host that has left: its id stays reserved.
	Absent bool
}
