// Package nemesis holds the nemesis: a netns test (TestIntegrationNemesis)
// in which dual-rail hosts run verified streams at both priorities between
// separate sending and receiving processes (command tests/nemesis/peer)
// while a seeded schedule kills and restarts those processes and the
// gm_mappers, cuts and restores rails, partitions the hosts and heals them,
// and impairs links through the relay; a checker holds every stream to GM's
// contract (docs/RELIABILITY.md, "The nemesis").
package nemesis
