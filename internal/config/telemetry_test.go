package config

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"
)

func TestTelemetryConfig(t *testing.T) {
	ctx := context.Background()
	c, err := LoadTelemetry(ctx, envconfig.MapLookuper(nil))
	if err != nil || c.Listen != "" || c.CycleMax != 20*time.Minute {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = LoadTelemetry(ctx, envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_LISTEN": " [::1]:9464 ", "TICKETBRIDGE_CYCLE_MAX": "45m"}))
	if err != nil || c.Listen != "[::1]:9464" || c.CycleMax != 45*time.Minute {
		t.Fatalf("set: %+v, %v", c, err)
	}
	for k, v := range map[string]string{
		"TICKETBRIDGE_LISTEN":    "localhost",
		"TICKETBRIDGE_CYCLE_MAX": "10s",
	} {
		_, err := LoadTelemetry(ctx, envconfig.MapLookuper(map[string]string{k: v}))
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
	if _, err := LoadTelemetry(ctx, envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_LISTEN": "127.0.0.1:99999"})); err == nil {
		t.Error("port 99999 accepted")
	}
}
