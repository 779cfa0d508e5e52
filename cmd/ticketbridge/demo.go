package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

const demoAbout = `Play the whole loop on this machine, with nothing to configure: a
reference Guest Requests API (real HTTP on a loopback port, seeded with a
demo hotel), the sync engine, and the files helpdesk in a folder. A short
script shows each step as it crosses: the first import, a guest writing, an
agent's reply reaching the guest, an internal note staying internal, status
changes both ways, and a last cycle where nothing echoes.

The folder stays when the demo ends, for you to look around.`

// The demo hotel's requests the script works with (refserver.DemoSeed).
const (
	demoTowels  = "0d9a7c1e-5b43-4e2f-8a61-7c0b9e1f2a11" // new: Two extra bath towels to room 214
	demoLate    = "2f7c5e3a-3d21-4c0d-8c83-9e2d1a3f4c33" // new: Late checkout until 14:00 on Sunday
	demoAgent   = "Maria (front desk)"
	demoStepGap = 10 * time.Minute // the engine's clock moves on this much per step
)

func runDemo(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	fs := newFlagSet("demo", demoAbout, stdout)
	dir := fs.String("dir", "", "put the helpdesk folder and the state file in `DIR` (new or empty) instead of a new temporary folder")
	keep := fs.Bool("keep", false, "after the script, keep the server and the daemon running on the schedule until Ctrl-C")
	schedule := fs.String("schedule", "@every 10s", "the daemon's `schedule` with --keep")
	level := fs.String("log-level", "warn", "log `level` of the engine (to stderr): debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: demo: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if _, err := config.ParseLevel(*level); err != nil {
		return fmt.Errorf("%w: demo: --log-level %v", errUsage, err)
	}
	if _, err := sync.ParseSchedule(*schedule); err != nil {
		return fmt.Errorf("%w: demo: --schedule: %v", errUsage, err)
	}
	d, err := startDemo(ctx, *dir, newLogger(stderr, "auto", *level), stdout)
	if err != nil {
		return err
	}
	defer d.close()
	if err := d.script(ctx); err != nil {
		return err
	}
	if !*keep {
		fmt.Fprintf(stdout, "\nDone. The helpdesk folder stays in %s; delete it when you are done.\n", d.dir)
		fmt.Fprintf(stdout, "Run `%s --keep` to keep the server and the daemon running and try it yourself.\n", demoCommand(os.Args[0]))
		return nil
	}
	return d.keep(ctx, *schedule)
}

// demo is the running demo: server, helpdesk folder, state and engine.
type demo struct {
	out    io.Writer
	log    *slog.Logger
	dir    string // holds helpdesk/ and state.db
	hdDir  string
	url    string
	key    string
	srv    *refserver.Server
	hs     *http.Server
	served chan error
	hd     *files.Adapter
	store  *state.Store
	client *guestapi.Client
	engine *sync.Engine
	cfg    sync.Config
	mu     gosync.Mutex
	offset time.Duration // the engine's clock runs this far ahead
}

func (d *demo) now() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return time.Now().Add(d.offset)
}

func (d *demo) advance() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.offset += demoStepGap
}

