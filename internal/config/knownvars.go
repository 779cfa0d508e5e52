package config

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters/email"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/internal/textdist"
	"github.com/ticketbridge/ticketbridge/sync"
)

// askedFor is a lookuper that finds nothing and remembers every name it
// was asked for.
type askedFor map[string]bool

func (a askedFor) Lookup(key string) (string, bool) {
	a[key] = true
	return "", false
}

// KnownVariables returns every TICKETBRIDGE_* name ticketbridge reads. Each
// part's configuration (the daemon's, the engine's, the telemetry's and
// every adapter's) is loaded against an empty environment that records
// the names asked for, so a variable added to any env-tagged struct is
// known without a list to keep.
func KnownVariables(ctx context.Context) []string {
	a := askedFor{}
	var env envconfig.Lookuper = a
	_, _ = LoadDaemon(ctx, env)
	_, _ = sync.LoadConfig(ctx, env)
	_, _ = LoadTelemetry(ctx, env)
	_, _ = LoadConsole(ctx, env)
	_, _ = notify.Load(ctx, env)
	_, _ = LoadHotels(ctx, env)
	_, _ = files.LoadConfig(ctx, env)
	_, _ = rt.LoadConfig(ctx, env)
	_, _ = zendesk.LoadConfig(ctx, env)
	_, _ = freshdesk.LoadConfig(ctx, env)
	_, _ = zammad.LoadConfig(ctx, env)
	_, _ = webhook.LoadConfig(ctx, env, "")
	_, _ = email.LoadConfig(ctx, env)
	var names []string
	for k := range a {
		if strings.HasPrefix(k, EnvPrefix) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// UnknownVariables returns one warning for each TICKETBRIDGE_* name src
// sets that ticketbridge does not read, suggesting the closest known name.
func UnknownVariables(ctx context.Context, src Source) []string {
	if len(src.names) == 0 {
		return nil
	}
	known := KnownVariables(ctx)
	var out []string
	for _, n := range src.names {
		if _, ok := slices.BinarySearch(known, n); ok {
			continue
		}
		where := "the environment"
		if src.inFile[n] {
			where = src.File
		}
		msg := fmt.Sprintf("%s (in %s) is not a ticketbridge variable and is ignored", n, where)
		if best := Closest(n, known); best != "" {
			msg += "; did you mean " + best + "?"
		} else {
			msg += " (config.example.env lists every variable)"
		}
		out = append(out, msg)
	}
	return out
}

// Closest returns the name of known nearest to name, "" when none is
// near enough to be a likely typo.
func Closest(name string, known []string) string {
	s := strings.TrimPrefix(name, EnvPrefix)
	best, bestD := "", -1
	for _, k := range known {
		d := textdist.Levenshtein(s, strings.TrimPrefix(k, EnvPrefix))
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD > max(2, len(s)/4) {
		return ""
	}
	return best
}
