package allsize

import (
	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
	"github.com/ethergm/ethergm/gm"
)

// Counters returns the protocol and link counters of p.
func Counters(p *gm.Port) report.Counters {
	s, l := p.Stats(), p.LinkStats()
	return report.Counters{
		Resends:       s.DataRetransmitted,
		NacksSent:     s.NacksSent,
		NacksReceived: s.NacksReceived,
		Timeouts:      s.Timeouts,
		Duplicates:    s.Duplicates,
		KernelDrops:   l.KernelDrops,
		CRCErrors:     l.CRCErrors,
		Malformed:     l.Malformed + s.Malformed,
	}
}
