package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

// BenchmarkPropagation measures how long a change takes to cross, with the
// daemon (`ticketbridge run`, built by the benchmark, the files helpdesk)
// as a process of its own at TICKETBRIDGE_SCHEDULE=@every 1s, against the
// reference server in the benchmark's process, for each size of the open
// queue (500 and 5,000 tracked open requests, in new, assigned and
// in_progress over ten departments, or more so that each status of a
// department holds fewer than 200: a list shows no more;
// TICKETBRIDGE_BENCH_SIZES=500,5000,10000 chooses other sizes).
//
// It prints the p50 and p95, in seconds, of a guest message reaching the
// helpdesk (guest-…), a status set in the hotel's console reaching the
// helpdesk (console-…) and an agent reply dropped into the outbox reaching
// the API (agent-…), on requests active a moment before (…-active-…) and on
// requests quiet for longer than TICKETBRIDGE_QUIET_MAX (…-quiet-…; 5 s
// here, so that the run is short), 20 of each; the API requests a quiet
// cycle makes (requests/quiet-cycle) beside the bound the design promises
// (bound/quiet-cycle: the list calls that cover the open queue, plus the
// open requests over the full-read interval's cycles, plus one) and the
// lists of the four closed statuses the bound leaves out; and the daemon's
// own peak RSS (VmHWM of its process; the reference server is not in it),
// with the peak of its anonymous part (RssAnon, sampled every 200 ms: the
// rest is file pages, mostly the state file bbolt maps, which the kernel
// shares with its page cache and can drop). The outbox is read without
// TICKETBRIDGE_FILES_SETTLE's wait.
//
//	go test -run '^$' -bench BenchmarkPropagation -benchtime 1x ./cmd/ticketbridge/
func BenchmarkPropagation(b *testing.B) {
	sizes := []int{500, 5000}
	if v := os.Getenv("TICKETBRIDGE_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 100 {
				b.Fatalf("TICKETBRIDGE_BENCH_SIZES=%q: want sizes of 100 or more, comma separated", v)
			}
			sizes = append(sizes, n)
		}
	}
	bin := filepath.Join(b.TempDir(), "ticketbridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("open=%d", n), func(b *testing.B) { benchPropagation(b, bin, n) })
	}
}

const (
	benchSamples  = 20
	benchQuietMax = 5 * time.Second
	benchFullRead = 10 * time.Minute
	benchWaitMax  = 60 * time.Second
)

// benchDepartments spreads n requests so that no department holds 200 of
// one status.
func benchDepartments(n int) int { return max(10, (n+499)/500) }

