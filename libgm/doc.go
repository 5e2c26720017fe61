//go:build cgo

// Command libgm is libgm, Myricom GM's C API over EtherGM: built with
// -buildmode=c-shared (libgm.so) or -buildmode=c-archive (libgm.a), with the
// header include/gm.h (scripts/libgm.sh, `make libgm`). It is the only cgo
// in EtherGM.
//
// The public functions are C (api.c); they call the Go side through the
// egm_* functions exported here, which run GM's calls on package gm's Port.
// A port's C half (struct gm_port, egm.h) holds what C reads: the event
// gm_receive returns, the FAST message it points to, GM_SENT_EVENT's list.
// C never keeps a Go pointer: the Go half is found by its slot in a table;
// Go keeps C pointers (buffers, callbacks, contexts, alarms) only as the
// program hands them over, as GM's contract says it may.
//
// Memory: a libgm port is opened with gm.Config.VirtualAddresses, so a
// gm_remote_ptr_t is an address in the target process and registration is
// by page, counted (gm.Port.RegisterPages). gm_dma_malloc returns
// page-aligned C memory registered with the port.
//
// Misuse that GM's void calls cannot return (a send without a token, a
// length beyond the size) is reported on stderr in one line naming the call
// and what to do, and the send's callback runs, inside the next gm_unknown,
// with the status that says why (GM raised a fatal event instead).
package main

func main() {}
