//go:build cgo

package main

/*
#include "egm.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ethergm/ethergm/gm"
)

//export egm_get_node_id
func egm_get_node_id(c *C.struct_gm_port, n *C.uint) C.gm_status_t {
	id := must(c, "gm_get_node_id").p.NodeID()
	if n == nil {
		return C.GM_INVALID_PARAMETER
	}
	*n = C.uint(id)
	if id == gm.NoSuchNodeID {
		return C.GM_NODE_ID_NOT_YET_SET
	}
	return C.GM_SUCCESS
}

//export egm_node_id_to_global_id
func egm_node_id_to_global_id(c *C.struct_gm_port, n C.uint, g *C.uint) C.gm_status_t {
	v, err := must(c, "gm_node_id_to_global_id").p.NodeIDToGlobalID(gm.NodeID(n))
	if err == nil && g != nil {
		*g = C.uint(v)
	}
	return status(err)
}

//export egm_global_id_to_node_id
func egm_global_id_to_node_id(c *C.struct_gm_port, g C.uint, n *C.uint) C.gm_status_t {
	v, err := must(c, "gm_global_id_to_node_id").p.GlobalIDToNodeID(uint32(g))
	if err == nil && n != nil {
		*n = C.uint(v)
	}
	return status(err)
}

// putString copies s into the C buffer dst of n bytes, NUL-terminated;
// GM_OUTPUT_BUFFER_TOO_SMALL if it does not fit.
func putString(dst *C.char, n int, s string) C.gm_status_t {
	if dst == nil || n <= 0 {
		return C.GM_INVALID_PARAMETER
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(dst)), n)
	if len(s) >= n {
		b[0] = 0
		return C.GM_OUTPUT_BUFFER_TOO_SMALL
	}
	b[copy(b, s)] = 0
	return C.GM_SUCCESS
}

//export egm_get_host_name
func egm_get_host_name(c *C.struct_gm_port, name *C.char, n C.int) C.gm_status_t {
	return putString(name, int(n), must(c, "gm_get_host_name").p.HostName())
}

//export egm_max_node_id
func egm_max_node_id(c *C.struct_gm_port, n *C.uint, inUse C.int) C.gm_status_t {
	cp := must(c, "gm_max_node_id")
	if n == nil {
		return C.GM_INVALID_PARAMETER
	}
	if inUse != 0 {
		*n = C.uint(cp.p.MaxNodeIDInUse())
	} else {
		*n = C.uint(cp.p.MaxNodeID())
	}
	return C.GM_SUCCESS
}

//export egm_host_name_to_node_id
func egm_host_name_to_node_id(c *C.struct_gm_port, name *C.char, n *C.uint) C.gm_status_t {
	cp := must(c, "gm_host_name_to_node_id")
	if name == nil || n == nil {
		return C.GM_INVALID_PARAMETER
	}
	id, err := cp.p.HostNameToNodeID(C.GoString(name))
	*n = C.uint(id)
	if err != nil {
		*n = C.GM_NO_SUCH_NODE_ID
	}
	return status(err)
}

//export egm_node_id_to_host_name
func egm_node_id_to_host_name(c *C.struct_gm_port, n C.uint, name *C.char, size C.int) C.gm_status_t {
	s, err := must(c, "gm_node_id_to_host_name").p.NodeIDToHostName(gm.NodeID(n))
	if err != nil {
		return status(err)
	}
	return putString(name, int(size), s)
}

func macBytes(p *C.char) *[6]byte { return (*[6]byte)(unsafe.Pointer(p)) }

//export egm_node_id_to_unique_id
func egm_node_id_to_unique_id(c *C.struct_gm_port, n C.uint, unique *C.char) C.gm_status_t {
	mac, err := must(c, "gm_node_id_to_unique_id").p.NodeIDToUniqueID(gm.NodeID(n))
	if err == nil && unique != nil {
		*macBytes(unique) = mac
	}
	return status(err)
}

//export egm_unique_id_to_node_id
func egm_unique_id_to_node_id(c *C.struct_gm_port, unique *C.char, n *C.uint) C.gm_status_t {
	cp := must(c, "gm_unique_id_to_node_id")
	if unique == nil || n == nil {
		return C.GM_INVALID_PARAMETER
	}
	id, err := cp.p.UniqueIDToNodeID(*macBytes(unique))
	if err == nil {
		*n = C.uint(id)
	}
	return status(err)
}

// egm_unique_id writes this unit's unique id (its first MAC address), or
// with mapper set the unique id of the mapper that made the node map
// (GM_NO_MATCH for a static map, which no mapper made).
//
//export egm_unique_id
func egm_unique_id(c *C.struct_gm_port, unique *C.char, mapper C.int) C.gm_status_t {
	cp := must(c, "gm_unique_id")
	if unique == nil {
		return C.GM_INVALID_PARAMETER
	}
	if mapper == 0 {
		*macBytes(unique) = cp.p.UniqueID()
		return C.GM_SUCCESS
	}
	m := cp.p.NodeMap()
	if m == nil || m.Mapper == ([6]byte{}) {
		return C.GM_NO_MATCH
	}
	*macBytes(unique) = m.Mapper
	return C.GM_SUCCESS
}
