package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// BenchmarkFleetProcess runs `ticketbridge run` as a process of its own,
// the reference server as another (`ticketbridge refserver --seed`), so
// that the daemon's figures are its own: first a daemon of one hotel (no
// hotels directory), then a daemon of 200 hotels
// (TICKETBRIDGE_FLEET_HOTELS) of 100 requests each
// (TICKETBRIDGE_FLEET_TICKETS), every hotel on a files helpdesk of its own,
// @every 2s (TICKETBRIDGE_FLEET_SCHEDULE), once with the state in bbolt
// files and once in PostgreSQL (when TICKETBRIDGE_TEST_POSTGRES names a
// test database; it skips otherwise). Once every hotel ended the two
// cycles after its import (settled-s: the first serves the ticks skipped
// while the import ran, and its lag is the import's; the second is the
// first quiet one, which stores its cycle record), it counts the daemon's CPU
// time (utime + stime of its /proc stat) and its cycles (its
// metrics) over quiet cycles (20 s or two intervals, whichever is longer;
// a minute at least for the one hotel), and reports the CPU per
// hotel-cycle of both daemons and their ratio, the daemon's CPU as a share
// of one core, its peak RSS (VmHWM), the peak of its anonymous part
// (RssAnon, sampled every 200 ms: the rest is file pages, the binary and
// the bbolt files it maps) in all and per hotel and when it came
// (RssAnon-peak-at-s, from the daemon's start), RssAnon per hotel at the
// end of the quiet window (the import's peak behind it), the cycle lag's
// 99th percentile over every hotel-cycle of the window
// (ticketbridge_cycle_lag_seconds, interpolated in its bucket) and the share
// of them over 5 s, the import's
// time, and the state's round trips per hotel-cycle: for bbolt its fsyncs
// (two per committed write transaction, read from the files' meta pages),
// for PostgreSQL the client's turns on the wire, counted by a proxy between
// the daemon and the database.
//
// TICKETBRIDGE_FLEET_PROFILE names a folder (made when missing) for the
// many-hotel daemon's profiles: the binary is then built with -tags
// pprof, and the folder gets
// a CPU profile of the quiet window (cpu-BACKEND.prof) and heap profiles
// at its start and end (heap-BACKEND-base.prof, heap-BACKEND.prof: the
// window's allocations are their difference, go tool pprof -base), for go
// tool pprof; and, as text, the runtime's memory accounts
// (memstats-BACKEND.txt), the goroutines (goroutines-BACKEND.txt) and the
// kernel's account of its mappings (smaps-BACKEND.txt) at the window's
// end.
//
//	go test -run '^$' -bench BenchmarkFleetProcess -benchtime 1x ./cmd/ticketbridge/
//	TICKETBRIDGE_FLEET_HOTELS=2000 TICKETBRIDGE_FLEET_SCHEDULE='@every 30s' \
//	    go test -run '^$' -bench 'BenchmarkFleetProcess/bbolt' -benchtime 1x -timeout 2h ./cmd/ticketbridge/
func BenchmarkFleetProcess(b *testing.B) {
	hotels := testutil.EnvInt(b, "TICKETBRIDGE_FLEET_HOTELS", 200)
	tickets := testutil.EnvInt(b, "TICKETBRIDGE_FLEET_TICKETS", 100)
	schedule, _ := benchSchedule(b, "@every 2s")
	bin := filepath.Join(b.TempDir(), "ticketbridge")
	build := []string{"build", "-o", bin}
	if dir := os.Getenv("TICKETBRIDGE_FLEET_PROFILE"); dir != "" {
		// Made now: a folder that cannot be made fails the run at its
		// start, not after twenty minutes of it.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatalf("TICKETBRIDGE_FLEET_PROFILE: %v", err)
		}
		build = append(build, "-tags", "pprof")
	}
	if out, err := exec.Command("go", append(build, ".")...).CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, backend := range []string{"bbolt", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			if backend == "postgres" && os.Getenv(statetest.Env) == "" {
				b.Skip(statetest.SkipMessage)
			}
			for b.Loop() {
				one := runFleetProcess(b, bin, backend, 1, tickets, false)
				many := runFleetProcess(b, bin, backend, hotels, tickets, true)
				b.Logf("%s, %d hotels of %d requests, %s: lag p99 %.2f s (one hotel %.2f s), CPU %.1f %% of a core, RssAnon %.0f KB a hotel, import %.1f s",
					backend, hotels, tickets, schedule, many.lagP99, one.lagP99, many.cpuPct, float64(many.anon)/1024/float64(hotels), many.importTook.Seconds())
				b.ReportMetric(float64(one.cpuPerCycle.Microseconds()), "cpu-us/cycle-one-hotel")
				b.ReportMetric(float64(many.cpuPerCycle.Microseconds()), "cpu-us/hotel-cycle")
				if one.cpuPerCycle > 0 {
					b.ReportMetric(float64(many.cpuPerCycle)/float64(one.cpuPerCycle), "cpu-ratio")
				} else {
					// At a long schedule one hotel's minute holds too few
					// cycles for the kernel's 10 ms ticks of CPU time.
					b.Log("one hotel's CPU per cycle is under the resolution of its window: no ratio")
				}
				b.ReportMetric(many.cpuPct, "cpu-pct-of-core")
				b.ReportMetric(float64(one.hwm)/(1<<20), "RSS-MB-one-hotel")
				b.ReportMetric(float64(many.hwm)/(1<<20), "RSS-MB")
				b.ReportMetric(float64(many.anon)/(1<<20), "RssAnon-MB")
				b.ReportMetric(float64(many.anon)/1024/float64(hotels), "RssAnon-KB/hotel")
				b.ReportMetric(float64(many.quietAnon)/1024/float64(hotels), "RssAnon-KB/hotel-quiet")
				b.ReportMetric(many.anonAt.Seconds(), "RssAnon-peak-at-s")
				b.ReportMetric(many.lagP99, "lag-p99-s")
				b.ReportMetric(many.apiPerCycle, "api-requests/hotel-cycle")
				b.ReportMetric(one.lagP99, "lag-p99-s-one-hotel")
				b.ReportMetric(many.importTook.Seconds(), "import-s")
				b.ReportMetric(many.settled.Seconds(), "settled-s")
				b.ReportMetric(100*many.lagOver5, "lag-over-5s-pct")
				unit := "fsyncs/hotel-cycle"
				if backend == "postgres" {
					unit = "round-trips/hotel-cycle"
				}
				b.ReportMetric(one.stateTrips, unit+"-one-hotel")
				b.ReportMetric(many.stateTrips, unit)
			}
		})
	}
}

