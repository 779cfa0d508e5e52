package redact_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/redact"
)

// TestSecretNeverPrints: a Secret, alone or in a struct, shows
// "[redacted]" wherever it is printed, logged or encoded, and "" when
// empty; Reveal gives the value.
func TestSecretNeverPrints(t *testing.T) {
	type config struct {
		User string
		Key  redact.Secret
	}
	s := redact.Secret("rta_secretvalue")
	c := config{User: "bridge", Key: s}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "key", s, "config", c)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "key", s, "config", c)
	encoded, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.String(), s.GoString(), fmt.Sprintf("%v %+v %#v %s", c, c, c, s), logs.String(), string(encoded)} {
		if strings.Contains(p, "secretvalue") {
			t.Errorf("the secret shows: %s", p)
		}
		if !strings.Contains(p, "[redacted]") {
			t.Errorf("not marked as set: %s", p)
		}
	}
	if got := redact.Secret("").String(); got != "" {
		t.Errorf("an empty secret prints %q", got)
	}
	if s.Reveal() != "rta_secretvalue" {
		t.Errorf("Reveal = %q", s.Reveal())
	}
}