func benchPropagation(b *testing.B, bin string, n int) {
	rnd := rand.New(rand.NewPCG(uint64(n), 11))
	ts := refservertest.New(b)
	dir := b.TempDir()
	hdDir := filepath.Join(dir, "helpdesk")
	open := []guestapi.Status{guestapi.StatusNew, guestapi.StatusAssigned, guestapi.StatusInProgress}
	ids := make([]string, 0, n)
	created := time.Now().Add(-time.Duration(n) * time.Second)
	for i := range n {
		tv, err := ts.Server.CreateTicket(ts.Org, refserver.NewTicket{
			Department: fmt.Sprintf("dept%02d", i%benchDepartments(n)), Status: open[i%len(open)],
			TaskDescription: fmt.Sprintf("request %d: towels for room %d", i, 100+rnd.IntN(900)),
			CreatedAt:       created.Add(time.Duration(i) * time.Second),
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ts.Server.AddMessage(tv.ID, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: fmt.Sprintf("could we have towels for request %d?", i)}); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, tv.ID)
	}

	listen := freeAddr(b)
	cmd := exec.Command(bin, "run")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"TICKETBRIDGE_API_URL=" + ts.URL, "TICKETBRIDGE_API_KEY=" + ts.Keys.TicketsWrite,
		"TICKETBRIDGE_ADAPTER=files", "TICKETBRIDGE_FILES_DIR=" + hdDir, "TICKETBRIDGE_FILES_SETTLE=0s",
		"TICKETBRIDGE_STATE=" + filepath.Join(dir, "state.db"), "TICKETBRIDGE_LOG_FORMAT=json", "TICKETBRIDGE_LOG_LEVEL=warn",
		"TICKETBRIDGE_SCHEDULE=@every 1s", "TICKETBRIDGE_BACKFILL=assigned,in_progress", "TICKETBRIDGE_CONCURRENCY=8",
		"TICKETBRIDGE_QUIET_MAX=" + benchQuietMax.String(), "TICKETBRIDGE_FULL_READ_INTERVAL=" + benchFullRead.String(),
		"TICKETBRIDGE_LISTEN=" + listen}
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	importStart := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// done is closed when the daemon has exited, so that every waiter sees it.
	done := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(done) }()
	var anonPeak atomic.Int64
	go func() {
		for {
			if v := procStatus(cmd.Process.Pid, "RssAnon:"); v > anonPeak.Load() {
				anonPeak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if b.Failed() {
			b.Logf("daemon (%v) output:\n%s", exitErr, logs.String())
		}
	}()

	// Import: every request has its folder.
	folders := map[string]string{}
	waitFor(b, 10*time.Minute, done, func() bool {
		des, _ := os.ReadDir(filepath.Join(hdDir, "tickets"))
		if len(des) < n {
			return false
		}
		byShort := map[string]string{}
		for _, de := range des {
			name := de.Name()
			if len(name) >= 8 {
				byShort[name[len(name)-8:]] = name
			}
		}
		for _, id := range ids {
			folders[id] = byShort[id[:8]]
		}
		return true
	})
	importTook := time.Since(importStart)
	// Quiet: nothing happens for longer than QUIET_MAX.
	time.Sleep(benchQuietMax + 2*time.Second)

	// A quiet cycle's requests, from the daemon's own metrics.
	req0, cyc0 := scrapeCounts(b, listen)
	time.Sleep(10 * time.Second)
	req1, cyc1 := scrapeCounts(b, listen)
	perQuiet := (req1 - req0) / max(1, cyc1-cyc0)

	perm := rnd.Perm(n)
	pick := func(k int) []string {
		out := make([]string, 0, k)
		for _, i := range perm[:k] {
			out = append(out, ids[i])
		}
		perm = perm[k:]
		return out
	}
	quiet := [3][]string{pick(benchSamples), pick(benchSamples), pick(benchSamples)}
	active := [3][]string{pick(benchSamples), pick(benchSamples), pick(benchSamples)}

	measure := func(name string, set [3][]string) {
		b.Helper()
		guest := propagate(b, done, set[0], func(id string) func() bool {
			m, err := ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "one more towel, please"})
			if err != nil {
				b.Error(err)
			}
			return func() bool {
				return folderHas(hdDir, folders[id], func(tj benchTicket) bool { return tj.hasUpstream(m.ID) })
			}
		})
		console := propagate(b, done, set[1], func(id string) func() bool {
			to := guestapi.StatusCancelled
			if rnd.IntN(2) == 0 {
				to = guestapi.StatusDone
			}
			if err := ts.Server.SetStatus(id, to); err != nil {
				b.Error(err)
			}
			return func() bool {
				return folderHas(hdDir, folders[id], func(tj benchTicket) bool { return tj.Status == string(to) })
			}
		})
		agent := propagate(b, done, set[2], func(id string) func() bool {
			body := "Towels are on their way, " + id[:8]
			dropOutbox(b, hdDir, "reply-"+id+".txt", "ticket: "+folders[id]+"\nkind: reply\nauthor: Front desk\n\n"+body+"\n")
			return func() bool {
				v, err := ts.Server.Ticket(id)
				if err != nil {
					return false
				}
				return slices.ContainsFunc(v.Messages, func(m refserver.InternalMessage) bool { return m.Body == body })
			}
		})
		for _, r := range []struct {
			what string
			d    []time.Duration
		}{{"guest", guest}, {"console", console}, {"agent", agent}} {
			b.ReportMetric(pct(r.d, 50).Seconds(), r.what+"-"+name+"-p50-s")
			b.ReportMetric(pct(r.d, 95).Seconds(), r.what+"-"+name+"-p95-s")
		}
	}
	measure("quiet", quiet)
	// Active: written on a moment ago.
	for _, set := range active {
		propagate(b, done, set, func(id string) func() bool {
			m, err := ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "hello again"})
			if err != nil {
				b.Error(err)
			}
			return func() bool {
				return folderHas(hdDir, folders[id], func(tj benchTicket) bool { return tj.hasUpstream(m.ID) })
			}
		})
	}
	measure("active", active)

	lists := benchListCalls(n)
	b.ReportMetric(perQuiet, "requests/quiet-cycle")
	b.ReportMetric(float64(lists.open)+float64(n)/(benchFullRead.Seconds()/1)+1, "bound/quiet-cycle")
	b.ReportMetric(float64(lists.closed), "closed-lists/cycle")
	b.ReportMetric(importTook.Seconds(), "import-s")
	b.ReportMetric(float64(procStatus(cmd.Process.Pid, "VmHWM:"))/(1<<20), "daemon-peak-RSS-MiB")
	b.ReportMetric(float64(anonPeak.Load())/(1<<20), "daemon-peak-anon-MiB")
}

