package gm_test

import (
	"testing"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
)

// TestIntegrationPages: puts and gets by virtual address between two
// network namespaces: mmap'd memory of the target registered as two
// adjacent registrations, a put and a get that span both, a put into a
// deregistered page refused (pagesScenario).
func TestIntegrationPages(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, func(c *gm.Config) { c.VirtualAddresses = true })
	pagesScenario(t, pr.a, pr.b, pr.bn)
}
