package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/config"
)

const refserverAbout = `Serve the reference Guest Requests API v1 over HTTP: tickets under
/ops-public-api/v1/tickets, tokens under /api-auth/token and /api-auth/verify,
and the console API under /console/v1 (Authorization: Bearer CONSOLE_TOKEN).
The API root (TICKETBRIDGE_API_URL of the bridge) is http://ADDR.

--seed loads organisations, keys and tickets from a JSON file; --demo adds
two demo organisations and prints a key of each right. Without
--console-token a token is generated and printed.`

// refserverFlags are the parsed flags of the refserver command.
type refserverFlags struct {
	addr, seed, consoleToken string
	demo                     bool
	faultRate                float64
	faultSeed                uint64
	latency                  time.Duration
	idempotencyTTL           time.Duration
	maxMessageBytes          int
	logFormat, logLevel      string
}

func parseRefserverFlags(args []string, stdout io.Writer) (refserverFlags, bool, error) {
	var f refserverFlags
	fs := flag.NewFlagSet("refserver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8089", "`host:port` to listen on (port 0 picks a free one)")
	fs.StringVar(&f.seed, "seed", "", "JSON seed `file` with organisations, keys and tickets")
	fs.StringVar(&f.consoleToken, "console-token", "", "`token` guarding /console/v1; empty generates one and prints it")
	fs.BoolVar(&f.demo, "demo", false, "add two demo organisations with tickets and print a key of each right")
	fs.Float64Var(&f.faultRate, "fault-rate", 0, "`fraction` (0 to 1) of API requests that fail: 500, 429, dropped connection, lost answer or slow body, evenly")
	fs.Uint64Var(&f.faultSeed, "fault-seed", 1, "`seed` of the fault dice")
	fs.DurationVar(&f.latency, "latency", 0, "`duration` added before every API answer")
	fs.DurationVar(&f.idempotencyTTL, "idempotency-ttl", refserver.DefaultIdempotencyTTL, "how long an Idempotency-Key is remembered")
	fs.IntVar(&f.maxMessageBytes, "max-message-bytes", refserver.DefaultMaxMessageBytes, "longest message text accepted, in `bytes`")
	fs.StringVar(&f.logFormat, "log-format", "auto", "log `format`: auto, tint, text, json or journal")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: ticketbridge refserver [flags]\n\n%s\n\nFlags:\n", refserverAbout)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return f, true, nil
		}
		return f, false, fmt.Errorf("%w: refserver: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return f, false, fmt.Errorf("%w: refserver: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if math.IsNaN(f.faultRate) || f.faultRate < 0 || f.faultRate > 1 {
		return f, false, fmt.Errorf("%w: refserver: --fault-rate %v: want a fraction from 0 to 1", errUsage, f.faultRate)
	}
	if f.latency < 0 {
		return f, false, fmt.Errorf("%w: refserver: --latency %s: want a duration of zero or more", errUsage, f.latency)
	}
	if f.idempotencyTTL <= 0 {
		return f, false, fmt.Errorf("%w: refserver: --idempotency-ttl %s: want a positive duration", errUsage, f.idempotencyTTL)
	}
	if f.maxMessageBytes <= 0 {
		return f, false, fmt.Errorf("%w: refserver: --max-message-bytes %d: want a positive size", errUsage, f.maxMessageBytes)
	}
	if _, err := config.ParseLevel(f.logLevel); err != nil {
		return f, false, fmt.Errorf("%w: refserver: --log-level %v", errUsage, err)
	}
	return f, false, nil
}

// runRefserver serves the reference server until ctx ends, then shuts it
// down gracefully.
func runRefserver(ctx context.Context, sh shell, args []string) error {
	stdout, stderr := sh.stdout, sh.stderr
	f, help, err := parseRefserverFlags(args, stdout)
	if err != nil || help {
		return err
	}
	log := newLogger(stderr, f.logFormat, f.logLevel)

	var seeds []refserver.Seed
	if f.seed != "" {
		seed, err := loadSeedFile(f.seed)
		if err != nil {
			return err
		}
		seeds = append(seeds, seed)
	}
	if f.demo {
		seeds = append(seeds, refserver.DemoSeed(time.Now()))
	}
	share := f.faultRate / 5
	srv := refserver.New(refserver.Options{
		Logger:          log,
		ConsoleToken:    f.consoleToken,
		IdempotencyTTL:  f.idempotencyTTL,
		MaxMessageBytes: f.maxMessageBytes,
		Faults: refserver.Faults{Seed: f.faultSeed, Latency: f.latency, LatencyRate: rateIf(f.latency > 0),
			ErrorRate: share, RateLimitRate: share, DropRate: share, LostAnswerRate: share, SlowBodyRate: share},
	})
	for _, seed := range seeds {
		if err := srv.ApplySeed(seed); err != nil {
			return fmt.Errorf("start refserver: %w", err)
		}
	}

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.addr)
	if err != nil {
		return fmt.Errorf("start refserver: listen on %s: %w", f.addr, err)
	}
	url := "http://" + ln.Addr().String()
	printStart(stdout, url, srv, seeds, f.consoleToken == "")
	log.Info("refserver started", slog.Any("url", url), slog.Any("base_url", url+refserver.BasePath), slog.Any("organizations", len(srv.Organizations())), slog.Any("fault_rate", f.faultRate), slog.Any("latency", f.latency))
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	log.Info("refserver stopped")
	return nil
}

func rateIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func loadSeedFile(path string) (refserver.Seed, error) {
	file, err := os.Open(path)
	if err != nil {
		return refserver.Seed{}, fmt.Errorf("open seed: %w", err)
	}
	defer file.Close()
	seed, err := refserver.LoadSeed(file)
	if err != nil {
		return refserver.Seed{}, fmt.Errorf("%s: %w", path, err)
	}
	return seed, nil
}

// printStart tells the operator where the server is and, once, the
// secrets they need: the generated console token and the seeded keys.
// It writes once, so that a reader sees all of it with the URL.
func printStart(out io.Writer, url string, srv *refserver.Server, seeds []refserver.Seed, printToken bool) {
	var w strings.Builder
	fmt.Fprintf(&w, "Guest Requests API v1 reference server at %s\n", url)
	fmt.Fprintf(&w, "  tickets:  %s%s/tickets\n", url, refserver.BasePath)
	fmt.Fprintf(&w, "  tokens:   %s%s\n", url, refserver.TokenPath)
	fmt.Fprintf(&w, "  console:  %s%s\n", url, refserver.ConsolePath)
	if printToken {
		fmt.Fprintf(&w, "  console token: %s\n", srv.ConsoleToken())
	}
	for _, seed := range seeds {
		for _, o := range seed.Organizations {
			fmt.Fprintf(&w, "organization %s (%s), %d tickets\n", o.ID, productOr(o.ProductType), len(o.Tickets))
			for _, k := range o.Keys {
				fmt.Fprintf(&w, "  key %-22s platform=%-5s tickets=%-5s %s\n", k.Name, orNone(string(k.Platform)), orNone(string(k.Tickets)), k.Value)
			}
		}
	}
	_, _ = io.WriteString(out, w.String())
}

func productOr(p string) string {
	if p == "" {
		return "hotel"
	}
	return p
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
