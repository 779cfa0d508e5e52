package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

// BenchmarkFleetProcess runs `ticketbridge run` as a process of its own,
// the reference server in the benchmark's process: first a daemon of one
// hotel (no hotels directory), then a daemon of 200 hotels
// (TICKETBRIDGE_FLEET_HOTELS) of 100 requests each
// (TICKETBRIDGE_FLEET_TICKETS), every hotel on a files helpdesk of its own,
// @every 2s. After the import it counts the daemon's CPU time (utime +
// stime of its /proc stat) and its cycles (its metrics) over 20 s of quiet
// cycles (a minute for the one hotel), and reports the CPU per hotel-cycle of both daemons and their
// ratio, the daemon's peak RSS (VmHWM: the reference server is not in it)
// and the peak of its anonymous part (RssAnon, sampled every 200 ms: the
// rest is file pages, the binary and the bbolt files it maps).
//
//	go test -run '^$' -bench BenchmarkFleetProcess -benchtime 1x ./cmd/ticketbridge/
func BenchmarkFleetProcess(b *testing.B) {
	hotels := benchEnvInt(b, "TICKETBRIDGE_FLEET_HOTELS", 200)
	tickets := benchEnvInt(b, "TICKETBRIDGE_FLEET_TICKETS", 100)
	bin := filepath.Join(b.TempDir(), "ticketbridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for b.Loop() {
		one := runFleetProcess(b, bin, 1, tickets, false)
		many := runFleetProcess(b, bin, hotels, tickets, true)
		b.ReportMetric(float64(one.cpuPerCycle.Microseconds()), "cpu-us/cycle-one-hotel")
		b.ReportMetric(float64(many.cpuPerCycle.Microseconds()), "cpu-us/hotel-cycle")
		b.ReportMetric(float64(many.cpuPerCycle)/float64(one.cpuPerCycle), "cpu-ratio")
		b.ReportMetric(float64(one.hwm)/(1<<20), "RSS-MB-one-hotel")
		b.ReportMetric(float64(many.hwm)/(1<<20), "RSS-MB")
		b.ReportMetric(float64(many.anon)/(1<<20), "RssAnon-MB")
		b.ReportMetric(many.importTook.Seconds(), "import-s")
	}
}

type fleetProcessFigures struct {
	cpuPerCycle time.Duration
	hwm, anon   int64
	importTook  time.Duration
}

// runFleetProcess runs a daemon of hotels hotels (through a hotels
// directory when dirMode, else one hotel of the main configuration) and
// measures it.
func runFleetProcess(b *testing.B, bin string, hotels, tickets int, dirMode bool) fleetProcessFigures {
	b.Helper()
	ts := refservertest.New(b)
	dir := b.TempDir()
	hotelsDir := filepath.Join(dir, "hotels.d")
	if err := os.Mkdir(hotelsDir, 0o700); err != nil {
		b.Fatal(err)
	}
	listen := freeAddr(b)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"TICKETBRIDGE_API_URL=" + ts.URL, "TICKETBRIDGE_ADAPTER=files", "TICKETBRIDGE_FILES_SETTLE=0s",
		"TICKETBRIDGE_STATE=" + filepath.Join(dir, "state", "main.db"), "TICKETBRIDGE_LOG_FORMAT=json",
		"TICKETBRIDGE_LOG_LEVEL=warn", "TICKETBRIDGE_SCHEDULE=@every 2s", "TICKETBRIDGE_LISTEN=" + listen}
	var filesDirs []string
	for i := range hotels {
		name := fmt.Sprintf("hotel-%03d", i)
		org := uuid.NewString()
		if err := ts.Server.AddOrganization(org, "hotel"); err != nil {
			b.Fatal(err)
		}
		k, err := ts.Server.IssueKey(org, refserver.KeySpec{Name: "bridge", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
		if err != nil {
			b.Fatal(err)
		}
		keyFile := filepath.Join(dir, name+".key")
		if err := os.WriteFile(keyFile, []byte(k.Value+"\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		filesDir := filepath.Join(dir, "helpdesk", name)
		filesDirs = append(filesDirs, filesDir)
		vars := "TICKETBRIDGE_API_KEY_FILE=" + keyFile + "\nTICKETBRIDGE_FILES_DIR=" + filesDir + "\n"
		if dirMode {
			if err := os.WriteFile(filepath.Join(hotelsDir, name+".env"), []byte(vars), 0o600); err != nil {
				b.Fatal(err)
			}
		} else {
			env = append(env, strings.Split(strings.TrimSpace(vars), "\n")...)
		}
		for j := range tickets {
			tv, err := ts.Server.CreateTicket(org, refserver.NewTicket{
				Department: fmt.Sprintf("dept%d", j%5), TaskDescription: fmt.Sprintf("request %d of %s: towels for room %d", j, name, 100+j),
			})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "could we have two more towels, please?"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if dirMode {
		env = append(env, "TICKETBRIDGE_HOTELS_DIR="+hotelsDir)
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
	var anonPeak atomic.Int64
	stopSampling := make(chan struct{})
	go func() {
		for {
			if v := procStatus(cmd.Process.Pid, "RssAnon:"); v > anonPeak.Load() {
				anonPeak.Store(v)
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
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
		if b.Failed() {
			b.Logf("daemon output:\n%s", logs.String())
		}
	}()

	// The import: every hotel's helpdesk holds every request.
	waitFor(b, 20*time.Minute, done, func() bool {
		for _, d := range filesDirs {
			if des, _ := os.ReadDir(filepath.Join(d, "tickets")); len(des) < tickets {
				return false
			}
		}
		return true
	})
	f := fleetProcessFigures{importTook: time.Since(start)}
	// Let the cycle in flight end, then count quiet cycles.
	time.Sleep(3 * time.Second)
	// One hotel's quiet cycles take a few milliseconds and the kernel
	// counts CPU in 10 ms ticks: it is watched longer.
	window := 20 * time.Second
	if hotels == 1 {
		window = time.Minute
	}
	_, c0 := scrapeCounts(b, listen)
	cpu0 := procCPU(b, cmd.Process.Pid)
	time.Sleep(window)
	_, c1 := scrapeCounts(b, listen)
	cpu1 := procCPU(b, cmd.Process.Pid)
	if c1 <= c0 {
		b.Fatalf("no cycle in %s (%v -> %v)", window, c0, c1)
	}
	f.cpuPerCycle = time.Duration(float64(cpu1-cpu0) / (c1 - c0))
	f.hwm = procStatus(cmd.Process.Pid, "VmHWM:")
	f.anon = anonPeak.Load()
	return f
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
