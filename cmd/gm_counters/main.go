// Command gm_counters prints the counters of an EtherGM unit across all the
// processes that use it on this host: frames and bytes sent and received,
// resends (by cause: loss, timeout, go-back), acks and nacks, drops by reason,
// CRC errors, the mapper's frames and map changes, and the congestion
// window of every port toward each host it sends to; one column per open
// port with --verbose.
//
// Usage:
//
//	gm_counters [--unit UNIT] [--json] [--watch[=INTERVAL]] [-v]
//
// It asks every open port of the unit and the unit's gm_mapper over their
// abstract sockets; it needs no privileges and does not disturb the ports'
// processes. With --watch it prints the counters again every INTERVAL
// (default 1s), with the change since the last print, until interrupted.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/cli"
	"github.com/ethergm/ethergm/mapper/driver"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, nil))
}

const description = `gm_counters prints the counters of an EtherGM unit summed over every process
that has one of its ports open on this host, and those of the unit's
gm_mapper: frames and bytes, resends, acks and nacks, drops by reason (CRC
errors, malformed frames, kernel ring drops, stale sessions, duplicates),
mapper frames by type and map changes. Counters only grow; --watch prints
them again every INTERVAL with the change since the last print.

Exit status: 0; 1 if the unit cannot be found; 2 for a bad command line.`

// Counters is gm_counters's report (--json): the unit's totals, and each
// port's and the mapper's own.
type Counters struct {
	Unit   string            `json:"unit"`
	Time   time.Time         `json:"time"`
	Totals map[string]uint64 `json:"totals"`
	Ports  []gm.PortInfo     `json:"ports"`
	Mapper *driver.Status    `json:"mapper,omitempty"`
	Notes  []string          `json:"notes,omitempty"`
}

func run(args []string, stdout, stderr io.Writer, stop <-chan struct{}) int {
	var (
		unitName, jsonOut string
		watch             time.Duration
		verbose           int
	)
	c := cli.New("gm_counters", stdout, stderr)
	c.Synopsis("[--unit UNIT] [--json] [--watch[=INTERVAL]] [-v]")
	c.Description(description)
	c.UnitFlag(&unitName, "")
	c.JSONFlag(&jsonOut, "write the counters as JSON to standard output, or to `FILE` with --json=FILE (one document per line with --watch)")
	c.Flags.DurationVar(&watch, "watch", 0, "print the counters again every `INTERVAL` until interrupted (--watch alone: 1s)")
	c.Flags.Lookup("watch").NoOptDefVal = "1s"
	c.VerboseFlag(&verbose, "also print each port's and the mapper's counters")
	if code, done := c.Parse(args); done {
		return code
	}
	if watch < 0 || (watch > 0 && watch < 10*time.Millisecond) {
		return c.Usagef("invalid value %v for --watch: at least 10ms", watch)
	}
	u, err := gm.ResolveUnit(unitName, nil)
	if err != nil {
		return c.Fail(err)
	}
	out := stdout
	closeOut := func() error { return nil }
	if jsonOut != "" {
		out, closeOut, err = cli.Create(jsonOut, stdout)
		if err != nil {
			return c.Fail(err)
		}
	}
	defer closeOut()

	if stop == nil {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sig)
		ch := make(chan struct{})
		go func() { <-sig; close(ch) }()
		stop = ch
	}
	var prev *Counters
	for {
		cur := collect(u.Name)
		if jsonOut != "" {
			enc := json.NewEncoder(out)
			if watch == 0 {
				enc.SetIndent("", "  ")
			}
			if err := enc.Encode(cur); err != nil {
				return c.Fail(err)
			}
		} else {
			print(out, cur, prev, verbose > 0)
		}
		if watch == 0 {
			return cli.ExitOK
		}
		prev = cur
		select {
		case <-stop:
			return cli.ExitOK
		case <-time.After(watch):
		}
	}
}

// collect asks the unit's ports and mapper for their counters.
func collect(unit string) *Counters {
	c := &Counters{Unit: unit, Time: time.Now(), Totals: map[string]uint64{}}
	ports, err := gm.ListPorts(unit)
	if err != nil {
		c.Notes = append(c.Notes, err.Error())
	}
	for _, p := range ports {
		if p.Error != "" {
			continue
		}
		c.Ports = append(c.Ports, p)
		add(c.Totals, portCounters(p))
	}
	var st driver.Status
	if _, err := ctl.Query(ctl.MapperName(unit), &st); err == nil {
		c.Mapper = &st
		add(c.Totals, mapperCounters(&st))
	} else if errors.Is(err, ctl.ErrNotFound) {
		c.Notes = append(c.Notes, "no gm_mapper runs for unit "+unit)
	} else {
		c.Notes = append(c.Notes, "gm_mapper did not answer: "+err.Error())
	}
	if len(ports) == 0 {
		c.Notes = append(c.Notes, "no port of unit "+unit+" is open")
	}
	return c
}

