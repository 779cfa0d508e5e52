package rt

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/envvar"
	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// EnvPrefix is the prefix of every variable the adapter reads.
const EnvPrefix = "TICKETBRIDGE_RT_"

// Defaults of [Config].
const (
	DefaultQueue     = "General"
	DefaultIDField   = "Guest Request ID"
	DefaultSentField = "Guest Request Sent"
	DefaultTimeout   = 30 * time.Second
	DefaultOverlap   = 2 * time.Minute
)

// SentFieldOff is the value of SentField (TICKETBRIDGE_RT_SENT_FIELD) that
// turns the delivery record off; see [Adapter.MarkSent].
const SentFieldOff = "none"

// Config is the adapter's configuration, read from the TICKETBRIDGE_RT_*
// variables by [LoadConfig]. Printed or logged, it never shows the token or
// the password (each a [redact.Secret]).
//
// [New] takes a Config as it is, except that empty Queue, IDField,
// SentField and a zero Timeout or Overlap get their defaults; SendComments has no
// such rescue, so code that builds a Config by hand sets it.
type Config struct {
	// URL is where RT answers, without /REST/2.0: e.g.
	// http://127.0.0.1:8080 or https://rt.example.com/rt.
	URL adapters.URL `env:"URL"`
	// Token is an RT auth token of the bridge's own RT user (sent as
	// "Authorization: token …"). Either Token, or User and Password.
	Token redact.Secret `env:"TOKEN"`
	// User is the bridge's RT user name for basic authentication. With a
	// Token it only names the token's user, which is needed when the token
	// is not in RT's usual "1-<user id>-<secret>" form.
	User string `env:"USER"`
	// Password is User's RT password.
	Password redact.Secret `env:"PASSWORD"`
	// Queue receives the tickets of departments Queues does not map.
	Queue string `env:"QUEUE,default=General"`
	// Queues maps department codes to queues: "housekeeping=Housekeeping,
	// maintenance=Facilities". See [ParseQueues].
	Queues Queues `env:"QUEUES"`
	// IDField is the ticket custom field holding the upstream ticket id.
	IDField string `env:"ID_FIELD,default=Guest Request ID"`
	// SentField is the multi-value ticket custom field recording which
	// agent replies and status changes were delivered upstream, so that
	// losing the bridge's state never sends them twice. "none" turns the
	// record off.
	SentField string `env:"SENT_FIELD,default=Guest Request Sent"`
	// RatingField is an optional one-value ticket custom field that holds
	// the guest's rating (e.g. "Guest Rating"); "" (the default) keeps the
	// rating in its internal note only. See [Adapter.Update].
	RatingField string `env:"RATING_FIELD"`
	// SendComments carries RT comments upstream as internal notes; when
	// false they stay in RT.
	SendComments bool `env:"SEND_COMMENTS,default=true"`
	// Timeout bounds each HTTP request to RT.
	Timeout time.Duration `env:"TIMEOUT,default=30s"`
	// Overlap is how long after RT numbers a transaction Changes still
	// looks for it, and for its body: RT may commit a transaction after a
	// later one, and a message's attachments after its transaction. A
	// change that takes longer to commit can be missed.
	Overlap time.Duration `env:"OVERLAP,default=2m"`
	// AllowInsecureHTTP accepts a plain http URL to a host that is not
	// loopback; LoadConfig sets it from TICKETBRIDGE_ALLOW_INSECURE_HTTP
	// (see adapters.CheckHTTPS).
	AllowInsecureHTTP bool
}

