package sync

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/envvar"
)

// Config is the engine's configuration, read from TICKETBRIDGE_* variables
// with go-envconfig. The zero value is not usable; [DefaultConfig] returns
// the defaults the tags name, and [Config.Validate] checks a value.
type Config struct {
	// Schedule says when a cycle runs: a cron expression of five fields
	// ("*/2 * * * *") or a descriptor ("@every 30s", "@hourly").
	Schedule Schedule `env:"TICKETBRIDGE_SCHEDULE, default=@every 30s"`
	// Backfill lists, comma separated, the statuses besides new whose
	// tickets are imported on the first start (e.g. "assigned,in_progress").
	Backfill Backfill `env:"TICKETBRIDGE_BACKFILL"`
	// Concurrency bounds the tickets worked on at once (reads, appends,
	// sends).
	Concurrency int `env:"TICKETBRIDGE_CONCURRENCY, default=4"`
	// FullReadInterval is the longest an open ticket goes without being
	// read, whatever the lists show: the safety net for a change that does
	// not move updated_at (the spec does not promise that a message does).
	// The reads are spread evenly over the cycles. The engine shortens it
	// by itself, down to a quarter, when a read finds a change no list
	// signalled.
	FullReadInterval time.Duration `env:"TICKETBRIDGE_FULL_READ_INTERVAL, default=10m"`
	// ReconcileInterval is the longest an open ticket goes without being
	// reconciled: both sides' current state compared with the status they
	// last agreed on, and what one side missed carried to it (see
	// reconcile.go). The reconciles are spread evenly over the cycles.
	ReconcileInterval time.Duration `env:"TICKETBRIDGE_RECONCILE_INTERVAL, default=1h"`
	// SweepInterval is accepted and ignored: every cycle now lists every
	// status, which the periodic sweep of the whole queue used to do.
	//
	// Deprecated: has no effect.
	SweepInterval time.Duration `env:"TICKETBRIDGE_SWEEP_INTERVAL"`
	// QuietMax caps the interval at which a quiet ticket is read again, and
	// the backoff of a ticket or an outbound entry whose last try failed.
	QuietMax time.Duration `env:"TICKETBRIDGE_QUIET_MAX, default=30m"`
	// ClosedInterval is how often a closed ticket is read again.
	ClosedInterval time.Duration `env:"TICKETBRIDGE_CLOSED_INTERVAL, default=1h"`
	// ClosedGrace is how long a closed ticket is read at ClosedInterval
	// before it is retired.
	ClosedGrace time.Duration `env:"TICKETBRIDGE_CLOSED_GRACE, default=72h"`
	// RetiredInterval is how often a retired ticket (closed for longer
	// than ClosedGrace) is still read, so that a guest message on it is
	// not lost when no list shows it changed.
	RetiredInterval time.Duration `env:"TICKETBRIDGE_RETIRED_INTERVAL, default=24h"`
	// AuthorName is the author_name of replies and notes whose agent name
	// the helpdesk does not give.
	AuthorName string `env:"TICKETBRIDGE_AUTHOR_NAME, default=Support team"`
	// Upstream says what the helpdesk sends upstream besides replies to
	// the guest: internal notes (posted with visible_to_guest false) and
	// status changes. Not set: both (see rules.go).
	Upstream Upstream `env:"TICKETBRIDGE_UPSTREAM"`
	// NotesUpstream is the notes item of Upstream, as older versions
	// read it; setting both is an error.
	//
	// Deprecated: set Upstream (TICKETBRIDGE_UPSTREAM).
	NotesUpstream NotesSwitch `env:"TICKETBRIDGE_NOTES_UPSTREAM"`

	// IncludeDepartments, when set, lists the only departments whose
	// requests are mirrored; ExcludeDepartments those whose requests are
	// not. IncludeOrigins and ExcludeOrigins do the same by origin
	// (guest, staff, internal). One of each pair may be set; a request
	// must pass both dimensions (see rules.go).
	IncludeDepartments Departments `env:"TICKETBRIDGE_INCLUDE_DEPARTMENTS"`
	ExcludeDepartments Departments `env:"TICKETBRIDGE_EXCLUDE_DEPARTMENTS"`
	IncludeOrigins     Origins     `env:"TICKETBRIDGE_INCLUDE_ORIGINS"`
	ExcludeOrigins     Origins     `env:"TICKETBRIDGE_EXCLUDE_ORIGINS"`

	// Priority derives the helpdesk priority from the request's
	// department and due date (see priority.go); off, the default, leaves
	// the helpdesk's priority alone.
	Priority PriorityRule `env:"TICKETBRIDGE_PRIORITY"`

	// AuditDays is how many days each request's audit trail keeps its
	// entries (state.Audit; `ticketbridge log`). 0 keeps them forever.
	AuditDays int `env:"TICKETBRIDGE_AUDIT_DAYS, default=90"`

	// AllowMove lets a start take another API, helpdesk or key's
	// organisation than the state was synced with, without
	// `ticketbridge confirm-move` (see serves.go): for a deliberate move,
	// set for one start. Not set: each such start is held.
	AllowMove Moves `env:"TICKETBRIDGE_ALLOW_MOVE"`
}

