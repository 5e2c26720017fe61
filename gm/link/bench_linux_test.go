package link

import (
	"errors"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
)

// BenchmarkPingPong64 measures the round-trip time of a 64-byte payload
// between two hosts joined by a veth pair, with both ends polling (Recv in
// a loop) or blocking (Wait without spinning), for each receive path. Run it as root: go test -run '^$' -bench PingPong ./gm/link/
func BenchmarkPingPong64(b *testing.B) {
	for _, rd := range readers {
		for _, blocking := range []bool{false, true} {
			if rd.slow && !blocking {
				continue
			}
			name := rd.name + "/polling"
			if blocking {
				name = rd.name + "/blocking"
			}
			b.Run(name, func(b *testing.B) {
				cfg := rd.cfg
				if blocking {
					cfg.SpinTime = -1
				}
				x, y, _ := pair(b, &cfg, &cfg)
				pingPong(b, x, y, 200, blocking, 64) // warm-up
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				d := pingPong(b, x, y, b.N, blocking, 64)
				el := time.Since(start)
				b.ReportMetric(float64(el.Nanoseconds())/1e3/float64(b.N), "us/rtt")
				b.ReportMetric(float64(d.q(.5).Nanoseconds())/1e3, "us/rtt-p50")
				b.ReportMetric(float64(d.q(.99).Nanoseconds())/1e3, "us/rtt-p99")
			})
		}
	}
}

// BenchmarkRecv measures one Send plus the Recv of that frame at the
// peer (0 allocs/op expected).
func BenchmarkRecv(b *testing.B) {
	x, y, _ := pair(b, nil, nil)
	f := testFrame(nil, mac6(y.HardwareAddr()), mac6(x.HardwareAddr()), 0, 1, 64)
	frames := make([][]byte, 8)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := x.Send(f); err != nil {
			b.Fatal(err)
		}
		for y.Recv(frames) == 0 {
		}
	}
}

// BenchmarkStream measures the goodput of full-MTU frames sent with
// SendBatch (32 per kick) and received with Wait.
func BenchmarkStream(b *testing.B) {
	for _, rd := range readers {
		for _, bypass := range []bool{false, true} {
			name := rd.name + "/qdisc"
			if bypass {
				name = rd.name + "/bypass"
			}
			b.Run(name, func(b *testing.B) {
				rcfg := rd.cfg
				x, y, _ := pair(b, &Config{QdiscBypass: bypass}, &rcfg)
				n := max(b.N, 20000)
				b.ResetTimer()
				gbps := stream(b, x, y, n, 4096, 32)
				b.ReportMetric(gbps, "Gbit/s")
			})
		}
	}
}

// BenchmarkRecvIdle measures a Recv that finds nothing (one turn of a
// polling loop) on an open-block ring in ordinary memory; no root needed.
func BenchmarkRecvIdle(b *testing.B) {
	f := newFakeRing(1<<16, 2)
	f.add(0, ringFrame(1, 20), true)
	l := new(Link)
	f.setReader(&l.rx, true)
	frames := make([][]byte, 8)
	if l.Recv(frames) != 1 {
		b.Fatal("no frame")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if l.Recv(frames) != 0 {
			b.Fatal("frame from an idle ring")
		}
	}
}

// BenchmarkOpen: what Open costs when the self-test that chooses the
// open-block reader has passed in the namespace before (cached), without
// the self-test (Config.DisableOpenBlock), and what the self-test costs
// alone, run afresh. Needs root (netns).
func BenchmarkOpen(b *testing.B) {
	c := netns.New(b, netns.Options{Hosts: 1})
	h := c.Hosts[0]
	for _, bc := range []struct {
		name string
		cfg  *Config
	}{{"cached", nil}, {"no-selftest", &Config{DisableOpenBlock: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			if err := h.Do(func() error {
				b.ResetTimer()
				for range b.N {
					l, err := Open(h.Ifaces[0], bc.cfg)
					if err != nil {
						return err
					}
					l.Close()
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("selftest-alone", func(b *testing.B) {
		l := openOn(b, h, &Config{DisableOpenBlock: true})
		if err := h.Do(func() error {
			b.ResetTimer()
			for range b.N {
				if why, _ := l.selfTestOnce(); why != "" {
					return errors.New(why)
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	})
}
