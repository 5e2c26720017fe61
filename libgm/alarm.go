//go:build cgo

package main

/*
#include "egm.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/ethergm/ethergm/gm"
)

// An alarm's Go half. gm_alarm_t is the program's memory: it holds the id
// of its Go half (gm_cancel_alarm names no port), which holds the address
// of the gm_alarm_t, so that an id read from uninitialised memory cannot
// find another alarm.
type alarm struct {
	a    gm.Alarm
	c    *C.gm_alarm_t
	port *port
	fn   C.gm_alarm_callback_t
	ctx  unsafe.Pointer
	fire func(any)
}

var (
	alarmsMu sync.Mutex
	alarms   = map[uint64]*alarm{}
	alarmSeq uint64
)

const alarmFree, alarmSet = 0, 1

func lookupAlarm(a *C.gm_alarm_t) *alarm {
	alarmsMu.Lock()
	defer alarmsMu.Unlock()
	if r := alarms[uint64(a._id)]; r != nil && r.c == a {
		return r
	}
	return nil
}

//export egm_initialize_alarm
func egm_initialize_alarm(a *C.gm_alarm_t) {
	if a == nil {
		return
	}
	if r := lookupAlarm(a); r != nil {
		r.port.p.CancelAlarm(&r.a)
		alarmsMu.Lock()
		delete(alarms, uint64(a._id))
		alarmsMu.Unlock()
	}
	*a = C.gm_alarm_t{}
}

//export egm_set_alarm
func egm_set_alarm(c *C.struct_gm_port, a *C.gm_alarm_t, usecs C.gm_u64_t, fn C.gm_alarm_callback_t, ctx unsafe.Pointer) {
	cp := must(c, "gm_set_alarm")
	if a == nil || fn == nil {
		return
	}
	r := lookupAlarm(a)
	if r != nil && r.port != cp {
		// Moved to another port: leave the first.
		r.port.p.CancelAlarm(&r.a)
		r = nil
	}
	if r == nil {
		r = &alarm{c: a, port: cp}
		r.fire = r.run
		alarmsMu.Lock()
		alarmSeq++
		delete(alarms, uint64(a._id))
		alarms[alarmSeq] = r
		a._id = C.gm_u64_t(alarmSeq)
		alarmsMu.Unlock()
	}
	r.fn, r.ctx = fn, ctx
	a._port, a._callback, a._context, a._state = c, fn, ctx, alarmSet
	cp.p.SetAlarm(&r.a, uint64(usecs), r.fire, nil)
}

// run is the alarm's callback, inside gm_unknown: the alarm is free again
// before the program's callback runs (which may set it again, or free it).
func (r *alarm) run(any) {
	if lookupAlarm(r.c) == r {
		r.c._state = alarmFree
	}
	C.egm_call_alarm(r.fn, r.ctx)
}

//export egm_cancel_alarm
func egm_cancel_alarm(a *C.gm_alarm_t) {
	if a == nil {
		return
	}
	if r := lookupAlarm(a); r != nil {
		r.port.p.CancelAlarm(&r.a)
		a._state = alarmFree
	}
}

// alarmsClosed forgets the alarms of a closed port.
func alarmsClosed(cp *port) {
	alarmsMu.Lock()
	defer alarmsMu.Unlock()
	for id, r := range alarms {
		if r.port == cp {
			delete(alarms, id)
		}
	}
}
