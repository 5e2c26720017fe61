// Package wireshark tests the EtherGM Wireshark dissector
// (wire/wireshark/ethergm.lua) against package wire, and the pcapng
// captures that the capture package and cmd/gm_frames produce.
//
// # Tests
//
// The unit tests need no privileges, only tshark: they build frames with
// package wire (the sample of cmd/gm_frames/frameset, and deliberately broken
// frames), write them to pcapng with package capture, run
//
//	tshark -X lua_script:wire/wireshark/ethergm.lua -r FILE -T pdml
//
// and compare, frame by frame, every ethergm.* field, the expert infos and
// the Info column with what package wire decodes from the same bytes.
// TestIntegrationDissector does the same for real traffic: gm_frames sends
// the sample from one host of a two-host network-namespace cluster while
// tshark captures in the other, and both captures (tshark's and gm_frames'
// own --pcap file) are checked.
//
// The tests skip when tshark is missing, unless ETHERGM_REQUIRE_TSHARK=1 or
// ETHERGM_REQUIRE_NETNS=1 is set (make test sets the latter), in which case
// they fail. With ETHERGM_UPDATE_EXAMPLE=1, TestDissectorSample rewrites the
// example capture wire/wireshark/testdata/example.pcapng.
//
// screenshot.sh in this directory renders docs/img/wireshark.png: Wireshark
// under Xvfb showing the example capture decoded.
package wireshark
