//go:build pprof

package main

import (
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof/ on http.DefaultServeMux
	"os"
)

// A binary built with -tags pprof serves Go's profiles on the loopback
// address PPROF_ADDR names, for the benchmarks that profile a running
// daemon (BenchmarkFleetProcess, when asked for profiles). Release
// builds hold none of it.
func init() {
	addr := os.Getenv("PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		log.Fatalf("PPROF_ADDR %q is not a loopback host:port", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("PPROF_ADDR: %v", err)
	}
	go func() { _ = http.Serve(ln, nil) }()
}
