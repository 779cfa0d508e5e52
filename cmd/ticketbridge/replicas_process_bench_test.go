package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// BenchmarkReplicasProcess runs 4 replicas, processes of the built binary,
// on one PostgreSQL database (TICKETBRIDGE_TEST_POSTGRES; it skips
// without) with a hotels directory of 200 hotels
// (TICKETBRIDGE_REPLICAS_HOTELS) of 100 requests each
// (TICKETBRIDGE_FLEET_TICKETS) on files helpdesks, @every 5s
// (TICKETBRIDGE_FLEET_SCHEDULE), the reference server a process of its
// own. A minute after the start it reports the hotels each replica holds
// (the hotels its metrics name) and the largest over the mean (target:
// 1.2 at most). It reports when every hotel is held (all-held-s), and
// once each has ended two cycles where it is held, when (settled-s) and
// the balance again (held-max/mean-settled); then PostgreSQL's round
// trips a second over 20 s, all replicas together (the client's turns on
// the wire, counted by a proxy between the replicas and the database);
// then it kills the replica
// that holds the most with SIGKILL and reports the time until the
// survivors took every hotel it held (the last `hotel taken` of them).
//
//	TICKETBRIDGE_TEST_POSTGRES=postgres://... go test -run '^$' -bench BenchmarkReplicasProcess -benchtime 1x ./cmd/ticketbridge/
func BenchmarkReplicasProcess(b *testing.B) {
	if os.Getenv(statetest.Env) == "" {
		b.Skip(statetest.SkipMessage)
	}
	hotels := testutil.EnvInt(b, "TICKETBRIDGE_REPLICAS_HOTELS", 200)
	tickets := testutil.EnvInt(b, "TICKETBRIDGE_FLEET_TICKETS", 100)
	bin := filepath.Join(b.TempDir(), "ticketbridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for b.Loop() {
		runReplicasProcess(b, bin, 4, hotels, tickets)
	}
}

// benchReplica is one replica of BenchmarkReplicasProcess.
type benchReplica struct {
	cmd    *exec.Cmd
	listen string
	done   chan struct{}
}

// takenLog gathers the `hotel taken` lines of the replicas: when each
// replica took each hotel last.
type takenLog struct {
	mu    gosync.Mutex
	taken map[int]map[string]time.Time
	// changed is signalled, without blocking, on each line.
	changed chan struct{}
}

