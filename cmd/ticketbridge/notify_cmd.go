package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/config"
)

const notifyAbout = `Send a test notice to every notification target of the configuration
(TICKETBRIDGE_NOTIFY_URLS and TICKETBRIDGE_NOTIFY_SUPPORT_URLS), all at once,
and print one line per target: OK or FAILED, its kind and host (never the
rest of its URL, which may hold a token), and the error. The exit status is
1 when a target failed or none is set. The heartbeat URLs are not called.`

// notifyTestTimeout bounds the whole test: a target still trying (it
// retries as the daemon does) fails with it.
const notifyTestTimeout = time.Minute

func runNotify(ctx context.Context, sh shell, args []string) error {
	fs := newFlagSet("notify test", notifyAbout, sh.stdout)
	var ef envFlag
	ef.register(fs, sh.layout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) != "test" {
		return fmt.Errorf("%w: notify: want the command test", errUsage)
	}
	src, _, err := loadPlain(ctx, &ef, sh.stderr)
	if err != nil {
		return err
	}
	nc, err := config.LoadNotify(ctx, src.Env)
	if err != nil {
		return err
	}
	n, _ := nc.Build(nil, nc.StatusURL, nil)
	ctx, cancel := context.WithTimeout(ctx, notifyTestTimeout)
	defer cancel()
	results := n.Test(ctx)
	if len(results) == 0 {
		return &exitError{code: 1, err: fmt.Errorf("notify test: no target is set: name them in TICKETBRIDGE_NOTIFY_URLS (docs/notifications.md)")}
	}
	failed := 0
	for _, r := range results {
		who := r.Target
		if r.Support {
			who += " (support)"
		}
		if r.Err != nil {
			failed++
			fmt.Fprintf(sh.stdout, "FAILED  %s: %v\n", who, r.Err)
			continue
		}
		fmt.Fprintf(sh.stdout, "OK      %s\n", who)
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("notify test: %d of %d targets failed", failed, len(results))}
	}
	return nil
}