// DefaultConfig returns the configuration with every default applied.
func DefaultConfig() Config {
	return Config{
		Schedule:          Every(30 * time.Second),
		Concurrency:       4,
		FullReadInterval:  10 * time.Minute,
		ReconcileInterval: time.Hour,
		QuietMax:          30 * time.Minute,
		ClosedInterval:    time.Hour,
		ClosedGrace:       72 * time.Hour,
		RetiredInterval:   24 * time.Hour,
		AuthorName:        "Support team",
		AuditDays:         DefaultAuditDays,
	}
}

// LoadConfig reads the engine's variables from env, applies the defaults
// and validates the result. Errors name the variable and its value.
func LoadConfig(ctx context.Context, env envconfig.Lookuper) (Config, error) {
	var c Config
	if err := envvar.Load(ctx, env, "", "sync configuration", &c); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("read sync configuration: %w", err)
	}
	return c, nil
}

// DefaultAuditDays is how long the audit trails are kept by default, and
// MaxAuditDays the longest TICKETBRIDGE_AUDIT_DAYS accepted (ten years;
// 0 keeps them forever).
const (
	DefaultAuditDays = 90
	MaxAuditDays     = 3650
)

// MaxConcurrency bounds TICKETBRIDGE_CONCURRENCY.
const MaxConcurrency = 64

// ListLimit is the limit sent with every GET /tickets: the spec's maximum.
const ListLimit = 200

// ParseSchedule parses a cron expression of five fields or a descriptor
// such as "@every 30s" or "@hourly".
func ParseSchedule(s string) (cron.Schedule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("TICKETBRIDGE_SCHEDULE is empty: want a cron expression such as \"*/1 * * * *\" or \"@every 30s\"")
	}
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("TICKETBRIDGE_SCHEDULE=%q: %v: want a cron expression of five fields (\"*/1 * * * *\") or a descriptor (\"@every 30s\", \"@hourly\")", s, err)
	}
	if iv := interval(sched); iv <= 0 {
		return nil, fmt.Errorf("TICKETBRIDGE_SCHEDULE=%q: the schedule never fires", s)
	}
	return sched, nil
}

// Schedule is TICKETBRIDGE_SCHEDULE, parsed once when read
// (go-envconfig's Decoder) by [ParseSchedule]: the schedule and the text
// it was read from. The zero Schedule is not set, and [Config.Validate]
// says so.
type Schedule struct {
	cron.Schedule
	text string
}

// NewSchedule parses s with [ParseSchedule].
func NewSchedule(s string) (Schedule, error) {
	sched, err := ParseSchedule(s)
	if err != nil {
		return Schedule{}, err
	}
	return Schedule{Schedule: sched, text: strings.TrimSpace(s)}, nil
}

// Every is the schedule "@every d".
func Every(d time.Duration) Schedule {
	return Schedule{Schedule: cron.Every(d), text: "@every " + d.String()}
}

// EnvDecode parses s with [ParseSchedule]; its errors name the variable.
func (s *Schedule) EnvDecode(v string) (err error) {
	*s, err = NewSchedule(v)
	return err
}

// String is the schedule as it was written.
func (s Schedule) String() string { return s.text }

// LogValue logs the schedule as it was written.
func (s Schedule) LogValue() slog.Value { return slog.StringValue(s.text) }

// Backfill is TICKETBRIDGE_BACKFILL, parsed once when read by
// [ParseBackfill].
type Backfill []guestapi.Status

// EnvDecode parses s with [ParseBackfill]; its errors name the variable.
func (b *Backfill) EnvDecode(s string) (err error) {
	*b, err = ParseBackfill(s)
	return err
}

