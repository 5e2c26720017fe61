// Command egm-relay forwards Ethernet frames between two interfaces of one
// host (normally the relay namespace of internal/netns/cluster.sh up --relay),
// impairing them: drop, duplicate, reorder, corrupt and delay at the given
// rates, with a seeded pseudo-random generator.
//
// Usage:
//
//	ip netns exec NS egm-relay -a IFACE -b IFACE [-drop 0.01] [-dup 0.01]
//	    [-reorder 0.01] [-gap 1] [-corrupt 0.001] [-corrupt-from 58]
//	    [-delay 1ms] [-jitter 500us] [-dir both|ab|ba] [-ethertype 0x88B5]
//	    [-seed 1] [-stats 10s]
//
// Impairments apply to the directions chosen by -dir; by default only
// EtherGM frames (EtherType 0x88B5) are impaired and others (ARP, IP) pass
// untouched; -ethertype 0 impairs every frame. The counters of both
// directions are printed every -stats interval and on SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/internal/netns/relay"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("egm-relay: ")
	var (
		a, b       = flag.String("a", "", "interface of side A (required)"), flag.String("b", "", "interface of side B (required)")
		dir        = flag.String("dir", "both", "directions to impair: both, ab or ba")
		seed       = flag.Int64("seed", 1, "seed of the pseudo-random choices")
		etherType  = flag.String("ethertype", "0x88B5", "impair only frames of this EtherType; 0 impairs all")
		queue      = flag.Int("queue", relay.DefaultQueueLen, "delay queue length per direction")
		hold       = flag.Duration("hold", relay.DefaultHoldTimeout, "longest wait of a reordered frame")
		statsEvery = flag.Duration("stats", 10*time.Second, "print counters this often (0: only at exit)")
		imp        relay.Impairment
	)
	flag.Float64Var(&imp.Drop, "drop", 0, "drop rate")
	flag.Float64Var(&imp.Duplicate, "dup", 0, "duplicate rate")
	flag.Float64Var(&imp.Reorder, "reorder", 0, "reorder rate")
	flag.IntVar(&imp.ReorderGap, "gap", 1, "frames that overtake a reordered frame")
	flag.Float64Var(&imp.Corrupt, "corrupt", 0, "corrupt (bit flip) rate")
	flag.IntVar(&imp.CorruptFrom, "corrupt-from", relay.DefaultCorruptFrom, "first byte corruption may hit (-1: anywhere)")
	flag.DurationVar(&imp.Delay, "delay", 0, "fixed delay")
	flag.DurationVar(&imp.Jitter, "jitter", 0, "delay jitter (uniform, ±)")
	flag.Parse()
	if *a == "" || *b == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	et, err := strconv.ParseUint(*etherType, 0, 16)
	if err != nil {
		log.Fatalf("-ethertype: %v", err)
	}
	cfg := relay.Config{Seed: *seed, EtherType: uint16(et), QueueLen: *queue, HoldTimeout: *hold}
	switch *dir {
	case "both":
		cfg.AtoB, cfg.BtoA = imp, imp
	case "ab":
		cfg.AtoB = imp
	case "ba":
		cfg.BtoA = imp
	default:
		log.Fatalf("-dir %q: want both, ab or ba", *dir)
	}

	ca, err := relay.Listen(*a)
	if err != nil {
		log.Fatal(err)
	}
	cb, err := relay.Listen(*b)
	if err != nil {
		log.Fatal(err)
	}
	r, err := relay.Start(ca, cb, cfg)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("relaying %s <-> %s (seed %d, ethertype %#04x, %+v on %s)", *a, *b, *seed, et, imp, *dir)

	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	var tick <-chan time.Time
	if *statsEvery > 0 {
		t := time.NewTicker(*statsEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			printStats(r, *a, *b)
		case sig := <-sigc:
			log.Printf("%v", sig)
			printStats(r, *a, *b)
			if err := r.Close(); err != nil {
				log.Fatal(err)
			}
			return
		}
	}
}

func printStats(r *relay.Relay, a, b string) {
	for _, d := range []relay.Direction{relay.AtoB, relay.BtoA} {
		from, to := a, b
		if d == relay.BtoA {
			from, to = b, a
		}
		s := r.Stats(d)
		fmt.Printf("%s -> %s: received %d forwarded %d passed %d dropped %d duplicated %d reordered %d delayed %d corrupted %d overflows %d errors %d\n",
			from, to, s.Received, s.Forwarded, s.Passed, s.Dropped, s.Duplicated, s.Reordered, s.Delayed, s.Corrupted, s.Overflows, s.Errors)
	}
}