func startDemo(ctx context.Context, dir string, log *slog.Logger, out io.Writer) (_ *demo, err error) {
	d := &demo{out: out, log: log}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if dir == "" {
		if d.dir, err = os.MkdirTemp("", "ticketbridge-demo-*"); err != nil {
			return nil, fmt.Errorf("demo: make a folder: %w", err)
		}
	} else {
		if des, err := os.ReadDir(dir); err == nil && len(des) > 0 {
			return nil, fmt.Errorf("%w: demo: --dir %s is not empty: give a new or empty folder", errUsage, dir)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("demo: make %s: %w", dir, err)
		}
		if d.dir, err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	}
	d.hdDir = filepath.Join(d.dir, "helpdesk")

	// The reference API with the demo hotel, on a loopback port.
	d.srv = refserver.New(refserver.Options{Logger: log.With("op", "refserver")})
	seed := refserver.DemoSeed(time.Now())
	if err := d.srv.ApplySeed(seed); err != nil {
		return nil, fmt.Errorf("demo: seed the reference server: %w", err)
	}
	for _, o := range seed.Organizations {
		for _, k := range o.Keys {
			if o.ID == refserver.DemoOrganization && k.Name == refserver.DemoKeyTicketsWrite {
				d.key = k.Value
			}
		}
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: listen on a loopback port: %w", err)
	}
	d.url = "http://" + ln.Addr().String()
	d.hs = &http.Server{
		Handler:           d.srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	d.served = make(chan error, 1)
	go func() { d.served <- d.hs.Serve(ln) }()

	if d.client, err = guestapi.New(guestapi.Config{BaseURL: d.url, APIKey: d.key, Logger: log}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if d.hd, err = files.New(ctx, files.Options{Dir: d.hdDir, Logger: log.With("adapter", files.Name)}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if d.store, err = state.Open(filepath.Join(d.dir, "state.db"), state.Options{Logger: log}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	d.cfg = sync.DefaultConfig()
	d.cfg.Schedule = "@every 10s"
	d.cfg.Backfill = "assigned,in_progress"
	d.engine, err = sync.New(d.cfg, sync.Deps{API: d.client, Helpdesk: d.hd, Store: d.store, Logger: log.With("adapter", files.Name), Now: d.now})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return d, nil
}

func (d *demo) close() {
	if d.hd != nil {
		d.hd.Close()
	}
	if d.store != nil {
		d.store.Close()
	}
	if d.hs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if d.hs.Shutdown(ctx) != nil {
			d.hs.Close()
		}
		<-d.served
		d.hs = nil
	}
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

// cycle runs one cycle, the engine's clock a step further on.
func (d *demo) cycle(ctx context.Context) (sync.Report, error) {
	d.advance()
	rep, err := d.engine.RunCycle(ctx)
	if err != nil {
		return rep, fmt.Errorf("demo: %w", err)
	}
	if rep.Errors > 0 {
		return rep, fmt.Errorf("demo: the cycle had errors: %s", rep)
	}
	d.say("   cycle: %s", cycleLine(rep))
	return rep, nil
}

// cycleLine says what a cycle did, leaving out what it did not.
func cycleLine(r sync.Report) string {
	var parts []string
	for _, p := range []struct {
		n         int
		one, many string
	}{{r.Created, "helpdesk ticket created", "helpdesk tickets created"},
		{r.Mirrored, "message mirrored into the helpdesk", "messages mirrored into the helpdesk"},
		{r.StatusDown, "status set in the helpdesk", "statuses set in the helpdesk"},
		{r.Events, "helpdesk event picked up", "helpdesk events picked up"},
		{r.Sent, "write sent to the API", "writes sent to the API"}} {
		switch {
		case p.n == 1:
			parts = append(parts, "1 "+p.one)
		case p.n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.many))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing to do")
	}
	return fmt.Sprintf("%s (%d API requests)", strings.Join(parts, ", "), r.APIRequests)
}

// folder returns the helpdesk folder of an upstream ticket.
func (d *demo) folder(ctx context.Context, id string) (string, error) {
	f, ok, err := d.hd.Lookup(ctx, id)
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	if !ok {
		return "", fmt.Errorf("demo: ticket %s did not reach the helpdesk", id)
	}
	return string(f.Ref), nil
}

func (d *demo) threadPath(folder string) string {
	return filepath.Join(d.hdDir, "tickets", folder, "thread.md")
}

// quote prints n lines of a file, indented, starting back lines before
// the first line containing from (or at the start when from is "").
func (d *demo) quote(path, from string, back, n int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	start := 0
	if from != "" {
		for i, l := range lines {
			if strings.Contains(l, from) {
				start = max(0, i-back)
				break
			}
		}
	}
	for i := start; i < len(lines) && i < start+n; i++ {
		d.say("   | %s", lines[i])
	}
	return nil
}

// drop writes an outbox file as a person should: under a .tmp name, then
// renamed.
func (d *demo) drop(name, content string) error {
	p := filepath.Join(d.hdDir, "outbox", name)
	if err := os.WriteFile(p+".tmp", []byte(content), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.say("   dropped outbox/%s:", name)
	for _, l := range strings.Split(strings.TrimRight(content, "\n"), "\n") {
		d.say("   | %s", l)
	}
	return nil
}

// statusLine returns the status thread.md shows.
func (d *demo) statusLine(folder string) string {
	b, err := os.ReadFile(d.threadPath(folder))
	if err != nil {
		return "?"
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "- **Status:** "); ok {
			return s
		}
	}
	return "?"
}

func (d *demo) posts() int {
	n := 0
	for route, byStatus := range d.srv.Stats().Requests {
		if strings.HasPrefix(route, "POST "+refserver.BasePath) {
			for _, c := range byStatus {
				n += c
			}
		}
	}
	return n
}

// script plays the six steps.
func (d *demo) script(ctx context.Context) error {
	d.say("ticketbridge demo: the whole loop on this machine, nothing to configure.")
	d.say("")
	d.say("  Guest Requests API  %s (reference server, demo hotel \"Hotel Aurora\")", d.url)
	d.say("  helpdesk            %s (files adapter: a folder per request)", d.hdDir)
	d.say("  state               %s", filepath.Join(d.dir, "state.db"))
	d.say("")

	d.say("1. The first cycle imports the hotel's open requests (new, and with")
	d.say("   TICKETBRIDGE_BACKFILL=assigned,in_progress those already being worked on).")
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	des, err := os.ReadDir(filepath.Join(d.hdDir, "tickets"))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	for _, de := range des {
		d.say("   helpdesk/tickets/%s/", de.Name())
	}
	towels, err := d.folder(ctx, demoTowels)
	if err != nil {
		return err
	}
	d.say("   %s/thread.md:", towels)
	if err := d.quote(d.threadPath(towels), "", 0, 4); err != nil {
		return err
	}
	d.say("   | ...")
	if err := d.quote(d.threadPath(towels), "## Thread", 0, 9); err != nil {
		return err
	}

	d.say("")
	d.say("2. The guest writes again, on the hotel's request page.")
	guestLine := "Thank you! Could we also have a second pillow?"
	if _, err := d.srv.AddMessage(demoTowels, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, AuthorName: "Anna Berg", Body: guestLine}); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	d.say("   thread.md now shows:")
	if err := d.quote(d.threadPath(towels), guestLine, 2, 3); err != nil {
		return err
	}

	d.say("")
	d.say("3. An agent replies by dropping a file into the outbox.")
	reply := "Towels and a second pillow are on their way to 214!"
	if err := d.drop("reply.txt", fmt.Sprintf("ticket: %s\nkind: reply\nauthor: %s\n\n%s\n", towels, demoAgent, reply)); err != nil {
		return err
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	view, err := d.srv.Ticket(demoTowels)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.say("   the guest's page now shows:")
	for _, m := range view.GuestView.Messages {
		d.say("   | %s: %s", m.AuthorName, m.Body)
	}
	if !guestSees(view, reply) {
		return errors.New("demo: the reply did not reach the guest")
	}

	d.say("")
	d.say("4. An internal note stays internal.")
	note := "Use the hypoallergenic pillows for 214."
	if err := d.drop("note.txt", fmt.Sprintf("ticket: %s\nkind: note\nauthor: %s\n\n%s\n", towels, demoAgent, note)); err != nil {
		return err
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	if view, err = d.srv.Ticket(demoTowels); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	for _, m := range view.Messages {
		if m.Body == note {
			d.say("   upstream: %q by %s, visible_to_guest %t", m.Body, m.AuthorName, m.VisibleToGuest)
		}
	}
	if guestSees(view, note) {
		return errors.New("demo: the guest sees the internal note")
	}
	d.say("   the guest's page does not show it.")

	d.say("")
	d.say("5. Status changes go both ways.")
	if err := d.drop("done.txt", fmt.Sprintf("ticket: %s\nkind: status\nstatus: done\n", towels)); err != nil {
		return err
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	if view, err = d.srv.Ticket(demoTowels); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.say("   upstream, the towels request is now %q.", view.Ticket.Status)
	d.say("   In the hotel's console, the front desk takes the late checkout request (assigned).")
	if err := d.srv.SetStatus(demoLate, guestapi.StatusAssigned); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	late, err := d.folder(ctx, demoLate)
	if err != nil {
		return err
	}
	d.say("   helpdesk/tickets/%s/thread.md now says: Status: %s", late, d.statusLine(late))

	d.say("")
	d.say("6. One more cycle: nothing changed, so nothing is written, and nothing echoes.")
	before := d.posts()
	rep, err := d.cycle(ctx)
	if err != nil {
		return err
	}
	if rep.Created+rep.Mirrored+rep.StatusDown+rep.Sent != 0 || d.posts() != before {
		return fmt.Errorf("demo: the last cycle wrote something: %s", rep)
	}
	d.say("   no writes upstream, none in the helpdesk.")
	return nil
}

func guestSees(v refserver.InternalView, body string) bool {
	for _, m := range v.GuestView.Messages {
		if m.Body == body {
			return true
		}
	}
	return false
}

// keep runs the daemon on the schedule until ctx ends, with a files
// adapter that waits for outbox files to settle as the real one does.
func (d *demo) keep(ctx context.Context, schedule string) error {
	d.hd.Close()
	var err error
	d.hd, err = files.New(ctx, files.Options{Dir: d.hdDir, Settle: files.DefaultSettle, Logger: d.log.With("adapter", files.Name)})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cfg := d.cfg
	cfg.Schedule = schedule
	eng, err := sync.New(cfg, sync.Deps{API: d.client, Helpdesk: d.hd, Store: d.store, Logger: d.log.With("adapter", files.Name), Now: d.now})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.say("")
	d.say("Running until Ctrl-C, a cycle %s.", strings.TrimPrefix(schedule, "@"))
	d.say("  API        %s   (TICKETBRIDGE_API_URL)", d.url)
	d.say("  key        %s   (tickets read + write)", d.key)
	d.say("  console    %s%s   (Authorization: Bearer %s)", d.url, refserver.ConsolePath, d.srv.ConsoleToken())
	d.say("  helpdesk   %s", d.hdDir)
	d.say("Drop replies, notes and status changes into %s (see README.txt there).", filepath.Join(d.hdDir, "outbox"))
	d.say("Write as a guest through the console, for example:")
	d.say("  %s", guestCurl(d.srv.ConsoleToken(), d.url, demoTowels))
	s := &sync.Scheduler{
		Schedule: eng.Schedule(),
		Cycle:    eng.RunCycle,
		AfterCycle: func(r sync.Report, err error) {
			if err != nil {
				d.say("cycle failed: %v", err)
			} else if r.Created+r.Mirrored+r.StatusDown+r.Events+r.Sent+r.Errors > 0 {
				d.say("%s  %s", time.Now().Format(time.TimeOnly), cycleLine(r))
			}
		},
		Logger: d.log,
	}
	return s.Run(ctx)
}

// guestCurl is the command line the demo prints to write as a guest
// through the reference server's console.
func guestCurl(token, url, ticket string) string {
	return fmt.Sprintf(`curl -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{"author_type":"guest","body":"Hello again"}' %s%s/tickets/%s/messages`,
		token, url, refserver.ConsolePath, ticket)
}

// demoCommand is how the person who ran the demo runs it again: the
// binary's name when it is installed, the go run line when go run built it
// in a temporary folder.
func demoCommand(arg0 string) string {
	if strings.Contains(filepath.ToSlash(arg0), "/go-build") {
		return "go run ./cmd/ticketbridge demo"
	}
	return "ticketbridge demo"
}
