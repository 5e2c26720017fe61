package allsize

import (
	"fmt"
	"io"

	"github.com/ethergm/ethergm/cmd/gm_allsize/internal/pattern"
	"github.com/ethergm/ethergm/gm"
)

// Limits of the mismatch report.
const (
	// MismatchesPerMessage is how many differing bytes are printed per
	// message before the count.
	MismatchesPerMessage = 3
	// MaxReportedMessages is how many corrupted messages a side prints per
	// run; later ones are only counted.
	MaxReportedMessages = 50
	// maxDoneMismatches is how many mismatch lines the server returns per
	// measurement in its done message (kept short: see ctlMsg).
	maxDoneMismatches = 2
)

// verifier checks received messages and reports mismatches.
type verifier struct {
	out      io.Writer // mismatch lines; nil prints nothing
	prefix   string    // put before each line ("" or "server: ")
	reported int       // corrupted messages printed so far
	scratch  []pattern.Mismatch

	// Per measurement (reset by begin).
	errors     int      // corrupted messages
	bytesWrong int      // differing bytes
	lines      []string // the measurement's first lines, for the done message
}

func (v *verifier) begin() {
	v.errors, v.bytesWrong, v.lines = 0, 0, v.lines[:0]
}

// report prints one line and keeps the first few of a measurement.
func (v *verifier) report(line string) {
	if v.out != nil {
		fmt.Fprintln(v.out, v.prefix+line)
	}
	if len(v.lines) < maxDoneMismatches {
		v.lines = append(v.lines, line)
	}
}

// check verifies the message of event e against the pattern of k and the
// expected size class and priority. It returns whether the message was
// intact.
func (v *verifier) check(e *gm.Event, k pattern.Key, pri gm.Priority) bool {
	show := v.reported < MaxReportedMessages
	if e.Size != k.Size || e.Length != k.Length || e.Priority != pri {
		v.errors++
		v.bytesWrong += max(e.Length, k.Length)
		if show {
			v.reported++
			v.report(fmt.Sprintf("size %d len %d seq %d: got a message of size %d len %d prio %s", k.Size, k.Length, k.Seq, e.Size, e.Length, PriorityName(e.Priority)))
		}
		return false
	}
	bad, ms := pattern.Check(e.Message[:e.Length], k, v.scratch[:0], MismatchesPerMessage)
	v.scratch = ms
	if bad == 0 {
		return true
	}
	v.errors++
	v.bytesWrong += bad
	if show {
		v.reported++
		for _, m := range ms {
			v.report(fmt.Sprintf("size %d len %d seq %d: offset %d expected 0x%02x got 0x%02x", k.Size, k.Length, k.Seq, m.Offset, m.Want, m.Got))
		}
		if bad > len(ms) {
			v.report(fmt.Sprintf("size %d len %d seq %d: %d bytes differ in all", k.Size, k.Length, k.Seq, bad))
		}
		if v.reported == MaxReportedMessages && v.out != nil {
			fmt.Fprintf(v.out, "%sfurther corrupted messages are counted, not printed\n", v.prefix)
		}
	}
	return false
}
