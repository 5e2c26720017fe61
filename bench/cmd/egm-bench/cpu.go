package main

import (
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of the counters in /proc/stat (sysconf(_SC_CLK_TCK),
// 100 on every Linux architecture Go supports).
const userHZ = 100

// cpuSample is a snapshot of the machine's CPU accounting, used to tell how
// much of the CPUs other processes took while the benchmark ran.
type cpuSample struct {
	at    time.Time
	busy  float64 // user+nice+system seconds over all CPUs (/proc/stat)
	steal float64 // seconds the hypervisor ran something else
	ours  float64 // user+system seconds of this process and its reaped children
}

// sampleCPU reads /proc/stat and getrusage. ok is false if /proc/stat is
// unreadable.
func sampleCPU() (s cpuSample, ok bool) {
	s.at = time.Now()
	for line := range strings.SplitSeq(readFile("/proc/stat"), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		v := make([]float64, 9)
		for i := range v {
			v[i], _ = strconv.ParseFloat(f[i+1], 64)
		}
		// user nice system idle iowait irq softirq steal guest
		s.busy = (v[0] + v[1] + v[2]) / userHZ
		s.steal = v[7] / userHZ
		ok = true
		break
	}
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			s.ours += time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	}
	return s, ok
}

// interference returns, in percent of the machine's CPU capacity between
// a and b, the CPU time used by processes other than the benchmark's
// (busy time not accounted to us or our children; interrupt and softirq
// time is left out on both sides, since our traffic causes most of it) and
// the time stolen by the hypervisor. Our children must all have been
// reaped by b.
func interference(a, b cpuSample, ncpu int) (others, steal float64) {
	capacity := b.at.Sub(a.at).Seconds() * float64(ncpu)
	if capacity <= 0 {
		return 0, 0
	}
	others = max(0, (b.busy-a.busy)-(b.ours-a.ours)) / capacity * 100
	steal = max(0, b.steal-a.steal) / capacity * 100
	return others, steal
}