// portCounters names a port's counters as gm_counters prints them.
func portCounters(p gm.PortInfo) map[string]uint64 {
	s, l := p.Stats, p.Link
	return map[string]uint64{
		"frames_sent":                  l.TxFrames,
		"bytes_sent":                   l.TxBytes,
		"frames_received":              l.RxFrames,
		"bytes_received":               l.RxBytes,
		"data_frames_sent":             s.DataSent,
		"resends":                      s.DataRetransmitted,
		"retransmit_timeouts":          s.Timeouts,
		"acks_sent":                    s.AcksSent,
		"acks_received":                s.AcksReceived,
		"nacks_sent":                   s.NacksSent,
		"nacks_received":               s.NacksReceived,
		"messages_delivered":           s.Delivered,
		"drop_crc_error":               l.CRCErrors,
		"drop_auth_failure":            l.AuthFailures,
		"drop_foreign_partition":       l.ForeignPartition,
		"drop_malformed":               l.Malformed + s.Malformed,
		"drop_kernel_ring_full":        l.KernelDrops,
		"drop_duplicate":               s.Duplicates,
		"drop_out_of_window":           s.OutOfWindow,
		"drop_stale_session":           s.StaleDropped,
		"map_changes_seen":             p.MapChanges,
		"receive_ring_freezes":         l.QueueFreezes,
		"data_frames_received":         s.DataReceived,
		"partial_receive_batches":      s.PartialBatches,
		"nacks_sent_no_buffer":         s.NacksSentNoBuffer,
		"nacks_sent_rejected":          s.NacksSentRejected,
		"nacks_sent_port_closed":       s.NacksSentPortClosed,
		"nacks_sent_stale_session":     s.NacksSentStaleSession,
		"nacks_received_no_buffer":     s.NacksReceivedNoBuffer,
		"nacks_received_rejected":      s.NacksReceivedRejected,
		"nacks_received_port_closed":   s.NacksReceivedPortClosed,
		"nacks_received_stale_session": s.NacksReceivedStaleSession,
		"drop_misaddressed":            s.Misaddressed,
		"drop_ignored":                 s.Ignored,
		"sessions_opened":              s.OpensSent,
		"sessions_started":             s.SessionsStarted,
		"peer_resets":                  s.PeerResets,
		"resends_loss":                 s.RetransmitsLoss,
		"resends_timeout":              s.RetransmitsTimeout,
		"resends_go_back":              s.RetransmitsGoBack,
		"window_cuts_loss":             s.WindowCutsLoss,
		"window_cuts_delay":            s.WindowCutsDelay,
		"losses_random":                s.LossesRandom,
	}
}

// mapperCounters names the mapper's counters.
func mapperCounters(st *driver.Status) map[string]uint64 {
	m := map[string]uint64{
		"mapper_remaps":            st.Counters.Remaps,
		"mapper_maps_installed":    st.Counters.MapsInstalled,
		"mapper_leader_changes":    st.Counters.LeaderChanges,
		"mapper_config_retries":    st.Counters.ConfigRetries,
		"mapper_closed_port_nacks": st.ClosedNacks,
	}
	for k, v := range st.Counters.FramesIn {
		m["mapper_in_"+strings.ToLower(k)] = v
	}
	for k, v := range st.Counters.FramesOut {
		m["mapper_out_"+strings.ToLower(k)] = v
	}
	for k, v := range st.Counters.Drops {
		m["mapper_drop_"+k] = v
	}
	return m
}

func add(dst, src map[string]uint64) {
	for k, v := range src {
		dst[k] += v
	}
}

// print writes the report as a table; with prev, the change since prev.
func print(w io.Writer, c, prev *Counters, verbose bool) {
	fmt.Fprintf(w, "Unit %s, %s: %d open ports", c.Unit, c.Time.Format(time.TimeOnly), len(c.Ports))
	if c.Mapper != nil {
		fmt.Fprintf(w, ", gm_mapper pid %d", c.Mapper.PID)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	names := make([]string, 0, len(c.Totals))
	for k := range c.Totals {
		names = append(names, k)
	}
	slices.Sort(names)
	header := "counter\ttotal\t"
	if prev != nil {
		header += "change\t"
	}
	var cols []map[string]uint64
	if verbose {
		for _, p := range c.Ports {
			header += fmt.Sprintf("port %d (pid %d)\t", p.Port, p.PID)
			cols = append(cols, portCounters(p))
		}
		if c.Mapper != nil {
			header += "gm_mapper\t"
			cols = append(cols, mapperCounters(c.Mapper))
		}
	}
	fmt.Fprintln(tw, header)
	for _, k := range names {
		line := fmt.Sprintf("%s\t%d\t", k, c.Totals[k])
		if prev != nil {
			line += fmt.Sprintf("%+d\t", int64(c.Totals[k]-prev.Totals[k]))
		}
		for _, col := range cols {
			line += fmt.Sprintf("%d\t", col[k])
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	printCongestion(w, c)
	for _, n := range c.Notes {
		fmt.Fprintln(w, "Note: "+n+".")
	}
	fmt.Fprintln(w)
}

// printCongestion writes the congestion state of every port's destination
// hosts, if any port sent anything.
func printCongestion(w io.Writer, c *Counters) {
	any := false
	for _, p := range c.Ports {
		any = any || len(p.Congestion) > 0
	}
	if !any {
		return
	}
	fmt.Fprintln(w, "\nCongestion windows (frames in flight per stream to the host; round trips in microseconds):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "port\tpid\tto node\twindow\tssthresh\tin flight\tsrtt\tmin rtt\t")
	for _, p := range c.Ports {
		for _, cs := range p.Congestion {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t\n", p.Port, p.PID, cs.Node, cs.Window, cs.Ssthresh, cs.InFlight, cs.SRTT, cs.MinRTT)
		}
	}
	tw.Flush()
}
