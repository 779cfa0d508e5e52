package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// The kit of the benchmarks that run daemons of many hotels as processes
// of their own: the reference server as a process too (so that a
// daemon's CPU and memory, read from /proc, are its own), the hotels
// directory, and the figures read from the daemon's metrics.

// benchHotel is one hotel of a benchmark: its organisation's API key,
// written to a file, and its files helpdesk's folder.
type benchHotel struct {
	name, keyFile, filesDir string
}

// writeBenchHotels writes the seed of hotels organisations of tickets
// requests each (one guest message on each) to dir/seed.json, each
// hotel's key file, and, when hotelsDir is not empty, each hotel's
// configuration in it; it returns the seed's path and the hotels.
func writeBenchHotels(b *testing.B, dir, hotelsDir string, hotels, tickets int) (string, []benchHotel) {
	b.Helper()
	type msg struct {
		ID             string    `json:"id"`
		AuthorType     string    `json:"author_type"`
		Body           string    `json:"body"`
		VisibleToGuest bool      `json:"visible_to_guest"`
		CreatedAt      time.Time `json:"created_at"`
	}
	type ticket struct {
		ID              string    `json:"id"`
		Department      string    `json:"department"`
		TaskDescription string    `json:"task_description"`
		CreatedAt       time.Time `json:"created_at"`
		Messages        []msg     `json:"messages"`
	}
	type key struct {
		Name     string `json:"name"`
		Value    string `json:"value"`
		Platform string `json:"platform"`
		Tickets  string `json:"tickets"`
	}
	type org struct {
		ID      string   `json:"id"`
		Keys    []key    `json:"keys"`
		Tickets []ticket `json:"tickets"`
	}
	created := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	var seed struct {
		Organizations []org `json:"organizations"`
	}
	var out []benchHotel
	for i := range hotels {
		h := benchHotel{name: fmt.Sprintf("hotel-%04d", i)}
		h.keyFile = filepath.Join(dir, h.name+".key")
		h.filesDir = filepath.Join(dir, "helpdesk", h.name)
		raw := make([]byte, 16)
		_, _ = rand.Read(raw)
		value := "rta_" + hex.EncodeToString(raw)
		if err := os.WriteFile(h.keyFile, []byte(value+"\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		if hotelsDir != "" {
			vars := "TICKETBRIDGE_API_KEY_FILE=" + h.keyFile + "\nTICKETBRIDGE_FILES_DIR=" + h.filesDir + "\n"
			if err := os.WriteFile(filepath.Join(hotelsDir, h.name+".env"), []byte(vars), 0o600); err != nil {
				b.Fatal(err)
			}
		}
		o := org{ID: uuid.NewString(), Keys: []key{{Name: "bridge", Value: value, Platform: "read", Tickets: "write"}}}
		for j := range tickets {
			o.Tickets = append(o.Tickets, ticket{ID: uuid.NewString(), Department: fmt.Sprintf("dept%d", j%5),
				TaskDescription: fmt.Sprintf("request %d of %s: towels for room %d", j, h.name, 100+j), CreatedAt: created,
				Messages: []msg{{ID: uuid.NewString(), AuthorType: "guest", Body: "could we have two more towels, please?", VisibleToGuest: true, CreatedAt: created}}})
		}
		seed.Organizations = append(seed.Organizations, o)
		out = append(out, h)
	}
	path := filepath.Join(dir, "seed.json")
	body, err := json.Marshal(seed)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		b.Fatal(err)
	}
	return path, out
}

// startRefserverProcess runs `ticketbridge refserver` on the seed, a
// process of its own, until the benchmark ends; it returns the API's URL.
func startRefserverProcess(b *testing.B, bin, seed string) string {
	b.Helper()
	cmd := exec.Command(bin, "refserver", "--seed", seed, "--addr", "127.0.0.1:0",
		"--console-token", "bench-console-token", "--log-level", "warn", "--log-format", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	const head = "Guest Requests API v1 reference server at "
	var url string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), head); ok {
			url = u
			break
		}
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdout) // the keys it prints
		_ = cmd.Wait()
		close(done)
	}()
	if url == "" {
		_ = cmd.Process.Kill()
		b.Fatalf("the reference server did not start: %s", logs.String())
	}
	return url
}