type fleetProcessFigures struct {
	cpuPerCycle time.Duration
	// cpuPct is the daemon's CPU over the quiet window, in percent of one
	// core.
	cpuPct    float64
	hwm, anon int64
	anonAt    time.Duration // when anon's peak came, from the start
	// quietAnon is RssAnon at the end of the quiet window: the import's
	// peak is behind it.
	quietAnon  int64
	importTook time.Duration
	// apiPerCycle is the API requests per hotel-cycle of the window.
	apiPerCycle float64
	// stateTrips is the state's round trips per hotel-cycle (see
	// BenchmarkFleetProcess).
	stateTrips float64
	// lagP99 is the 99th percentile of the cycle lag over the hotel-cycles
	// that ended in the quiet window, in seconds.
	lagP99 float64
	// lagOver5 is the share of those hotel-cycles whose lag was over 5 s.
	lagOver5 float64
	// settled is the time from the start until every hotel ended the
	// cycle after its first.
	settled time.Duration
}

// runFleetProcess runs a daemon of hotels hotels (through a hotels
// directory when dirMode, else one hotel of the main configuration) with
// its state on backend, and measures it.
func runFleetProcess(b *testing.B, bin, backend string, hotels, tickets int, dirMode bool) fleetProcessFigures {
	b.Helper()
	schedule, interval := benchSchedule(b, "@every 2s")
	dir := b.TempDir()
	hotelsDir := filepath.Join(dir, "hotels.d")
	if err := os.Mkdir(hotelsDir, 0o700); err != nil {
		b.Fatal(err)
	}
	seed, hs := writeBenchHotels(b, dir, map[bool]string{true: hotelsDir}[dirMode], hotels, tickets)
	apiURL := startRefserverProcess(b, bin, seed)
	listen := freeAddr(b)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"TICKETBRIDGE_API_URL=" + apiURL, "TICKETBRIDGE_ADAPTER=files", "TICKETBRIDGE_FILES_SETTLE=0s",
		"TICKETBRIDGE_LOG_FORMAT=json",
		"TICKETBRIDGE_LOG_LEVEL=warn", "TICKETBRIDGE_SCHEDULE=" + schedule, "TICKETBRIDGE_LISTEN=" + listen}
	var (
		proxy      *pgProxy
		stateFiles []string
	)
	if backend == "postgres" {
		proxy = newPGProxy(b, statetest.PostgresURL(b))
		env = append(env, "TICKETBRIDGE_STATE="+proxy.url)
	} else {
		env = append(env, "TICKETBRIDGE_STATE="+filepath.Join(dir, "state", "main.db"))
		if !dirMode {
			stateFiles = append(stateFiles, filepath.Join(dir, "state", "main.db"))
		}
	}
	var filesDirs []string
	for _, h := range hs {
		filesDirs = append(filesDirs, h.filesDir)
		if backend == "bbolt" && dirMode {
			stateFiles = append(stateFiles, filepath.Join(dir, "state", "hotels", h.name+".db"))
		}
		if !dirMode {
			env = append(env, "TICKETBRIDGE_API_KEY_FILE="+h.keyFile, "TICKETBRIDGE_FILES_DIR="+h.filesDir)
		}
	}
	if dirMode {
		env = append(env, "TICKETBRIDGE_HOTELS_DIR="+hotelsDir)
	}
	profiles, pprofAddr := os.Getenv("TICKETBRIDGE_FLEET_PROFILE"), ""
	if profiles != "" && dirMode {
		pprofAddr = freeAddr(b)
		env = append(env, "PPROF_ADDR="+pprofAddr)
	}

	cmd := exec.Command(bin, "run")
	cmd.Env = env
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// done is closed when the daemon has exited, so that every waiter sees it.
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	// anonPeakAt is when the peak came, in milliseconds from the start:
	// in the import, or after it.
	var anonPeak, anonPeakAt atomic.Int64
	stopSampling := make(chan struct{})
	go func() {
		for {
			if v := procStatus(cmd.Process.Pid, "RssAnon:"); v > anonPeak.Load() {
				anonPeak.Store(v)
				anonPeakAt.Store(time.Since(start).Milliseconds())
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	defer func() {
		close(stopSampling)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(time.Minute): // a hang's report, not a timing
			_ = cmd.Process.Kill()
			<-done
		}
		if b.Failed() {
			b.Logf("daemon output:\n%s", logs.String())
		}
	}()

	// The import: every hotel's helpdesk holds every request.
	waitFor(b, 2*time.Hour, done, func() bool {
		for _, d := range filesDirs {
			if des, _ := os.ReadDir(filepath.Join(d, "tickets")); len(des) < tickets {
				return false
			}
		}
		return true
	})
	f := fleetProcessFigures{importTook: time.Since(start)}
	// Let every hotel end its first cycle (the import, whose lag counts
	// from the daemon's start), the one after, which serves the ticks
	// skipped while the import ran, and the first quiet one, which stores
	// its cycle record (the next is ten minutes on), then count quiet
	// cycles. (Polled every 2 s: the metrics of 2,000 hotels are
	// megabytes.)
	for settled := false; !settled; {
		select {
		case <-done:
			b.Fatal("the daemon exited")
		case <-time.After(2 * time.Second):
		}
		_, ended := scrapeMetrics(b, listen)
		settled = len(ended) >= hotels
		for _, n := range ended {
			settled = settled && n >= 3
		}
	}
	f.settled = time.Since(start)
	time.Sleep(max(3*time.Second, interval))
	// One hotel's quiet cycles take a few milliseconds and the kernel
	// counts CPU in 10 ms ticks: it is watched longer.
	window := max(20*time.Second, 2*interval)
	if hotels == 1 {
		window = max(time.Minute, window)
	}
	trips := func() int64 {
		if proxy != nil {
			return proxy.turns.Load()
		}
		var fsyncs int64
		for _, p := range stateFiles {
			fsyncs += 2 * boltTxID(b, p) // each commit syncs its pages, then its meta page
		}
		return fsyncs
	}
	r0, c0 := scrapeCounts(b, listen)
	lag0, _ := scrapeMetrics(b, listen)
	if pprofAddr != "" {
		// The window's allocations are heap-BACKEND.prof less this one
		// (go tool pprof -base).
		saveProfile(b, pprofAddr, "heap", filepath.Join(profiles, "heap-"+backend+"-base.prof"))
	}
	cpu0, t0 := procCPU(b, cmd.Process.Pid), trips()
	if pprofAddr != "" {
		// The profile spans the window; its request returns at its end.
		saveProfile(b, pprofAddr, fmt.Sprintf("profile?seconds=%d", int(window.Seconds())), filepath.Join(profiles, "cpu-"+backend+".prof"))
	} else {
		time.Sleep(window)
	}
	cpu1, t1 := procCPU(b, cmd.Process.Pid), trips()
	if pprofAddr != "" {
		saveProfile(b, pprofAddr, "heap", filepath.Join(profiles, "heap-"+backend+".prof"))
		// The runtime's own accounts (stacks, spans, the heap's idle
		// part) and the goroutines, as text.
		saveProfile(b, pprofAddr, "heap?debug=1", filepath.Join(profiles, "memstats-"+backend+".txt"))
		saveProfile(b, pprofAddr, "goroutine?debug=1", filepath.Join(profiles, "goroutines-"+backend+".txt"))
		// And the kernel's account of the process's mappings, for what
		// the runtime's accounts do not hold.
		if smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", cmd.Process.Pid)); err == nil {
			_ = os.WriteFile(filepath.Join(profiles, "smaps-"+backend+".txt"), smaps, 0o644)
		}
	}
	r1, c1 := scrapeCounts(b, listen)
	lag1, _ := scrapeMetrics(b, listen)
	if c1 <= c0 {
		b.Fatalf("no cycle in %s (%v -> %v)", window, c0, c1)
	}
	f.cpuPerCycle = time.Duration(float64(cpu1-cpu0) / (c1 - c0))
	f.cpuPct = 100 * float64(cpu1-cpu0) / float64(window)
	f.stateTrips = float64(t1-t0) / (c1 - c0)
	f.apiPerCycle = (r1 - r0) / (c1 - c0)
	f.lagP99 = lag1.quantile(lag0, 0.99)
	f.lagOver5 = lag1.overBound(lag0, 5)
	f.hwm = procStatus(cmd.Process.Pid, "VmHWM:")
	f.anon, f.anonAt = anonPeak.Load(), time.Duration(anonPeakAt.Load())*time.Millisecond
	f.quietAnon = procStatus(cmd.Process.Pid, "RssAnon:")
	return f
}