// benchListCalls is what listing the benchmark's queue costs: the open
// statuses (one list each, and one per department when a list is full)
// and the four closed ones.
func benchListCalls(n int) (c struct{ open, closed int }) {
	perStatus := n / 3
	for range 3 {
		c.open++
		if perStatus >= 200 {
			c.open += benchDepartments(n)
		}
	}
	c.closed = 4
	return c
}

// propagate makes one change on each ticket of set, at moments spread over
// three seconds, and returns how long each took to be seen: change makes
// it and returns the test of its arrival.
func propagate(b *testing.B, done <-chan struct{}, set []string, change func(id string) func() bool) []time.Duration {
	b.Helper()
	var (
		mu  gosync.Mutex
		out []time.Duration
		wg  gosync.WaitGroup
	)
	for i, id := range set {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 3 * time.Second / time.Duration(len(set)))
			at := time.Now()
			seen := change(id)
			for time.Since(at) < benchWaitMax {
				if seen() {
					mu.Lock()
					out = append(out, time.Since(at))
					mu.Unlock()
					return
				}
				select {
				case <-done:
					b.Error("the daemon exited")
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
			b.Errorf("ticket %s: the change did not cross within %s", id, benchWaitMax)
		}()
	}
	wg.Wait()
	if len(out) == 0 {
		b.FailNow()
	}
	return out
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

type benchTicket struct {
	Status string `json:"status"`
	Thread []struct {
		UpstreamID string `json:"upstream_id"`
	} `json:"thread"`
}

func (t benchTicket) hasUpstream(id string) bool {
	return slices.ContainsFunc(t.Thread, func(e struct {
		UpstreamID string `json:"upstream_id"`
	}) bool {
		return e.UpstreamID == id
	})
}

func folderHas(hdDir, folder string, ok func(benchTicket) bool) bool {
	body, err := os.ReadFile(filepath.Join(hdDir, "tickets", folder, "ticket.json"))
	if err != nil {
		return false
	}
	var t benchTicket
	return json.Unmarshal(body, &t) == nil && ok(t)
}

func waitFor(b *testing.B, limit time.Duration, done <-chan struct{}, ok func() bool) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			b.Fatalf("not reached within %s", limit)
		}
		select {
		case <-done:
			b.Fatal("the daemon exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// scrapeCounts returns the daemon's API requests and cycles so far.
func scrapeCounts(b *testing.B, addr string) (requests, cycles float64) {
	b.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		switch name {
		case "ticketbridge_api_requests_total":
			requests += v
		case "ticketbridge_cycles_total":
			cycles += v
		}
	}
	return requests, cycles
}

func freeAddr(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// procStatus returns a size field (VmHWM:, RssAnon:, ...) of process
// pid's /proc status in bytes; 0 when it cannot be read.
func procStatus(pid int, field string) int64 {
	body, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
