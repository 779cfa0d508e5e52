package sync

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

func TestConfigDefaultsFromEnv(t *testing.T) {
	var c Config
	if err := envconfig.ProcessWith(context.Background(), &envconfig.Config{Target: &c, Lookuper: envconfig.MapLookuper(nil)}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, DefaultConfig()) {
		t.Fatalf("env defaults %+v differ from DefaultConfig %+v", c, DefaultConfig())
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p, _ := c.parse()
	if p.interval != 30*time.Second {
		t.Fatalf("interval %s", p.interval)
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	cases := []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Schedule = Schedule{} }, "TICKETBRIDGE_SCHEDULE is empty"},
		{func(c *Config) { c.Concurrency = 0 }, "TICKETBRIDGE_CONCURRENCY=0: want 1 to 64"},
		{func(c *Config) { c.FullReadInterval = 0 }, "TICKETBRIDGE_FULL_READ_INTERVAL"},
		{func(c *Config) { c.ReconcileInterval = 0 }, "TICKETBRIDGE_RECONCILE_INTERVAL=0s: want a positive duration"},
		{func(c *Config) { c.QuietMax = -time.Second }, "TICKETBRIDGE_QUIET_MAX"},
		{func(c *Config) { c.ClosedInterval = 0 }, "TICKETBRIDGE_CLOSED_INTERVAL"},
		{func(c *Config) { c.ClosedGrace = -time.Hour }, "TICKETBRIDGE_CLOSED_GRACE"},
		{func(c *Config) { c.RetiredInterval = 0 }, "TICKETBRIDGE_RETIRED_INTERVAL"},
		{func(c *Config) { c.AuthorName = " " }, "TICKETBRIDGE_AUTHOR_NAME is empty"},
		{func(c *Config) { c.AuditDays = -1 }, "TICKETBRIDGE_AUDIT_DAYS=-1: want 0 (keep forever) to 3650 days"},
		{func(c *Config) { c.AuditDays = MaxAuditDays + 1 }, "TICKETBRIDGE_AUDIT_DAYS=3651"},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		tc.change(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to contain %q", c, err, tc.want)
		}
	}
}

func TestConfigSchedulesAndBackfill(t *testing.T) {
	for s, want := range map[string]time.Duration{"@every 5m": 5 * time.Minute, "*/2 * * * *": 2 * time.Minute, "@hourly": time.Hour} {
		c := DefaultConfig()
		var err error
		if c.Schedule, err = NewSchedule(s); err != nil {
			t.Fatal(err)
		}
		p, err := c.parse()
		if err != nil || p.interval != want {
			t.Errorf("%q: interval %s, err %v; want %s", s, p.interval, err, want)
		}
	}
	bf, err := ParseBackfill(" assigned,new,in_progress,assigned ")
	if err != nil || len(bf) != 2 || bf[0] != guestapi.StatusAssigned || bf[1] != guestapi.StatusInProgress {
		t.Fatalf("backfill %v, %v", bf, err)
	}
	c := DefaultConfig()
	c.Schedule, c.QuietMax = Every(time.Hour), time.Minute
	p, err := c.parse()
	if err != nil || p.QuietMax != time.Hour {
		t.Fatalf("a quiet cap below the interval: %s, %v; want it raised to the interval", p.QuietMax, err)
	}
}

func TestLoadConfigNamesTheVariable(t *testing.T) {
	// The schedule and the backfill are parsed when read, and say what is
	// wrong naming the variable, once.
	for v, want := range map[string]string{
		"every 30s":  `TICKETBRIDGE_SCHEDULE="every 30s"`,
		"":           "TICKETBRIDGE_SCHEDULE is empty",
		"61 * * * *": "TICKETBRIDGE_SCHEDULE",
	} {
		_, err := LoadConfig(context.Background(), envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_SCHEDULE": v}))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "TICKETBRIDGE_SCHEDULE") != 1 {
			t.Errorf("TICKETBRIDGE_SCHEDULE=%q: error %v, want it to contain %s once", v, err, want)
		}
	}
	_, err := LoadConfig(context.Background(), envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_BACKFILL": "assigned, in-progress"}))
	if want := `read sync configuration: TICKETBRIDGE_BACKFILL: unknown status "in-progress"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a bad backfill: %v, want %s", err, want)
	}
	for env, want := range map[string]string{
		"TICKETBRIDGE_CONCURRENCY":    `TICKETBRIDGE_CONCURRENCY="four"`,
		"TICKETBRIDGE_QUIET_MAX":      `TICKETBRIDGE_QUIET_MAX="four"`,
		"TICKETBRIDGE_NOTES_UPSTREAM": `TICKETBRIDGE_NOTES_UPSTREAM="four"`,
		"TICKETBRIDGE_SCHEDULE":       `TICKETBRIDGE_SCHEDULE="four"`,
		"TICKETBRIDGE_BACKFILL":       `TICKETBRIDGE_BACKFILL: unknown status "four"`,
	} {
		_, err := LoadConfig(context.Background(), envconfig.MapLookuper(map[string]string{env: "four"}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=four: error %v, want it to contain %s", env, err, want)
		}
	}
	c, err := LoadConfig(context.Background(), envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_NOTES_UPSTREAM": "false", "TICKETBRIDGE_BACKFILL": "assigned"}))
	if err != nil || c.NotesUpstream != NotesOff || !reflect.DeepEqual(c.Backfill, Backfill{guestapi.StatusAssigned}) {
		t.Fatalf("LoadConfig: %+v, %v", c, err)
	}
}
