package gm_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/membuf"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/relay"
)

func benchPair(b *testing.B, c *netns.Cluster) (*gm.Port, *gm.Port) {
	return benchPairKey(b, c, false)
}

// benchPairKey is benchPair with, if key is set, a cluster key on both
// ports.
func benchPairKey(b *testing.B, c *netns.Cluster, key bool) (*gm.Port, *gm.Port) {
	m := writeMap(b, c)
	ca, cb := testConfig(c.Hosts[0], m), testConfig(c.Hosts[1], m)
	if key {
		f := filepath.Join(b.TempDir(), "cluster.key")
		if err := os.WriteFile(f, []byte("bench-cluster-key-0123456789abcdef\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		ca.ClusterKeyFile, cb.ClusterKeyFile = f, f
	}
	ca.ProgressTimeout, cb.ProgressTimeout = time.Minute, time.Minute
	ca.LivenessTimeout, cb.LivenessTimeout = time.Minute, time.Minute
	ca.Window, cb.Window = 1024, 1024
	return openPort(b, c.Hosts[0], 2, ca), openPort(b, c.Hosts[1], 2, cb)
}

// BenchmarkPingPong8 measures the half round trip of an 8-byte message
// between two ports in polling mode (ns/op is one half round trip).
func BenchmarkPingPong8(b *testing.B) { pingPong8(b, false) }

// BenchmarkPingPong8Key is BenchmarkPingPong8 with a cluster key: every
// frame sealed and verified.
func BenchmarkPingPong8Key(b *testing.B) { pingPong8(b, true) }

func pingPong8(b *testing.B, key bool) {
	c := netns.New(b, netns.Options{Hosts: 2, Direct: true})
	pa, pb := benchPairKey(b, c, key)
	size := gm.MinSizeForLength(8)
	for _, p := range []*gm.Port{pa, pb} {
		for i := 0; i < 4; i++ {
			_ = p.ProvideReceiveBuffer(make([]byte, 8), size, gm.HighPriority, 0)
		}
	}
	msg := []byte("pingpong")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // echo
		defer wg.Done()
		for !stop.Load() {
			e := pb.Receive()
			switch {
			case e.Type == gm.NoRecvEvent:
			case e.Type.IsRecv():
				_ = pb.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
				for pb.SendToPeerWithCallback(msg, size, 8, gm.HighPriority, pa.NodeID(), nil, nil) != nil {
					pb.Unknown(pb.Receive())
				}
			default:
				pb.Unknown(e)
			}
		}
	}()
	round := func() {
		for pa.SendToPeerWithCallback(msg, size, 8, gm.HighPriority, pb.NodeID(), nil, nil) != nil {
			pa.Unknown(pa.Receive())
		}
		for {
			e := pa.Receive()
			if e.Type.IsRecv() {
				_ = pa.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
				return
			}
			if e.Type != gm.NoRecvEvent {
				pa.Unknown(e)
			}
		}
	}
	for i := 0; i < 200; i++ {
		round()
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		round()
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N)/2/1000, "us/halfrtt")
	stop.Store(true)
	wg.Wait()
}

// stream sends b.N messages of msgLen bytes from pa to pb with every send
// token in use, and reports the goodput.
func stream(b *testing.B, pa, pb *gm.Port, msgLen int) {
	size := gm.MinSizeForLength(msgLen)
	for i := 0; i < 64; i++ {
		if err := pb.ProvideReceiveBuffer(membuf.Touched(msgLen), size, gm.LowPriority, 0); err != nil {
			b.Fatal(err)
		}
	}
	var stop atomic.Bool
	var got atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			e := pb.BlockingReceive()
			if e.Type.IsRecv() {
				got.Add(1)
				_ = pb.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
			} else if e.Type != gm.NoRecvEvent {
				pb.Unknown(e)
			}
		}
	}()
	msg := membuf.Touched(msgLen)
	var done atomic.Int64
	var failed atomic.Int64
	cb := gm.SendCallback(func(_ *gm.Port, _ any, st gm.Status) {
		done.Add(1)
		if st != gm.Success {
			failed.Add(1)
		}
	})
	send := func() {
		for {
			err := pa.SendToPeerWithCallback(msg, size, msgLen, gm.LowPriority, pb.NodeID(), cb, nil)
			if err == nil {
				return
			}
			if !errors.Is(err, gm.ErrNoSendToken) {
				b.Fatal(err)
			}
			e := pa.Receive()
			if e.Type != gm.NoRecvEvent {
				pa.Unknown(e)
			}
		}
	}
	for i := 0; i < 8; i++ {
		send()
	}
	for done.Load() < 8 {
		pa.Unknown(pa.Receive())
	}
	done.Store(0)
	b.ReportAllocs()
	b.SetBytes(int64(msgLen))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		send()
	}
	for done.Load() < int64(b.N) {
		e := pa.Receive()
		if e.Type != gm.NoRecvEvent {
			pa.Unknown(e)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d sends failed", failed.Load())
	}
	b.ReportMetric(float64(msgLen)*float64(b.N)/el.Seconds()/1e6, "MB/s")
	stop.Store(true)
	var a gm.Alarm
	pb.SetAlarm(&a, 0, nil, nil)
	wg.Wait()
	st := pa.Stats()
	b.ReportMetric(float64(st.DataRetransmitted)/float64(st.DataSent+1), "rtx/frame")
}

// BenchmarkStream1MiB streams 1 MiB messages with all send tokens in
// flight (MTU 1500, direct veth pair).
func BenchmarkStream1MiB(b *testing.B) {
	c := netns.New(b, netns.Options{Hosts: 2, Direct: true})
	pa, pb := benchPair(b, c)
	stream(b, pa, pb, 1<<20)
}

// BenchmarkStream1MiBKey is BenchmarkStream1MiB with a cluster key.
func BenchmarkStream1MiBKey(b *testing.B) {
	c := netns.New(b, netns.Options{Hosts: 2, Direct: true})
	pa, pb := benchPairKey(b, c, true)
	stream(b, pa, pb, 1<<20)
}

// BenchmarkStream1MiB9000 is BenchmarkStream1MiB at MTU 9000 (the window
// is capped by the receive ring: 448 frames).
func BenchmarkStream1MiB9000(b *testing.B) {
	c := netns.New(b, netns.Options{Hosts: 2, Direct: true, MTU: 9000})
	pa, pb := benchPair(b, c)
	stream(b, pa, pb, 1<<20)
}

// BenchmarkStream1MiBLoss5 is BenchmarkStream1MiB through the impairment
// relay with 5% random loss in both directions.
func BenchmarkStream1MiBLoss5(b *testing.B) {
	imp := relay.Impairment{Drop: 0.05}
	c := netns.NewImpairedPair(b, relay.Config{Seed: 1, AtoB: imp, BtoA: imp, EtherType: 0x88B5})
	pa, pb := benchPair(b, c)
	stream(b, pa, pb, 1<<20)
}

// BenchmarkStream1MiBRelay is the loss-free reference for
// BenchmarkStream1MiBLoss5 (same relay, no impairment).
func BenchmarkStream1MiBRelay(b *testing.B) {
	c := netns.NewImpairedPair(b, relay.Config{Seed: 1, EtherType: 0x88B5})
	pa, pb := benchPair(b, c)
	stream(b, pa, pb, 1<<20)
}

// BenchmarkStream8 streams 8-byte messages (allocation and per-message
// overhead).
func BenchmarkStream8(b *testing.B) {
	c := netns.New(b, netns.Options{Hosts: 2, Direct: true})
	pa, pb := benchPair(b, c)
	stream(b, pa, pb, 8)
}
