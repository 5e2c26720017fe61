//go:build cgo

package main

/*
#cgo CFLAGS: -I${SRCDIR}/include -O2
#include <stdlib.h>
#include "egm.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ethergm/ethergm/capture"
	"github.com/ethergm/ethergm/gm"
)

// port is the Go half of a struct gm_port.
type port struct {
	p    *gm.Port
	c    *C.struct_gm_port
	slot int

	// Touched only by the thread that receives (GM: one receive loop per
	// port): the event last handed to C, and an event taken from the port
	// before the program asked for it (by the sleep of _GM_SLEEP_EVENT or
	// by gm_next_event_peek), to return next.
	last  *gm.Event
	stash *gm.Event
	// lastLocal: the event last handed to C is a report of local
	// completions (GM_SENT_TOKENS_EVENT made by the library).
	lastLocal bool

	// mu guards what any thread may touch: the completions the library
	// made itself (failed misuse), the messages of gm_send whose
	// completion GM_SENT_EVENT reports, the callback records and the
	// gm_dma_malloc allocations.
	mu      sync.Mutex
	pending atomic.Int32 // len(local) + len(legacy)
	local   []localDone
	legacy  []unsafe.Pointer
	free    []*sendRec
	dma     map[unsafe.Pointer]uintptr // address → length
	onSent  gm.SendCallback
	capture *capture.Writer // ETHERGM_PCAP's, shared by the process's ports
}

// localDone is a completion the library made without the port: the send
// was refused before it started.
type localDone struct {
	fn  C.gm_send_completion_callback_t
	ctx unsafe.Pointer
	st  C.gm_status_t
}

// sendRec is the context of a send the port runs: the program's callback
// and context, or for gm_send the message to report in GM_SENT_EVENT.
type sendRec struct {
	fn     C.gm_send_completion_callback_t
	ctx    unsafe.Pointer
	legacy unsafe.Pointer
	word   [4]byte // gm_datagram_send_4's message
}

var (
	tableMu sync.Mutex
	table   []atomic.Pointer[port] // by slot; grows under tableMu
	tabSnap atomic.Pointer[[]atomic.Pointer[port]]
	inits   int // gm_init count
)

// get returns the Go half of c, or nil (a closed or foreign pointer).
func get(c *C.struct_gm_port) *port {
	if c == nil {
		return nil
	}
	t := tabSnap.Load()
	s := int(c.slot)
	if t == nil || s < 0 || s >= len(*t) {
		return nil
	}
	cp := (*t)[s].Load()
	if cp == nil || cp.c != c {
		return nil
	}
	return cp
}

// must returns the Go half of c, or reports misuse and exits: GM's
// functions have no way to return an error for a port that is not one.
func must(c *C.struct_gm_port, call string) *port {
	cp := get(c)
	if cp == nil {
		fmt.Fprintf(os.Stderr, "libgm: %s: not an open port (%p): call gm_open first, and not after gm_close\n", call, c)
		os.Exit(int(gm.InvalidParameter))
	}
	return cp
}

// status returns the GM status of err (Success for nil).
func status(err error) C.gm_status_t {
	if err == nil {
		return C.GM_SUCCESS
	}
	var st gm.Status
	if errors.As(err, &st) {
		return C.gm_status_t(st)
	}
	switch {
	case errors.Is(err, gm.ErrNoSendToken):
		return C.GM_TRY_AGAIN
	}
	return C.GM_INVALID_PARAMETER
}

//export egm_init
func egm_init() C.gm_status_t {
	tableMu.Lock()
	inits++
	tableMu.Unlock()
	return C.GM_SUCCESS
}

//export egm_finalize
func egm_finalize() {
	tableMu.Lock()
	if inits > 0 {
		inits--
	}
	last := inits == 0
	tableMu.Unlock()
	if last {
		egm_close_all()
	}
}

// egm_close_all closes every port still open (their C halves stay
// allocated until gm_close, so a program's later gm_close is harmless).
//
//export egm_close_all
func egm_close_all() {
	tableMu.Lock()
	var open []*port
	for i := range table {
		if cp := table[i].Load(); cp != nil {
			open = append(open, cp)
		}
	}
	tableMu.Unlock()
	for _, cp := range open {
		cp.close()
	}
}

// unitName maps GM's board number to a unit: 0 is the default unit
// (ETHERGM_UNIT, else the one interface that is up), N a unit named "N" in
// the state directory's units file.
func unitName(unit uint) string {
	if unit == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(unit), 10)
}

//export egm_open
func egm_open(c *C.struct_gm_port, unit, id C.uint, name *C.char, version C.uint) C.gm_status_t {
	if v := uint(version); v > C.GM_API_VERSION_2_0_16 {
		fmt.Fprintf(os.Stderr, "libgm: gm_open: API version %#x is newer than this library's (%#x): rebuild the program against this gm.h\n", v, C.GM_API_VERSION_2_0_16)
		return C.GM_INCOMPATIBLE_LIB_AND_DRIVER
	}
	cfg := &gm.Config{VirtualAddresses: true}
	// capture.FromEnv counts its users: each port closes its own.
	w, err := capture.FromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "libgm: gm_open: %v\n", err)
		return C.GM_FAILURE
	}
	cfg.WrapLink = w.Wrap
	p, err := gm.Open(unitName(uint(unit)), int(id), C.GoString(name), cfg)
	if err != nil {
		if w != nil {
			w.Close()
		}
		st := status(err)
		// GM_BUSY is routine (programs try the ports in turn); every
		// other failure says here why, since gm_perror can only say what.
		if st != C.GM_BUSY {
			fmt.Fprintf(os.Stderr, "libgm: gm_open: %v\n", err)
		}
		return st
	}
	cp := &port{p: p, c: c, dma: map[unsafe.Pointer]uintptr{}, capture: w}
	cp.onSent = cp.sent
	tableMu.Lock()
	slot := -1
	for i := range table {
		if table[i].Load() == nil {
			slot = i
			break
		}
	}
	if slot < 0 {
		// Grow: a new table, so that readers never see it change under
		// them (they load the slice through tabSnap).
		n := make([]atomic.Pointer[port], max(2*len(table), 16))
		for i := range table {
			n[i].Store(table[i].Load())
		}
		slot = len(table)
		table = n
		tabSnap.Store(&n) // a header of its own, never written again
	}
	cp.slot = slot
	c.slot = C.int(slot)
	table[slot].Store(cp)
	tableMu.Unlock()
	return C.GM_SUCCESS
}

//export egm_close
func egm_close(c *C.struct_gm_port) {
	if cp := get(c); cp != nil {
		cp.close()
	}
}

func (cp *port) close() {
	tableMu.Lock()
	if table[cp.slot].Load() != cp {
		tableMu.Unlock()
		return
	}
	table[cp.slot].Store(nil)
	tableMu.Unlock()
	cp.p.Close()
	if cp.capture != nil {
		cp.capture.Close() // after the port, as capture requires
	}
	alarmsClosed(cp)
	// GM releases a closed port's DMA memory.
	cp.mu.Lock()
	for a := range cp.dma {
		C.free(a)
	}
	cp.dma = nil
	cp.mu.Unlock()
}

//export egm_tokens
func egm_tokens(c *C.struct_gm_port, recv C.int) C.uint {
	cp := must(c, "gm_num_send_tokens")
	if recv != 0 {
		return C.uint(cp.p.NumReceiveTokens())
	}
	return C.uint(cp.p.NumSendTokens())
}

//export egm_send_token
func egm_send_token(c *C.struct_gm_port, op C.int, pri, count C.uint) C.int {
	cp := must(c, "gm_alloc_send_token")
	pr := gm.Priority(pri)
	switch op {
	case 0:
		return cbool(cp.p.AllocSendToken(pr))
	case 1, 3:
		// gm_free_send_token gives back one token it allocated;
		// gm_free_send_tokens deposits count tokens (the counters start
		// at 0, as in GM).
		call, err := "gm_free_send_token", error(nil)
		if op == 1 {
			err = cp.p.FreeSendToken(pr)
		} else {
			call, err = "gm_free_send_tokens", cp.p.DepositSendTokens(pr, int(count))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "libgm: %s: %v\n", call, err)
		}
		return 0
	}
	return cbool(cp.p.SendTokenAvailable(pr))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

//export egm_ticks
func egm_ticks(c *C.struct_gm_port) C.gm_u64_t {
	return C.gm_u64_t(must(c, "gm_ticks").p.Ticks())
}

var strerrors [C.GM_NUM_STATUS_CODES + 1]*C.char
var strerrorsMu sync.Mutex

//export egm_strerror
func egm_strerror(s C.gm_status_t) *C.char {
	i := int(s)
	if i < 0 || i >= C.GM_NUM_STATUS_CODES {
		i = C.GM_NUM_STATUS_CODES
	}
	strerrorsMu.Lock()
	defer strerrorsMu.Unlock()
	if strerrors[i] == nil {
		// Made once per status and kept: GM's strings are static.
		strerrors[i] = C.CString(gm.Strerror(gm.Status(s)))
	}
	return strerrors[i]
}
