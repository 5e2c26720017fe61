package gm

import "github.com/ethergm/ethergm/nodemap"

// NodeID is a GM node id: the stable, network-wide id a node map assigns
// to a host (GM-1 semantics). NoSuchNodeID (0) is never a valid id.
type NodeID = nodemap.NodeID

// NoSuchNodeID is GM_NO_SUCH_NODE_ID, returned by lookups that fail.
const NoSuchNodeID = nodemap.NoSuchNodeID

// MaxNodeID is the largest node id a map may assign.
const MaxNodeID = nodemap.MaxNodeID

// MaxHostNameLen is GM_MAX_HOST_NAME_LEN.
const MaxHostNameLen = nodemap.MaxHostNameLen

// MapEntry is one host of a node map.
type MapEntry = nodemap.Entry

// NodeMap is a node map (package nodemap): the hosts, their node ids and
// MACs, the map version and mapper, and this host's routes. The nil
// *NodeMap is an empty map.
type NodeMap = nodemap.Map

// ParseNodeMap parses a node map file (see package nodemap).
func ParseNodeMap(data []byte) (*NodeMap, error) { return nodemap.Parse(data) }

// NewNodeMap builds a static map (no version, mapper or routes) from
// entries, for programs that write map files by hand, such as tests.
func NewNodeMap(entries []MapEntry) (*NodeMap, error) {
	return nodemap.New(0, [6]byte{}, entries, nil)
}
