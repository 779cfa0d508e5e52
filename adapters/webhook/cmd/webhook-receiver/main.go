// Command webhook-receiver is the reference receiver of ticketbridge's
// webhook adapter, for end-to-end tests and for trying the loop locally. It
// verifies every delivery's signature and timestamp (401 otherwise),
// acknowledges a repeated delivery id without processing it again, records
// accepted deliveries, and answers each guest message that arrives after it
// started with a signed reply posted to the daemon's inbound endpoint.
//
// It is not meant to run in production: it keeps no tickets and always
// answers with the same text.
//
// Usage:
//
//	TICKETBRIDGE_WEBHOOK_SECRET=... webhook-receiver -listen 127.0.0.1:9466 -reply-url http://127.0.0.1:9465/events
//
// The secret comes from -secret-file or, without it, from
// TICKETBRIDGE_WEBHOOK_SECRET. Once listening it prints one line,
// "listening on http://ADDR/", so that a caller that passed port 0 learns
// the port.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
	"github.com/ticketbridge/ticketbridge/internal/httpserve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	default:
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		os.Exit(1)
	}
}

const usageText = `Usage: webhook-receiver [flags]

The reference receiver of ticketbridge's webhook adapter, for tests and for
trying the loop locally; not for production. It verifies each delivery's
signature and timestamp, acknowledges a repeated delivery without
processing it again, and with -reply-url answers each guest message that
arrives after it started with a signed reply posted to the daemon's inbound
endpoint (the past the first sync delivers is not answered).

The shared secret comes from -secret-file or TICKETBRIDGE_WEBHOOK_SECRET.

Flags:
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("webhook-receiver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:9466", "serve deliveries on `ADDR` (port 0: any free port, printed at start)")
	secretFile := fs.String("secret-file", "", "read the shared secret from `FILE` (default: $TICKETBRIDGE_WEBHOOK_SECRET)")
	replyURL := fs.String("reply-url", "", "post replies to the daemon's inbound endpoint at `URL`, e.g. http://127.0.0.1:9465/events; empty: no replies")
	replyText := fs.String("reply-text", receiver.DefaultReplyText, "the reply's `TEXT`")
	replyAuthor := fs.String("reply-author", receiver.DefaultReplyAuthor, "the reply's author `NAME`")
	replyPast := fs.Bool("reply-to-past", false, "answer guest messages created before the receiver started too (tests whose clock is in the past)")
	record := fs.String("record", "", "append accepted deliveries as JSON lines to `FILE` (read back at start to recognise repeats)")
	tolerance := fs.Duration("tolerance", webhook.DefaultTolerance, "refuse deliveries whose timestamp is further than `D` from now")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stdout)
			break
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level %q: want debug, info, warn or error", *logLevel)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	secret, source := strings.TrimSpace(getenv("TICKETBRIDGE_WEBHOOK_SECRET")), "TICKETBRIDGE_WEBHOOK_SECRET"
	if *secretFile != "" {
		b, err := os.ReadFile(*secretFile)
		if err != nil {
			return fmt.Errorf("read secret file: %w", err)
		}
		secret, source = strings.TrimSpace(string(b)), "-secret-file "+*secretFile
	}
	if secret == "" {
		return errors.New("no secret: pass -secret-file or set TICKETBRIDGE_WEBHOOK_SECRET")
	}
	if n := len(secret); n < webhook.MinSecretLen {
		return fmt.Errorf("%s: the secret is %d bytes long; want at least %d (e.g. openssl rand -hex 32)", source, n, webhook.MinSecretLen)
	}

	rc, err := receiver.New(receiver.Options{
		Secret:      secret,
		Tolerance:   *tolerance,
		Logger:      log,
		ReplyURL:    *replyURL,
		AutoReply:   *replyURL != "",
		ReplySince:  replySince(*replyPast),
		ReplyText:   *replyText,
		ReplyAuthor: *replyAuthor,
		RecordPath:  *record,
		HTTP:        &http.Client{Timeout: 30 * time.Second},
	})
	if err != nil {
		return err
	}
	defer rc.Close()

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	srv := newServer(rc, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s/\n", ln.Addr())

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	st := rc.Stats()
	log.Info("stopped", slog.Int("accepted", st.Accepted), slog.Int("duplicates", st.Duplicates), slog.Int("rejected", st.Rejected), slog.Int("invalid", st.Invalid))
	return nil
}

// newServer returns the server of the deliveries, each exchange bounded
// in time so that a client sending or reading slowly cannot hold a
// connection (and its goroutine) for ever. A delivery's body is limited
// by [receiver.MaxBodyBytes] as it is read.
func newServer(h http.Handler, log *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	httpserve.CloseUnusedOnShutdown(srv)
	return srv
}

// replySince is when the guest messages to answer start: the receiver's
// start, so that the past a first sync delivers is not answered again;
// with -reply-to-past, any time.
func replySince(past bool) time.Time {
	if past {
		return time.Time{}
	}
	return time.Now()
}
