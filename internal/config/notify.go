package config

import (
	"context"
	"strings"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/notify"
)

// Notify are the notifications' settings (TICKETBRIDGE_NOTIFY_*, read,
// checked and parsed once by notify.Load) and the status page's external
// address the notices link to.
type Notify struct {
	notify.Settings
	// StatusURL is TICKETBRIDGE_CONSOLE_EXTERNAL_URL; "" when unset.
	StatusURL string
}

// LoadNotify reads and checks the notifications' settings of the main
// configuration: a target, ping URL or mail server that does not parse is
// an error naming its variable (never the URL, which may hold a token).
func LoadNotify(ctx context.Context, env envconfig.Lookuper) (Notify, error) {
	c, err := notify.Load(ctx, env)
	if err != nil {
		return Notify{}, err
	}
	n := Notify{Settings: c}
	if v, ok := env.Lookup("TICKETBRIDGE_CONSOLE_EXTERNAL_URL"); ok {
		n.StatusURL = strings.TrimSpace(v)
	}
	return n, nil
}

// Enabled reports whether the settings name a target or a ping URL: a
// daemon without any reads nothing for the notifications after a cycle.
func (n Notify) Enabled() bool {
	return n.URLs != "" || n.SupportURLs != "" || n.PingURL != "" || n.PingPer == "hotel"
}
