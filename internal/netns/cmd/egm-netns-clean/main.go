// Command egm-netns-clean removes what killed EtherGM test runs left
// behind: network namespaces (and the processes in them), links and state
// files whose names start with "egm<run id>", for runs whose owner process
// is gone (see netns.RemoveStale). Runs of live processes and clusters made
// by cluster.sh are kept unless -all is given.
//
// Usage:
//
//	egm-netns-clean [-all]
package main

import (
	"flag"
	"fmt"
	"log"

	"github.com/ethergm/ethergm/internal/netns"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("egm-netns-clean: ")
	all := flag.Bool("all", false, "also remove runs of live processes and of cluster.sh")
	flag.Parse()
	remove := netns.RemoveStale
	if *all {
		remove = netns.RemoveAllRuns
	}
	removed, err := remove()
	for _, name := range removed {
		fmt.Println("removed", name)
	}
	if err != nil {
		log.Fatal(err)
	}
}
