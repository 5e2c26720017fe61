package proto

import (
	"testing"
	"time"

	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// TestReceiveWindowAdvertised checks the window a sender keeps: the
// minimum of its Window and the RecvWindow the receiver advertises in its
// OPEN_ACK (msglen), or, when the receiver advertises 0, of its Window and
// its own RecvWindow (docs/PROTOCOL.md, section 7.9).
func TestReceiveWindowAdvertised(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		window, aRecv, bRecv int
		want                 int
	}{
		{"peer's ring smaller", 64, 512, 16, 16},
		{"own window smaller", 8, 512, 16, 8},
		{"older peer: own ring", 64, 24, 0, 24},
		{"no bound known", 64, 0, 0, 64},
		{"advertisement above MaxWindow", 64, 0, 5000, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newSimnet(t, 7)
			a := n.add(1, 2, func(c *Config) { c.Window, c.RecvWindow = tc.window, tc.aRecv })
			b := n.add(2, 2, func(c *Config) { c.RecvWindow = tc.bRecv })
			const segs = 300
			msg := pattern(segs*100, 1)
			size := token.MinSizeForLength(len(msg))
			if err := b.Provide(make([]byte, len(msg)), size, 0, 0); err != nil {
				t.Fatal(err)
			}
			// Every ACK after the first one is lost: the sender sends the
			// session's first frame alone, then its window, and then
			// only retransmissions.
			acks, fresh, adv := 0, 0, -1
			n.lose = func(f []byte) bool {
				h, err := wire.ParseFrame(f, wire.EtherType)
				if err != nil {
					t.Fatal(err)
				}
				switch typ := h.Type(); {
				case typ == wire.TypeOpenAck:
					adv = int(h.MsgLen())
				case typ == wire.TypeAck:
					acks++
					return acks > 1
				case typ >= wire.TypeData && typ <= wire.TypeDataLast && h.Flags()&wire.FlagRetransmit == 0:
					fresh++
				}
				return false
			}
			if err := a.Send(n.now, msg, size, len(msg), 0, 2, 2, nil, 0); err != nil {
				t.Fatal(err)
			}
			for end := n.now + 50*time.Millisecond; n.now < end && n.step(); {
			}
			if adv != min(tc.bRecv, MaxWindow) {
				t.Errorf("OPEN_ACK advertised %d, want %d", adv, min(tc.bRecv, MaxWindow))
			}
			if fresh != 1+tc.want {
				t.Errorf("%d new data frames before the acks stopped, want 1 + window %d", fresh, tc.want)
			}
		})
	}
}