// LoadConfig reads the TICKETBRIDGE_RT_* variables from env, filling
// defaults, and checks them (see [Config.Validate]).
func LoadConfig(ctx context.Context, env envconfig.Lookuper) (Config, error) {
	var c Config
	if err := envvar.Load(ctx, env, EnvPrefix, "rt configuration", &c); err != nil {
		return Config{}, err
	}
	allow, err := adapters.LoadInsecureHTTP(ctx, env)
	if err != nil {
		return Config{}, fmt.Errorf("read rt configuration: %w", err)
	}
	c.AllowInsecureHTTP = allow
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// withDefaults fills the defaults of the string and duration settings.
func (c Config) withDefaults() Config {
	if strings.TrimSpace(c.Queue) == "" {
		c.Queue = DefaultQueue
	}
	if strings.TrimSpace(c.IDField) == "" {
		c.IDField = DefaultIDField
	}
	if strings.TrimSpace(c.SentField) == "" {
		c.SentField = DefaultSentField
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Overlap == 0 {
		c.Overlap = DefaultOverlap
	}
	return c
}

// Validate checks the configuration and returns an error naming the
// variable and what is wrong with its value. It never echoes a credential.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := checkURL(c.URL, c.AllowInsecureHTTP); err != nil {
		return err
	}
	switch {
	case c.Token != "" && c.Password != "":
		return fmt.Errorf("%sTOKEN and %sPASSWORD are both set: use either a token, or a user and password", EnvPrefix, EnvPrefix)
	case c.Token == "" && c.User == "" && c.Password == "":
		return fmt.Errorf("%sTOKEN is not set: give the bridge's RT auth token, or %sUSER and %sPASSWORD", EnvPrefix, EnvPrefix, EnvPrefix)
	case c.Token == "" && c.User == "":
		return fmt.Errorf("%sPASSWORD is set without %sUSER", EnvPrefix, EnvPrefix)
	case c.Token == "" && c.Password == "":
		return fmt.Errorf("%sUSER is set without %sPASSWORD (or give %sTOKEN instead)", EnvPrefix, EnvPrefix, EnvPrefix)
	}
	if strings.ContainsAny(c.Token.Reveal(), " \t\r\n") {
		return fmt.Errorf("%sTOKEN contains white space: paste the token RT showed, alone", EnvPrefix)
	}
	if strings.ContainsAny(c.User, ":\r\n") {
		return fmt.Errorf("%sUSER %q contains a colon or a line break, which basic authentication cannot carry", EnvPrefix, c.User)
	}
	if strings.ContainsAny(c.Queue, "\r\n") {
		return fmt.Errorf("%sQUEUE %q contains a line break", EnvPrefix, c.Queue)
	}
	for name, v := range map[string]string{"ID_FIELD": c.IDField, "SENT_FIELD": c.SentField, "RATING_FIELD": c.RatingField} {
		if strings.ContainsAny(v, "{}'\"\\\r\n") {
			return fmt.Errorf("%s%s %q: a custom field name for the bridge may not contain braces, quotes, backslashes or line breaks", EnvPrefix, name, v)
		}
	}
	if strings.EqualFold(c.IDField, c.SentField) {
		return fmt.Errorf("%sSENT_FIELD %q is the same field as %sID_FIELD: they must be two custom fields", EnvPrefix, c.SentField, EnvPrefix)
	}
	if r := strings.TrimSpace(c.RatingField); r != "" && (strings.EqualFold(r, c.IDField) || strings.EqualFold(r, c.SentField)) {
		return fmt.Errorf("%sRATING_FIELD %q is the same field as %sID_FIELD or %sSENT_FIELD: the rating needs a custom field of its own", EnvPrefix, c.RatingField, EnvPrefix, EnvPrefix)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%sTIMEOUT %s is negative", EnvPrefix, c.Timeout)
	}
	if c.Overlap < 0 {
		return fmt.Errorf("%sOVERLAP %s is negative", EnvPrefix, c.Overlap)
	}
	return nil
}

// checkURL says what is wrong with the address a.
func checkURL(a adapters.URL, allowInsecure bool) error {
	if a.IsZero() {
		return fmt.Errorf("%sURL is not set: give the address RT answers on, e.g. http://127.0.0.1:8080 or https://rt.example.com/rt", EnvPrefix)
	}
	u := a.Parsed()
	if u == nil {
		return fmt.Errorf("%sURL does not parse as a URL: want e.g. https://rt.example.com/rt", EnvPrefix)
	}
	if u.User != nil {
		return fmt.Errorf("%sURL carries credentials: put them in %sTOKEN, or %sUSER and %sPASSWORD", EnvPrefix, EnvPrefix, EnvPrefix, EnvPrefix)
	}
	if u.Host == "" {
		return fmt.Errorf("%sURL %q has no host", EnvPrefix, redact.Parsed(u))
	}
	if err := adapters.CheckHTTPS(EnvPrefix+"URL", u, allowInsecure); err != nil {
		return err
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%sURL %q: remove the query or fragment", EnvPrefix, redact.Parsed(u))
	}
	return nil
}

// apiSuffix is trimmed from the end of the address, so that either form
// may be given.
const apiSuffix = "/REST/2.0"

// Queues is TICKETBRIDGE_RT_QUEUES, department code to queue, parsed once
// when read (go-envconfig's Decoder) by [ParseQueues].
type Queues map[string]string

// EnvDecode parses s with [ParseQueues].
func (q *Queues) EnvDecode(s string) (err error) {
	*q, err = ParseQueues(s)
	return err
}

// ParseQueues parses "department=Queue,…" (TICKETBRIDGE_RT_QUEUES). An
// empty string is an empty map. Each item needs a department code and a
// queue name; a department may appear once.
func ParseQueues(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		dept, queue, ok := strings.Cut(item, "=")
		dept, queue = strings.TrimSpace(dept), strings.TrimSpace(queue)
		switch {
		case !ok:
			return nil, fmt.Errorf("%sQUEUES item %q has no '=': want department=Queue", EnvPrefix, item)
		case dept == "":
			return nil, fmt.Errorf("%sQUEUES item %q has no department before '='", EnvPrefix, item)
		case queue == "":
			return nil, fmt.Errorf("%sQUEUES item %q has no queue after '='", EnvPrefix, item)
		case strings.ContainsAny(queue, "\r\n"):
			return nil, fmt.Errorf("%sQUEUES item %q: the queue name contains a line break", EnvPrefix, item)
		}
		if _, dup := out[dept]; dup {
			return nil, fmt.Errorf("%sQUEUES names department %q twice", EnvPrefix, dept)
		}
		out[dept] = queue
	}
	return out, nil
}