// interval estimates the time between two activations of sched: exact for
// @every, the gap after a fixed reference time for cron expressions.
func interval(sched cron.Schedule) time.Duration {
	if c, ok := sched.(cron.ConstantDelaySchedule); ok {
		return c.Delay
	}
	ref := time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)
	a := sched.Next(ref)
	if a.IsZero() {
		return 0
	}
	b := sched.Next(a)
	if b.IsZero() {
		return 0
	}
	return b.Sub(a)
}

// ParseBackfill parses TICKETBRIDGE_BACKFILL: a comma-separated list of
// statuses. new is always imported and may be named; duplicates are
// dropped.
func ParseBackfill(s string) ([]guestapi.Status, error) {
	var out []guestapi.Status
	seen := map[guestapi.Status]bool{guestapi.StatusNew: true}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		st, err := guestapi.ParseStatus(item)
		if err != nil {
			return nil, fmt.Errorf("TICKETBRIDGE_BACKFILL: %w", err)
		}
		if !seen[st] {
			seen[st] = true
			out = append(out, st)
		}
	}
	return out, nil
}

// Validate checks every field and names the variable of the first one that
// is wrong. The schedule and the backfill were parsed when read; Validate
// judges the values.
func (c Config) Validate() error {
	_, err := c.parse()
	return err
}

// parsed is a validated Config in the form the engine uses: the
// schedule's interval, and the intervals below it raised to it; what goes
// upstream, the old variable weighed in, and the scope (see rules.go).
type parsed struct {
	Config
	interval time.Duration
	up       Upstream
	scope    scope
}

func (c Config) parse() (parsed, error) {
	p := parsed{Config: c}
	if c.Schedule.Schedule == nil {
		return p, fmt.Errorf("TICKETBRIDGE_SCHEDULE is empty: want a cron expression such as \"*/1 * * * *\" or \"@every 30s\"")
	}
	if p.interval = interval(c.Schedule); p.interval <= 0 {
		return p, fmt.Errorf("TICKETBRIDGE_SCHEDULE=%q: the schedule never fires", c.Schedule.text)
	}
	switch {
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return p, fmt.Errorf("TICKETBRIDGE_CONCURRENCY=%d: want 1 to %d", c.Concurrency, MaxConcurrency)
	case c.FullReadInterval <= 0:
		return p, fmt.Errorf("TICKETBRIDGE_FULL_READ_INTERVAL=%s: want a positive duration such as 10m", c.FullReadInterval)
	case c.ReconcileInterval <= 0:
		return p, fmt.Errorf("TICKETBRIDGE_RECONCILE_INTERVAL=%s: want a positive duration such as 1h", c.ReconcileInterval)
	case c.QuietMax <= 0:
		return p, fmt.Errorf("TICKETBRIDGE_QUIET_MAX=%s: want a positive duration such as 30m", c.QuietMax)
	case c.ClosedInterval <= 0:
		return p, fmt.Errorf("TICKETBRIDGE_CLOSED_INTERVAL=%s: want a positive duration such as 1h", c.ClosedInterval)
	case c.ClosedGrace < 0:
		return p, fmt.Errorf("TICKETBRIDGE_CLOSED_GRACE=%s: want a duration of zero or more such as 72h", c.ClosedGrace)
	case c.RetiredInterval <= 0:
		return p, fmt.Errorf("TICKETBRIDGE_RETIRED_INTERVAL=%s: want a positive duration such as 24h", c.RetiredInterval)
	case c.AuditDays < 0 || c.AuditDays > MaxAuditDays:
		return p, fmt.Errorf("TICKETBRIDGE_AUDIT_DAYS=%d: want 0 (keep forever) to %d days", c.AuditDays, MaxAuditDays)
	case strings.TrimSpace(c.AuthorName) == "":
		return p, fmt.Errorf("TICKETBRIDGE_AUTHOR_NAME is empty: want the name shown on replies whose agent is unknown")
	case strings.ContainsAny(c.AuthorName, "\r\n"):
		return p, fmt.Errorf("TICKETBRIDGE_AUTHOR_NAME contains a line break")
	}
	var err error
	if p.up, err = c.direction(); err != nil {
		return p, err
	}
	if p.scope, err = c.scopeOf(); err != nil {
		return p, err
	}
	if c.QuietMax < p.interval {
		p.QuietMax = p.interval
	}
	if c.FullReadInterval < p.interval {
		p.FullReadInterval = p.interval
	}
	if c.ReconcileInterval < p.interval {
		p.ReconcileInterval = p.interval
	}
	return p, nil
}
