package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sethvargo/go-envconfig"
)

// Config is the daemon's own configuration; the engine, the adapters and
// the metrics server declare theirs in their packages and process them
// against the same lookuper. Every variable is listed in config.example.env.
type Config struct {
	APIURL     string `env:"TICKETBRIDGE_API_URL"`
	APIKey     secret `env:"TICKETBRIDGE_API_KEY"`
	APIKeyFile string `env:"TICKETBRIDGE_API_KEY_FILE"`
	State      string `env:"TICKETBRIDGE_STATE"`
	Adapter    string `env:"TICKETBRIDGE_ADAPTER, default=files"`
	LogLevel   string `env:"TICKETBRIDGE_LOG_LEVEL, default=info"`
	LogFormat  string `env:"TICKETBRIDGE_LOG_FORMAT, default=auto"`

	StatusToHelpdesk   string `env:"TICKETBRIDGE_STATUS_TO_HELPDESK"`
	StatusFromHelpdesk string `env:"TICKETBRIDGE_STATUS_FROM_HELPDESK"`
}

// secret is a string that never prints itself.
type secret string

func (s secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString hides the value from %#v too.
func (s secret) GoString() string { return s.String() }

// LogValue hides the value from log/slog handlers, which do not call String.
func (s secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText hides the value from encoders.
func (s secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// envFlag is the --env-file flag shared by the commands that read the
// configuration.
type envFlag struct{ path string }

func (f *envFlag) register(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&f.path, "env-file", "", "read TICKETBRIDGE_* variables from `FILE` (KEY=VALUE lines, as config.example.env); the process environment wins")
}

// lookuper returns the environment, backed by the env file when one is
// named. A variable set in the process environment wins over the file, so
// one value can be overridden on the command line.
func (f *envFlag) lookuper() (envconfig.Lookuper, error) {
	if f.path == "" {
		return envconfig.OsLookuper(), nil
	}
	m, err := readEnvFile(f.path)
	if err != nil {
		return nil, err
	}
	return envconfig.MultiLookuper(envconfig.OsLookuper(), envconfig.MapLookuper(m)), nil
}

// readEnvFile reads KEY=VALUE lines as systemd's EnvironmentFile= does, so
// that --env-file and the service read a file alike: blank lines and lines
// starting with # are skipped, a # after a value is part of the value, an
// "export " prefix is allowed, and a value may be quoted with single or
// double quotes (double quotes understand Go escapes).
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read env file: %w", err)
	}
	defer f.Close()
	return parseEnv(f, path)
}

func parseEnv(r io.Reader, name string) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.ContainsAny(key, " \t\"'") {
			return nil, fmt.Errorf("read env file %s: line %d: want KEY=VALUE", name, n)
		}
		val = strings.TrimSpace(val)
		switch {
		case len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"':
			uq, err := strconv.Unquote(val)
			if err != nil {
				return nil, fmt.Errorf("read env file %s: line %d: %s: bad quoted value", name, n, key)
			}
			val = uq
		case len(val) >= 2 && val[0] == '\'' && val[len(val)-1] == '\'':
			val = val[1 : len(val)-1]
		}
		m[key] = val
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read env file %s: %w", name, err)
	}
	return m, nil
}

// loadConfig processes the daemon's variables and resolves the defaults
// that depend on the environment (systemd's state and credentials
// directories).
func loadConfig(ctx context.Context, env envconfig.Lookuper) (Config, error) {
	var c Config
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &c, Lookuper: env}); err != nil {
		return c, fmt.Errorf("read configuration: %w", err)
	}
	if c.State == "" {
		c.State = "ticketbridge.db"
		if dir, ok := env.Lookup("STATE_DIRECTORY"); ok && dir != "" {
			// systemd may pass several directories separated by colons.
			c.State = filepath.Join(strings.Split(dir, ":")[0], "state.db")
		}
	}
	switch c.LogFormat {
	case "auto", "text", "json":
	default:
		return c, fmt.Errorf("read configuration: TICKETBRIDGE_LOG_FORMAT=%q: want auto, text or json", c.LogFormat)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return c, fmt.Errorf("read configuration: TICKETBRIDGE_LOG_LEVEL: %w", err)
	}
	return c, nil
}

// apiKey returns the API key from, in order: TICKETBRIDGE_API_KEY,
// TICKETBRIDGE_API_KEY_FILE, or systemd's $CREDENTIALS_DIRECTORY/api-key.
// A key file readable by other users is refused: the key opens every guest
// request of the hotel.
func (c Config) apiKey(env envconfig.Lookuper) (string, error) {
	if c.APIKey != "" {
		if c.APIKeyFile != "" {
			return "", errors.New("read API key: set TICKETBRIDGE_API_KEY or TICKETBRIDGE_API_KEY_FILE, not both")
		}
		return strings.TrimSpace(string(c.APIKey)), nil
	}
	path := c.APIKeyFile
	if path == "" {
		if dir, ok := env.Lookup("CREDENTIALS_DIRECTORY"); ok && dir != "" {
			if _, err := os.Stat(filepath.Join(dir, "api-key")); err == nil {
				path = filepath.Join(dir, "api-key")
			}
		}
	}
	if path == "" {
		return "", errors.New("read API key: none configured: set TICKETBRIDGE_API_KEY_FILE (or TICKETBRIDGE_API_KEY) to the hotel's rta_ key")
	}
	return readSecretFile(path, "API key")
}

// readSecretFile reads a one-line secret from path, refusing a file that
// other users may read.
func readSecretFile(path, what string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("read %s file: %w", what, err)
	}
	if fi.Mode().Perm()&0o004 != 0 {
		return "", fmt.Errorf("read %s file %s: readable by every user (mode %v); run chmod 600 %s", what, path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return "", fmt.Errorf("read %s file %s: permission denied for this user", what, path)
		}
		return "", fmt.Errorf("read %s file: %w", what, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("read %s file %s: the file is empty", what, path)
	}
	return v, nil
}
