package result

import "time"

// Pings collects a ping-pong client's round trips: the first warmup ones,
// and those whose request had to be sent again, are not measured.
type Pings struct {
	warmup   int
	samples  []time.Duration
	measured time.Duration
	Retries  int // requests sent again after a reply timeout
}

// NewPings returns a collector for warmup round trips and n measured ones.
func NewPings(n, warmup int) *Pings {
	return &Pings{warmup: warmup, samples: make([]time.Duration, 0, n)}
}

// Add records round trip i (counted from 0, warm-up included) of rtt;
// retried says its request was sent again.
func (p *Pings) Add(i int, rtt time.Duration, retried bool) {
	if i >= p.warmup && !retried {
		p.samples = append(p.samples, rtt)
		p.measured += rtt
	}
}

// Latency summarizes the measured round trips as the record of tool in
// mode, for payload-byte messages.
func (p *Pings) Latency(tool, mode string, payload int) Latency {
	l := Summarize(p.samples)
	l.Tool, l.Mode, l.Payload = tool, mode, payload
	l.Retries, l.Warmup, l.Elapsed = p.Retries, p.warmup, p.measured.Seconds()
	return l
}

// Seqs counts a stream receiver's data frames by sequence number.
type Seqs struct {
	Next       uint64 // the sequence number expected next
	Gaps       uint64 // sequence numbers skipped (frames lost)
	OutOfOrder uint64 // frames whose sequence number went backwards
}

// Add counts a frame with sequence number seq.
func (q *Seqs) Add(seq uint64) {
	switch {
	case seq == q.Next:
		q.Next++
	case seq > q.Next:
		q.Gaps += seq - q.Next
		q.Next = seq + 1
	default:
		q.OutOfOrder++
	}
}

// End counts the frames lost at the tail of a stream of sent frames.
func (q *Seqs) End(sent uint64) {
	if sent > q.Next {
		q.Gaps += sent - q.Next
	}
}
