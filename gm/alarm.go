package gm

import "time"

// Alarm is struct gm_alarm: client-owned storage for one alarm. The zero
// value is ready to use (InitializeAlarm only resets it). An Alarm belongs
// to one port at a time.
type Alarm struct {
	port     *Port
	deadline time.Duration
	cb       func(ctx any)
	ctx      any
	set      bool
}

// InitializeAlarm is gm_initialize_alarm: it makes a an unset alarm.
func InitializeAlarm(a *Alarm) { *a = Alarm{} }

// SetAlarm is gm_set_alarm: cb(ctx) runs inside Unknown (on an AlarmEvent)
// once usecs microseconds have passed. Setting an alarm that is already
// set reschedules it. Alarms also end a BlockingReceive sleep.
func (p *Port) SetAlarm(a *Alarm, usecs uint64, cb func(ctx any), ctx any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a.set && a.port != nil && a.port != p {
		a.port.cancelLocked(a)
	}
	a.port, a.cb, a.ctx = p, cb, ctx
	a.deadline = p.now() + time.Duration(usecs)*time.Microsecond
	if !a.set {
		a.set = true
		p.alarms = append(p.alarms, a)
	}
	p.wakeLocked()
}

// CancelAlarm is gm_cancel_alarm: the alarm will not fire. It does
// nothing on an alarm that is not set.
func (p *Port) CancelAlarm(a *Alarm) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancelLocked(a)
}

func (p *Port) cancelLocked(a *Alarm) {
	if !a.set {
		return
	}
	a.set = false
	for i, x := range p.alarms {
		if x == a {
			p.alarms = append(p.alarms[:i], p.alarms[i+1:]...)
			p.alarms = p.alarms[:len(p.alarms):cap(p.alarms)]
			break
		}
	}
}

func (p *Port) alarmDueLocked(now time.Duration) bool {
	for _, a := range p.alarms {
		if a.deadline <= now {
			return true
		}
	}
	return false
}

func (p *Port) nextAlarmLocked() time.Duration {
	var d time.Duration
	for _, a := range p.alarms {
		if d == 0 || a.deadline < d {
			d = a.deadline
		}
	}
	return d
}

// runAlarms runs, outside the mutex, every alarm that is due.
func (p *Port) runAlarms() {
	for {
		p.mu.Lock()
		now := p.now()
		var due *Alarm
		for _, a := range p.alarms {
			if a.deadline <= now && (due == nil || a.deadline < due.deadline) {
				due = a
			}
		}
		if due == nil {
			p.mu.Unlock()
			return
		}
		p.cancelLocked(due)
		cb, ctx := due.cb, due.ctx
		p.mu.Unlock()
		if cb != nil {
			cb(ctx)
		}
	}
}
