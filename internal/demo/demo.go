package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/email"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// The demo hotel's requests the script works with (refserver.DemoSeed).
const (
	towelsID = "0d9a7c1e-5b43-4e2f-8a61-7c0b9e1f2a11" // new: Two extra bath towels to room 214
	lateID   = "2f7c5e3a-3d21-4c0d-8c83-9e2d1a3f4c33" // new: Late checkout until 14:00 on Sunday
	agent    = "Maria (front desk)"
	stepGap  = 10 * time.Minute // the engine's clock moves on this much per step
)

// Demo is the running demo: server, helpdesk folder, state and engine.
type Demo struct {
	out   io.Writer
	log   *slog.Logger
	dir   string // holds helpdesk/ and state.db
	hdDir string
	url   string
	key   string
	srv   *refserver.Server
	// stopServing ends the server's Serve; served has what it returned.
	stopServing context.CancelFunc
	served      chan error
	hd          adapters.Helpdesk
	// mail and email are the local mail server and the email helpdesk
	// on it (Options.Helpdesk "email"); seq numbers the agent's mails.
	mail   mailServer
	email  *email.Adapter
	seq    int
	store  *state.Store
	client *guestapi.Client
	engine *sync.Engine
	cfg    sync.Config
	mu     gosync.Mutex
	offset time.Duration // the engine's clock runs this far ahead
}

func (d *Demo) now() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return time.Now().Add(d.offset)
}

func (d *Demo) advance() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.offset += stepGap
}

// ErrNotEmpty is the error of Start given a folder that holds files.
var ErrNotEmpty = errors.New("is not empty: give a new or empty folder")

// Options are what Start runs.
type Options struct {
	// Dir is the folder of the helpdesk folder and the state file, new
	// or empty; "" makes a new temporary folder.
	Dir string
	// Helpdesk is "files" (or "") for the files helpdesk in the folder,
	// "email" for the email helpdesk on the local mail server the
	// environment names (Getenv), or ErrNoMailServer.
	Helpdesk string
	// Getenv reads the environment; nil is os.Getenv.
	Getenv func(string) string
	Log    *slog.Logger
	Out    io.Writer
}

// Start starts the demo: the reference server with the demo hotel on a
// loopback port, the helpdesk, the state file in the folder, and the
// engine. It logs to Log and tells what it does on Out. Close it when
// done; the folder stays.
func Start(ctx context.Context, o Options) (_ *Demo, err error) {
	log, dir := o.Log, o.Dir
	d := &Demo{out: o.Out, log: log}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	switch o.Helpdesk {
	case "", files.Name:
	case email.Name:
		if d.mail, err = mailServerFrom(o.Getenv); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("demo: no helpdesk %q: want files or email", o.Helpdesk)
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if dir == "" {
		if d.dir, err = os.MkdirTemp("", "ticketbridge-demo-*"); err != nil {
			return nil, fmt.Errorf("demo: make a folder: %w", err)
		}
	} else {
		if des, err := os.ReadDir(dir); err == nil && len(des) > 0 {
			return nil, fmt.Errorf("demo: %s %w", dir, ErrNotEmpty)
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
	var sctx context.Context
	sctx, d.stopServing = context.WithCancel(context.WithoutCancel(ctx))
	d.served = make(chan error, 1)
	go func() { d.served <- d.srv.Serve(sctx, ln) }()

	if d.client, err = guestapi.New(guestapi.Config{BaseURL: d.url, APIKey: d.key, Logger: log}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if d.mail.domain != "" {
		if d.email, err = d.openEmail(ctx); err != nil {
			return nil, err
		}
		d.hd = d.email
	} else if d.hd, err = files.New(ctx, files.Options{Dir: d.hdDir, Logger: log.With("adapter", files.Name)}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if d.store, err = state.Open(ctx, d.statePath(), state.Options{Logger: log}); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	d.cfg = sync.DefaultConfig()
	d.cfg.Schedule = sync.Every(10 * time.Second)
	d.cfg.Backfill = sync.Backfill{guestapi.StatusAssigned, guestapi.StatusInProgress}
	d.engine, err = sync.New(d.cfg, sync.Deps{API: d.client, Helpdesk: d.hd, Store: d.store, Logger: log.With("adapter", d.hd.Name()), Now: d.now})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return d, nil
}

// Dir returns the folder that holds the helpdesk folder and the state file.
func (d *Demo) Dir() string { return d.dir }

func (d *Demo) statePath() string { return filepath.Join(d.dir, "state.db") }

// Close stops the engine's helpdesk, the state and the server. The folder
// stays.
func (d *Demo) Close() {
	if d.hd != nil {
		d.hd.Close()
	}
	if d.store != nil {
		d.store.Close()
	}
	if d.stopServing != nil {
		d.stopServing()
		if err := <-d.served; err != nil {
			d.log.Warn("stop the reference server", slog.Any("error", err), slog.String("op", "refserver"))
		}
		d.stopServing = nil
	}
}

func (d *Demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

// cycle runs one cycle, the engine's clock a step further on.
func (d *Demo) cycle(ctx context.Context) (sync.Report, error) {
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

// Keep runs the daemon on the schedule until ctx ends, with a files
// adapter that waits for outbox files to settle as the real one does.
func (d *Demo) Keep(ctx context.Context, schedule sync.Schedule) error {
	if d.email == nil {
		d.hd.Close()
		var err error
		d.hd, err = files.New(ctx, files.Options{Dir: d.hdDir, Settle: files.DefaultSettle, Logger: d.log.With("adapter", files.Name)})
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	cfg := d.cfg
	cfg.Schedule = schedule
	eng, err := sync.New(cfg, sync.Deps{API: d.client, Helpdesk: d.hd, Store: d.store, Logger: d.log.With("adapter", d.hd.Name()), Now: d.now})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.say("")
	d.say("Running until Ctrl-C, a cycle %s.", strings.TrimPrefix(schedule.String(), "@"))
	d.say("  API        %s   (TICKETBRIDGE_API_URL)", d.url)
	d.say("  key        %s   (tickets read + write)", d.key)
	d.say("  console    %s%s   (Authorization: Bearer %s)", d.url, refserver.ConsolePath, d.srv.ConsoleToken())
	if d.email != nil {
		d.say("  helpdesk   the mailboxes of %s; the towels request's replies go to %s", d.mail.domain, d.email.ReplyAddress(towelsID))
		d.say("Answer from a mail client as agent@%s; a first line #note makes a note, \"#status done\" a status change.", d.mail.domain)
	} else {
		d.say("  helpdesk   %s", d.hdDir)
		d.say("Drop replies, notes and status changes into %s (see README.txt there).", filepath.Join(d.hdDir, "outbox"))
	}
	d.say("Write as a guest through the console, for example:")
	d.say("  %s", GuestCurl(d.srv.ConsoleToken(), d.url, towelsID))
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

// GuestCurl is the command line the demo prints to write as a guest
// through the reference server's console.
func GuestCurl(token, url, ticket string) string {
	return fmt.Sprintf(`curl -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{"author_type":"guest","body":"Hello again"}' %s%s/tickets/%s/messages`,
		token, url, refserver.ConsolePath, ticket)
}
