package result

import (
	"testing"
	"time"
)

func TestPings(t *testing.T) {
	p := NewPings(3, 2)
	for i, rtt := range []time.Duration{9, 9, 1, 7, 3} {
		p.Add(i, rtt*time.Microsecond, i == 3) // two warm-up, one retried
	}
	p.Retries = 1
	l := p.Latency("tool", "mode", 64)
	if l.N != 2 || l.MinUs != 1 || l.MaxUs != 3 || l.Retries != 1 || l.Warmup != 2 || l.Payload != 64 || l.Tool != "tool" || l.Mode != "mode" {
		t.Errorf("%+v", l)
	}
}

func TestSeqs(t *testing.T) {
	var q Seqs
	for _, s := range []uint64{0, 1, 3, 2, 4} {
		q.Add(s)
	}
	q.End(7)
	if q.Gaps != 1+2 || q.OutOfOrder != 1 || q.Next != 5 {
		t.Errorf("%+v", q)
	}
}