// benchSchedule is TICKETBRIDGE_FLEET_SCHEDULE, def when unset, and the
// time between two of its activations.
func benchSchedule(b *testing.B, def string) (string, time.Duration) {
	b.Helper()
	s := os.Getenv("TICKETBRIDGE_FLEET_SCHEDULE")
	if s == "" {
		s = def
	}
	sched, err := tbsync.ParseSchedule(s)
	if err != nil {
		b.Fatalf("TICKETBRIDGE_FLEET_SCHEDULE: %v", err)
	}
	next := sched.Next(time.Now())
	return s, sched.Next(next).Sub(next)
}

// lagBuckets is a cumulative histogram of ticketbridge_cycle_lag_seconds
// summed over the hotels: the count at or under each bound.
type lagBuckets map[float64]float64

// scrapeMetrics reads the daemon's metrics page at addr: the lag
// histogram summed over its hotels, and the hotels its series name with
// the cycles each ended ("" for a daemon of one hotel).
func scrapeMetrics(b *testing.B, addr string) (lagBuckets, map[string]float64) {
	b.Helper()
	lag, hotels, err := tryScrapeMetrics(addr)
	if err != nil {
		b.Fatal(err)
	}
	return lag, hotels
}

// tryScrapeMetrics is scrapeMetrics returning its error: a scrape of a
// process busy with hundreds of imports may pass the server's write
// timeout, as a Prometheus scrape may pass its own.
func tryScrapeMetrics(addr string) (lagBuckets, map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("scrape %s: %s", addr, resp.Status)
	}
	lag, hotels := lagBuckets{}, map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "ticketbridge_cycle_lag_seconds_count"); ok {
			hotel := ""
			if h, ok := strings.CutPrefix(rest, `{hotel="`); ok {
				hotel = h[:strings.IndexByte(h, '"')]
			}
			n, err := strconv.ParseFloat(strings.TrimSpace(rest[strings.LastIndexByte(rest, ' ')+1:]), 64)
			if err == nil {
				hotels[hotel] = n
			}
			continue
		}
		labels, ok := strings.CutPrefix(line, "ticketbridge_cycle_lag_seconds_bucket{")
		if !ok {
			continue
		}
		_, le, _ := strings.Cut(labels, `le="`)
		le, v, _ := strings.Cut(le, `"} `)
		bound, err1 := strconv.ParseFloat(le, 64) // +Inf parses
		n, err2 := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err1 == nil && err2 == nil {
			lag[bound] += n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("scrape %s: %w", addr, err)
	}
	return lag, hotels, nil
}

// overBound returns the share of the cycles counted in a but not in before
// whose lag was over bound, one of the histogram's bounds.
func (a lagBuckets) overBound(before lagBuckets, bound float64) float64 {
	inf := math.Inf(1)
	total := a[inf] - before[inf]
	if total <= 0 {
		return 0
	}
	return (total - (a[bound] - before[bound])) / total
}

// quantile returns the q quantile of the cycles counted in a but not in
// before, interpolated within its bucket as Prometheus'
// histogram_quantile does; -1 when none was counted.
func (a lagBuckets) quantile(before lagBuckets, q float64) float64 {
	bounds := make([]float64, 0, len(a))
	for le := range a {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 {
		return -1
	}
	total := a[bounds[len(bounds)-1]] - before[bounds[len(bounds)-1]]
	if total <= 0 {
		return -1
	}
	rank := q * total
	lo, below := 0.0, 0.0
	for _, le := range bounds {
		n := a[le] - before[le]
		if n >= rank {
			if le > 1e300 { // +Inf: the highest finite bound
				return lo
			}
			return lo + (le-lo)*(rank-below)/max(n-below, 1e-9)
		}
		lo, below = le, n
	}
	return lo
}
