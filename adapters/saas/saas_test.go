package saas_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/internal/envvar"
)

type config struct {
	Tag     string        `env:"TAG,default=ticketbridge"`
	Timeout time.Duration `env:"TIMEOUT,default=30s"`
	Pages   int           `env:"PAGES"`
}

func TestLoadConfigAndDefaults(t *testing.T) {
	var c config
	if err := envvar.Load(t.Context(), envconfig.MapLookuper(map[string]string{"X_PAGES": "3"}), "X_", "test configuration", &c); err != nil {
		t.Fatal(err)
	}
	if c != (config{Tag: "ticketbridge", Timeout: 30 * time.Second, Pages: 3}) {
		t.Errorf("loaded %+v", c)
	}
	err := envvar.Load(t.Context(), envconfig.MapLookuper(map[string]string{"X_TIMEOUT": "soon"}), "X_", "test configuration", &config{})
	if err == nil || !strings.Contains(err.Error(), "X_TIMEOUT") {
		t.Errorf("a bad duration: %v, want an error naming X_TIMEOUT", err)
	}
	d := config{Tag: "none"}
	saas.Defaults(&d)
	if d != (config{Tag: "none", Timeout: 30 * time.Second}) {
		t.Errorf("Defaults: %+v, want the set tag kept and the timeout filled", d)
	}
}

func TestSinceIsReadOnce(t *testing.T) {
	type config struct {
		Since saas.Since `env:"SINCE"`
	}
	load := func(v string) (config, error) {
		var c config
		env := envconfig.MapLookuper(map[string]string{"SINCE": v})
		err := envvar.Load(t.Context(), env, "", "x configuration", &c)
		return c, err
	}
	for in, want := range map[string]time.Time{
		"":                     time.Unix(0, 0).UTC(),
		"2026-01-31":           time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC),
		"2026-01-31T12:00:00Z": time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC),
	} {
		if c, err := load(in); err != nil || !c.Since.Time().Equal(want) {
			t.Errorf("SINCE=%q: %v, %v; want %v", in, c.Since.Time(), err, want)
		}
	}
	for bad, want := range map[string]string{
		"1969-12-31": `SINCE="1969-12-31": is before 1970`,
		"yesterday":  `SINCE="yesterday": want a date such as 2026-01-31`,
	} {
		if _, err := load(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SINCE=%q: %v, want an error holding %q", bad, err, want)
		}
	}
}

func TestLife(t *testing.T) {
	var l saas.Life
	if err := l.Check("x adapter"); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if err := l.Check("x adapter"); !errors.Is(err, saas.ErrClosed) || !strings.Contains(err.Error(), "x adapter") {
		t.Errorf("Check after Close: %v", err)
	}
}

func TestInput(t *testing.T) {
	in := saas.Input{Name: "x"}
	for _, err := range []error{
		in.UpstreamID("ensure", "a b"),
		in.Messages("1", []adapters.Message{{UpstreamID: "m", Body: " "}}),
		in.Messages("1", []adapters.Message{{UpstreamID: "", Body: "b"}}),
		in.Sent("1", "e", adapters.MarkerNoMessage),
		in.Sent("1", "", "m"),
	} {
		if !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("%v, want ErrInvalid", err)
		}
	}
	if err := in.Sent("1", "e", ""); err != nil {
		t.Errorf("a status change's delivery: %v", err)
	}
	short := saas.Input{Name: "x", Valid: func(s string) bool { return len(s) < 3 }}
	if err := short.UpstreamID("look up", "abcd"); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Valid is not used: %v", err)
	}
}

func TestHeld(t *testing.T) {
	h := saas.NewMarkers()
	h.Text("a\n\n"+adapters.Marker{Kind: adapters.MarkerMessage, ID: "m1"}.Line(), "c1")
	h.Text(adapters.Marker{Kind: adapters.MarkerMessage, ID: "m1"}.Line(), "c2")
	h.Text(adapters.Marker{Kind: adapters.MarkerSent, ID: "e1", Arg: "m9"}.Line(), "c3")
	h.Text("no marker", "c4")
	o := saas.NewMarkers()
	o.Add(adapters.Marker{Kind: adapters.MarkerMessage, ID: "m2"}, "c5")
	h.Merge(o)
	f := h.Found("7")
	if f.Ref != "7" || len(f.Messages) != 2 || f.Messages["m1"] != "c1" || f.Messages["m2"] != "c5" || f.Sent["e1"] != "m9" {
		t.Errorf("Found: %+v", f)
	}
}

func TestCursor(t *testing.T) {
	c := saas.Cursor{Head: 42, Items: []string{"a", "b"}}
	s := c.Format("x1:")
	if s != "x1:42:a,b" {
		t.Fatalf("Format: %q", s)
	}
	got, ok, err := saas.ParseCursor(s, "x1:", "x")
	if err != nil || !ok || got.Head != 42 || strings.Join(got.Items, ",") != "a,b" {
		t.Errorf("ParseCursor(%q) = %+v, %v, %v", s, got, ok, err)
	}
	if _, ok, err := saas.ParseCursor("", "x1:", "x"); ok || err != nil {
		t.Errorf("the empty cursor: %v, %v", ok, err)
	}
	for _, bad := range []adapters.Cursor{"y1:1:", "x1:1", "x1:-1:", "x1:z:"} {
		if _, _, err := saas.ParseCursor(bad, "x1:", "x"); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("ParseCursor(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

func TestMemo(t *testing.T) {
	var m saas.Memo[int]
	calls := 0
	fetch := func(context.Context) (int, error) {
		calls++
		if calls == 1 {
			return 0, errors.New("down")
		}
		return 7, nil
	}
	if _, err := m.Get(t.Context(), fetch); err == nil {
		t.Fatal("a failed fetch was kept")
	}
	for range 2 {
		if v, err := m.Get(t.Context(), fetch); err != nil || v != 7 {
			t.Fatalf("Get: %v, %v", v, err)
		}
	}
	if calls != 2 {
		t.Errorf("%d fetches, want 2", calls)
	}
}
