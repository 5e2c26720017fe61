// Package ctl holds what the benchmark programs egm-linkperf and egm-gmperf
// share for being driven by egm-bench (bench/internal/runner): a stop flag
// raised by SIGINT or SIGTERM, and the "ready" line a driver waits for
// before it starts the client. egm-floor keeps its own on purpose: it uses
// nothing of this repository but the result format.
package ctl

import (
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// ReadyLine is what Ready prints on standard error.
const ReadyLine = "ready"

// StopFlag returns a flag that SIGINT or SIGTERM raises. The program's
// loops poll it and finish cleanly (servers print their counts then).
func StopFlag() *atomic.Bool {
	var stop atomic.Bool
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-c
		stop.Store(true)
	}()
	return &stop
}

// Ready tells the driver that the program listens: it prints ReadyLine on
// standard error.
func Ready() { fmt.Fprintln(os.Stderr, ReadyLine) }
