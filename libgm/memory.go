//go:build cgo

package main

/*
#include <stdlib.h>
#include "egm.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethergm/ethergm/gm"
)

//export egm_dma_register
func egm_dma_register(c *C.struct_gm_port, ptr unsafe.Pointer, n C.gm_size_t) C.gm_status_t {
	cp := must(c, "gm_dma_malloc")
	if err := cp.p.RegisterPages(uintptr(ptr), int(n)); err != nil {
		fmt.Fprintf(os.Stderr, "libgm: gm_dma_malloc: %v\n", err)
		return status(err)
	}
	cp.mu.Lock()
	cp.dma[ptr] = uintptr(n)
	cp.mu.Unlock()
	return C.GM_SUCCESS
}

// egm_dma_deregister ends the registration of a gm_dma_malloc block; the
// caller frees it on GM_SUCCESS.
//
//export egm_dma_deregister
func egm_dma_deregister(c *C.struct_gm_port, ptr unsafe.Pointer) C.gm_status_t {
	cp := must(c, "gm_dma_free")
	cp.mu.Lock()
	n, ok := cp.dma[ptr]
	if ok {
		delete(cp.dma, ptr)
	}
	cp.mu.Unlock()
	if !ok {
		fmt.Fprintf(os.Stderr, "libgm: gm_dma_free: pointer %p does not belong to this port (free it with the port that gm_dma_malloc'd it)\n", ptr)
		return C.GM_INVALID_PARAMETER
	}
	if err := cp.p.DeregisterPages(uintptr(ptr), int(n)); err != nil {
		fmt.Fprintf(os.Stderr, "libgm: gm_dma_free: %v\n", err)
	}
	return C.GM_SUCCESS
}

//export egm_register_memory
func egm_register_memory(c *C.struct_gm_port, ptr unsafe.Pointer, n C.gm_size_t, reg C.int) C.gm_status_t {
	var err error
	if reg != 0 {
		err = must(c, "gm_register_memory").p.RegisterPages(uintptr(ptr), int(n))
	} else {
		err = must(c, "gm_deregister_memory").p.DeregisterPages(uintptr(ptr), int(n))
	}
	return status(err)
}

//export egm_allow_remote_memory_access
func egm_allow_remote_memory_access(c *C.struct_gm_port) C.gm_status_t {
	return status(must(c, "gm_allow_remote_memory_access").p.AllowRemoteMemoryAccess())
}

// egm_directcopy_get copies from the process that holds port
// source_port of unit source_unit on this host (GM's direct copy between
// the ports of one host), with process_vm_readv: it needs the rights of
// ptrace over that process (the same user, or CAP_SYS_PTRACE).
//
//export egm_directcopy_get
func egm_directcopy_get(c *C.struct_gm_port, src, dst unsafe.Pointer, n C.gm_size_t, sourceUnit, sourcePort C.uint) C.gm_status_t {
	cp := must(c, "gm_directcopy_get")
	if n == 0 {
		return C.GM_SUCCESS
	}
	if src == nil || dst == nil {
		return C.GM_INVALID_PARAMETER
	}
	unit := unitName(uint(sourceUnit))
	if sourceUnit == 0 {
		unit = cp.p.Unit().Name
	}
	infos, err := gm.ListPorts(unit)
	if err != nil {
		return status(err)
	}
	pid := 0
	for _, in := range infos {
		if in.Port == int(sourcePort) {
			pid = in.PID
		}
	}
	if pid == 0 {
		return C.GM_SEND_TARGET_PORT_CLOSED
	}
	local := []unix.Iovec{{Base: (*byte)(dst)}}
	local[0].SetLen(int(n))
	remote := []unix.RemoteIovec{{Base: uintptr(src), Len: int(n)}}
	for done := 0; done < int(n); {
		k, err := unix.ProcessVMReadv(pid, local, remote, 0)
		switch {
		case err == unix.EPERM:
			return C.GM_PERMISSION_DENIED
		case err == unix.EFAULT:
			return C.GM_MEMORY_FAULT
		case err == unix.ESRCH:
			return C.GM_SEND_TARGET_PORT_CLOSED
		case err != nil:
			return C.GM_UNTRANSLATED_SYSTEM_ERROR
		case k == 0:
			return C.GM_MEMORY_FAULT
		}
		done += k
		local[0].Base = (*byte)(unsafe.Add(dst, done))
		local[0].SetLen(int(n) - done)
		remote[0] = unix.RemoteIovec{Base: uintptr(src) + uintptr(done), Len: int(n) - done}
	}
	return C.GM_SUCCESS
}