// saveProfile fetches /debug/pprof/<which> from a daemon built with -tags
// pprof into path.
func saveProfile(b *testing.B, addr, which, path string) {
	b.Helper()
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + which)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("profile %s: %v %s", which, err, resp.Status)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("profile: %s", path)
}

// procCPU is the user and system time process pid has used.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	body, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name may hold spaces: the fields start after its ')'.
	fields := strings.Fields(string(body[strings.LastIndexByte(string(body), ')')+1:]))
	// utime and stime are fields 14 and 15 of the line, 12 and 13 here.
	ut, err1 := strconv.ParseInt(fields[11], 10, 64)
	st, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("read %d's CPU time: %v %v", pid, err1, err2)
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticksPerSecond
}

// pgProxy forwards connections to a PostgreSQL server and counts the
// client's turns: each time the client writes after the server answered
// (or first), one round trip begins. Cut makes the database unreachable
// (every connection dropped, new ones closed at once) until Restore.
type pgProxy struct {
	url   string // the database's URL, through the proxy
	turns atomic.Int64

	mu    gosync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func newPGProxy(tb testing.TB, dbURL string) *pgProxy {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	u.Host = ln.Addr().String()
	p := &pgProxy{url: u.String(), conns: map[net.Conn]bool{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c, target)
		}
	}()
	return p
}

// track adds c to the connections Cut drops; false when the proxy is cut.
func (p *pgProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *pgProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// Cut drops every connection and refuses new ones until Restore.
func (p *pgProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore lets connections through again.
func (p *pgProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func (p *pgProxy) serve(client net.Conn, target string) {
	defer client.Close()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	var clientTurn atomic.Bool // the client is writing: its turn was counted
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				clientTurn.Store(false)
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				_ = client.Close()
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if !clientTurn.Swap(true) {
				p.turns.Add(1)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
