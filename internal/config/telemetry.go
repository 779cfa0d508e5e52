package config

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"
)

// minCycleMax is the shortest TICKETBRIDGE_CYCLE_MAX.
const minCycleMax = time.Minute

// Telemetry is read from the daemon's environment.
type Telemetry struct {
	// Listen is the host:port of the metrics and health endpoints; empty
	// serves none.
	Listen string `env:"TICKETBRIDGE_LISTEN"`
	// CycleMax is how long a cycle may take past its scheduled start before
	// the daemon counts as stuck and stops feeding systemd's watchdog; it is
	// also each cycle's deadline (sync.Scheduler.Deadline).
	CycleMax time.Duration `env:"TICKETBRIDGE_CYCLE_MAX, default=20m"`
}

// LoadTelemetry reads and checks the telemetry's variables.
func LoadTelemetry(ctx context.Context, env envconfig.Lookuper) (Telemetry, error) {
	var c Telemetry
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &c, Lookuper: env}); err != nil {
		return c, fmt.Errorf("read configuration: %w", err)
	}
	c.Listen = strings.TrimSpace(c.Listen)
	if c.Listen != "" {
		host, port, err := net.SplitHostPort(c.Listen)
		if err != nil {
			return c, fmt.Errorf("read configuration: TICKETBRIDGE_LISTEN=%q: want host:port such as 127.0.0.1:9464", c.Listen)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return c, fmt.Errorf("read configuration: TICKETBRIDGE_LISTEN=%q: port %q: want a number from 0 to 65535", c.Listen, port)
		}
		if strings.ContainsAny(host, "/ ") {
			return c, fmt.Errorf("read configuration: TICKETBRIDGE_LISTEN=%q: want host:port such as 127.0.0.1:9464", c.Listen)
		}
	}
	if c.CycleMax < minCycleMax {
		return c, fmt.Errorf("read configuration: TICKETBRIDGE_CYCLE_MAX=%s: want %s or more, such as 20m", c.CycleMax, minCycleMax)
	}
	return c, nil
}