func (l *takenLog) add(replica int, hotel string, at time.Time) {
	l.mu.Lock()
	if l.taken[replica] == nil {
		l.taken[replica] = map[string]time.Time{}
	}
	l.taken[replica][hotel] = at
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// lastTaken returns the time the last of hotels was taken by a replica
// other than but since; ok is false while one is not.
func (l *takenLog) lastTaken(hotels map[string]float64, but int, since time.Time) (last time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for h := range hotels {
		var at time.Time
		for r, m := range l.taken {
			if t, took := m[h]; r != but && took && t.After(since) && (at.IsZero() || t.Before(at)) {
				at = t
			}
		}
		if at.IsZero() {
			return time.Time{}, false
		}
		if at.After(last) {
			last = at
		}
	}
	return last, true
}

func runReplicasProcess(b *testing.B, bin string, replicas, hotels, tickets int) {
	b.Helper()
	schedule, _ := benchSchedule(b, "@every 5s")
	dir := b.TempDir()
	hotelsDir := filepath.Join(dir, "hotels.d")
	if err := os.Mkdir(hotelsDir, 0o700); err != nil {
		b.Fatal(err)
	}
	seed, _ := writeBenchHotels(b, dir, hotelsDir, hotels, tickets)
	apiURL := startRefserverProcess(b, bin, seed)
	proxy := newPGProxy(b, statetest.PostgresURL(b))
	log := &takenLog{taken: map[int]map[string]time.Time{}, changed: make(chan struct{}, 1)}
	reps := make([]*benchReplica, replicas)
	for i := range reps {
		r := &benchReplica{listen: freeAddr(b), done: make(chan struct{})}
		r.cmd = exec.Command(bin, "run")
		r.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
			"TICKETBRIDGE_API_URL=" + apiURL, "TICKETBRIDGE_STATE=" + proxy.url,
			"TICKETBRIDGE_HOTELS_DIR=" + hotelsDir, "TICKETBRIDGE_ADAPTER=files", "TICKETBRIDGE_FILES_SETTLE=0s",
			"TICKETBRIDGE_SCHEDULE=" + schedule, "TICKETBRIDGE_LISTEN=" + r.listen,
			"TICKETBRIDGE_LOG_FORMAT=json", "TICKETBRIDGE_LOG_LEVEL=info"}
		stderr, err := r.cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := r.cmd.Start(); err != nil {
			b.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(stderr)
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				if !strings.Contains(sc.Text(), `"hotel taken`) {
					continue
				}
				var l struct {
					Hotel string `json:"hotel"`
				}
				if json.Unmarshal(sc.Bytes(), &l) == nil && l.Hotel != "" {
					log.add(i, l.Hotel, time.Now())
				}
			}
			_ = r.cmd.Wait()
			close(r.done)
		}()
		reps[i] = r
	}
	b.Cleanup(func() {
		for _, r := range reps {
			_ = r.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, r := range reps {
			select {
			case <-r.done:
			case <-time.After(time.Minute): // a hang's report, not a timing
				_ = r.cmd.Process.Kill()
				<-r.done
			}
		}
	})
	start := time.Now()

	time.Sleep(time.Minute)
	// tally reads the hotels each replica holds (those its metrics name),
	// how many in all, which replica holds the most, and how many of the
	// hotels held have ended two cycles where they are (the first, an
	// import or a start after a handover, and one after it).
	held := make([]map[string]float64, replicas)
	counts := make([]int, replicas)
	var most, total, settled int
	tally := func() {
		most, total, settled = 0, 0, 0
		for i, r := range reps {
			// A scrape that failed (a replica busy with its imports past
			// the write timeout) is tried again.
			var err error
			for try := range 5 {
				if _, held[i], err = tryScrapeMetrics(r.listen); err == nil {
					break
				}
				b.Logf("scrape %d of replica %d: %v", try+1, i, err)
			}
			if err != nil {
				b.Fatal(err)
			}
			counts[i] = len(held[i])
			total += counts[i]
			if counts[i] > counts[most] {
				most = i
			}
			for _, ended := range held[i] {
				if ended >= 2 {
					settled++
				}
			}
		}
	}
	tally()
	mean := float64(total) / float64(replicas)
	b.Logf("%d replicas, %d hotels of %d requests, %s: after %s they hold %v", replicas, hotels, tickets, schedule, time.Since(start).Round(time.Second), counts)
	b.ReportMetric(float64(slices.Max(counts))/mean, "held-max/mean")
	b.ReportMetric(float64(total), "hotels-held")

	// The rest is measured once every hotel is held, and has ended its
	// import and a cycle after it where it is held: the round trips of
	// replicas at work, not of their start, and a takeover that queues
	// behind no hotel nobody took yet.
	deadline := time.After(time.Hour) // a hang's report, not a timing
	for allHeld := false; settled < hotels; {
		select {
		case <-deadline:
			b.Fatalf("after an hour the replicas hold %d of %d hotels, %d settled", total, hotels, settled)
		case <-time.After(2 * time.Second): // the metrics of 2,000 hotels are megabytes
		}
		tally()
		if total == hotels && !allHeld {
			allHeld = true
			b.Logf("all %d hotels held after %s: %v", hotels, time.Since(start).Round(time.Second), counts)
			b.ReportMetric(time.Since(start).Seconds(), "all-held-s")
		}
	}
	b.Logf("all %d hotels settled after %s: %v", hotels, time.Since(start).Round(time.Second), counts)
	b.ReportMetric(time.Since(start).Seconds(), "settled-s")
	b.ReportMetric(float64(slices.Max(counts))/(float64(hotels)/float64(replicas)), "held-max/mean-settled")

	const window = 20 * time.Second
	t0 := proxy.turns.Load()
	time.Sleep(window)
	b.ReportMetric(float64(proxy.turns.Load()-t0)/window.Seconds(), "pg-round-trips/s")

	victim := held[most]
	killed := time.Now()
	if err := reps[most].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.Fatal(err)
	}
	<-reps[most].done
	deadline = time.After(30 * time.Minute) // a hang's report, not a timing
	for {
		if last, ok := log.lastTaken(victim, most, killed); ok {
			b.Logf("replica %d killed holding %d hotels: the survivors took them all in %s", most, len(victim), last.Sub(killed).Round(10*time.Millisecond))
			b.ReportMetric(last.Sub(killed).Seconds(), "takeover-s")
			return
		}
		select {
		case <-log.changed:
		case <-deadline:
			b.Fatalf("the survivors did not take the %d hotels of the killed replica", len(victim))
		}
	}
}
