package rdsoverdat

import (
	"testing"

	"github.com/godapl/godapl/verbs/mem"
)

// The issue-5 figures of the dat transport over soft-iWARP on loopback
// (and over the in-memory provider, the transport's own cost), to be
// read against BenchmarkRawTCP* of the same run:
//
//	go test ./rdsoverdat -run '^$' -bench 'RDSDAT|RawTCP' -benchmem -count 3
//
// Targets: 64 KiB throughput >= 70 % of raw TCP, 64 B round trip <= 2x
// raw TCP, 0 allocs/op.

func datBenchCfg() Config { return Config{Transports: []Transport{DAT(DATConfig{})}} }
func datMemBenchCfg() Config {
	return Config{Transports: []Transport{DAT(DATConfig{Registry: registryOn(mem.New()), IA: "mem"})}}
}

func BenchmarkRDSDATRate64(b *testing.B)     { benchStream(b, datBenchCfg(), 64) }
func BenchmarkRDSDATTput4K(b *testing.B)     { benchStream(b, datBenchCfg(), 4096) }
func BenchmarkRDSDATTput64K(b *testing.B)    { benchStream(b, datBenchCfg(), 65536) }
func BenchmarkRDSDATRTT64(b *testing.B)      { benchRTT(b, datBenchCfg()) }
func BenchmarkRDSDATMemRate64(b *testing.B)  { benchStream(b, datMemBenchCfg(), 64) }
func BenchmarkRDSDATMemTput64K(b *testing.B) { benchStream(b, datMemBenchCfg(), 65536) }
func BenchmarkRDSDATMemRTT64(b *testing.B)   { benchRTT(b, datMemBenchCfg()) }

// 1 MiB messages: 256 fragments each, four times the default window, so
// the stream runs on credits coming back while the message is sent.
func BenchmarkRDSDATTput1M(b *testing.B)    { benchStream(b, datBenchCfg(), 1<<20) }
func BenchmarkRDSDATMemTput1M(b *testing.B) { benchStream(b, datMemBenchCfg(), 1<<20) }

// The 64 KiB stream with a 1 MiB receive window (256 credits) instead of
// the default 64, to show what the window costs.
func BenchmarkRDSDATTput64KWide(b *testing.B) {
	benchStream(b, Config{Transports: []Transport{DAT(DATConfig{ConnCredits: 256})}}, 65536)
}
