package config

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/state"
)

func TestParseEnv(t *testing.T) {
	in := `# comment
TICKETBRIDGE_API_URL=http://127.0.0.1:8089
export TICKETBRIDGE_ADAPTER=files
TICKETBRIDGE_AUTHOR_NAME=Front desk #2

TICKETBRIDGE_SCHEDULE="@every 1m"
TICKETBRIDGE_BACKFILL='assigned,in_progress'
TICKETBRIDGE_RT_QUEUES=housekeeping=Rooms,maintenance=Repairs
EMPTY=
`
	got, err := ParseEnv(strings.NewReader(in), "test.env")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"TICKETBRIDGE_API_URL":     "http://127.0.0.1:8089",
		"TICKETBRIDGE_ADAPTER":     "files",
		"TICKETBRIDGE_AUTHOR_NAME": "Front desk #2", // as systemd reads it
		"TICKETBRIDGE_SCHEDULE":    "@every 1m",
		"TICKETBRIDGE_BACKFILL":    "assigned,in_progress",
		"TICKETBRIDGE_RT_QUEUES":   "housekeeping=Rooms,maintenance=Repairs",
		"EMPTY":                    "",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d variables %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestParseEnvNamesTheBadLine(t *testing.T) {
	for _, in := range []string{"JUSTAWORD\n", "=value\n", "A B=c\n", "A=\"unterminated\\\"\n"} {
		_, err := ParseEnv(strings.NewReader("# ok\n"+in), "bad.env")
		if err == nil || !strings.Contains(err.Error(), "bad.env: line 2") {
			t.Errorf("parseEnv(%q) error = %v, want one naming bad.env line 2", in, err)
		}
	}
}

func TestEnvironmentWinsOverEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.env")
	if err := os.WriteFile(path, []byte("TICKETBRIDGE_LOG_LEVEL=debug\nTICKETBRIDGE_ADAPTER=rt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TICKETBRIDGE_LOG_LEVEL", "warn")
	src, err := FindSource(path, Layout{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadDaemon(context.Background(), src.Env)
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "warn" || c.Adapter != "rt" {
		t.Fatalf("LogLevel=%q Adapter=%q, want warn (environment) and rt (file)", c.LogLevel, c.Adapter)
	}
}

func TestLoadConfigDefaultsAndErrors(t *testing.T) {
	ctx := context.Background()
	c, err := LoadDaemon(ctx, envconfig.MapLookuper(map[string]string{"STATE_DIRECTORY": "/var/lib/ticketbridge"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.State.Value() != "/var/lib/ticketbridge/state.db" || c.Adapter != "files" || c.LogFormat != "auto" {
		t.Fatalf("defaults: %+v", c)
	}
	for k, v := range map[string]string{"TICKETBRIDGE_LOG_FORMAT": "xml", "TICKETBRIDGE_LOG_LEVEL": "loud"} {
		_, err := LoadDaemon(ctx, envconfig.MapLookuper(map[string]string{k: v}))
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: error %v, want one naming the variable", k, v, err)
		}
	}
}

// TICKETBRIDGE_PG_MAX_CONNS sizes the pool to a PostgreSQL state as the
// URL's pool_max_conns; a state file takes no such setting.
func TestPGMaxConns(t *testing.T) {
	ctx := context.Background()
	load := func(vars map[string]string) (Daemon, error) { return LoadDaemon(ctx, envconfig.MapLookuper(vars)) }
	c, err := load(map[string]string{"TICKETBRIDGE_STATE": "postgres://tb:secret@db.example/tb?sslmode=verify-full", "TICKETBRIDGE_PG_MAX_CONNS": "7"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.State.Value(), "pool_max_conns=7") || !strings.Contains(c.State.Value(), "sslmode=verify-full") || !strings.Contains(c.State.Value(), "tb:secret@db.example/tb") {
		t.Errorf("state URL %q: want the URL given with pool_max_conns=7", c.State.Value())
	}
	if c, err = load(map[string]string{"TICKETBRIDGE_STATE": "/var/lib/ticketbridge/state.db", "TICKETBRIDGE_PG_MAX_CONNS": "7"}); err != nil || c.State.Value() != "/var/lib/ticketbridge/state.db" {
		t.Errorf("a state file with TICKETBRIDGE_PG_MAX_CONNS: %q, %v", c.State.Value(), err)
	}
	// The other forms pgx reads: a keyword/value connection string (its
	// own pool_max_conns overridden), a URL with its scheme in capitals.
	for _, v := range []string{
		"host=db.example user=tb password=secret dbname=tb pool_max_conns=3",
		"POSTGRES://tb:secret@db.example/tb",
	} {
		c, err := load(map[string]string{"TICKETBRIDGE_STATE": v, "TICKETBRIDGE_PG_MAX_CONNS": "7"})
		if err != nil {
			t.Fatal(err)
		}
		pc, err := pgxpool.ParseConfig(c.State.Value())
		if err != nil {
			t.Errorf("TICKETBRIDGE_STATE=%s with TICKETBRIDGE_PG_MAX_CONNS=7: pgx does not parse the result: %v", state.Redacted(v), err)
			continue
		}
		if pc.MaxConns != 7 || pc.ConnConfig.Host != "db.example" || pc.ConnConfig.Password != "secret" || pc.ConnConfig.Database != "tb" {
			t.Errorf("TICKETBRIDGE_STATE=%s with TICKETBRIDGE_PG_MAX_CONNS=7: %d connections to %s/%s", state.Redacted(v), pc.MaxConns, pc.ConnConfig.Host, pc.ConnConfig.Database)
		}
	}
	_, err = load(map[string]string{"TICKETBRIDGE_STATE": "postgres://tb:secret@db.example/tb", "TICKETBRIDGE_PG_MAX_CONNS": "-1"})
	if err == nil || !strings.Contains(err.Error(), "TICKETBRIDGE_PG_MAX_CONNS") || strings.Contains(err.Error(), "secret") {
		t.Errorf("TICKETBRIDGE_PG_MAX_CONNS=-1: error %v, want one naming the variable", err)
	}
}

func TestAPIKeySources(t *testing.T) {
	const key = "rta_0123456789abcdef"
	dir := t.TempDir()
	private := filepath.Join(dir, "api-key")
	if err := os.WriteFile(private, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open-key")
	if err := os.WriteFile(open, []byte(key), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	none := envconfig.MapLookuper(nil)
	creds := envconfig.MapLookuper(map[string]string{"CREDENTIALS_DIRECTORY": dir})

	cases := []struct {
		name    string
		c       Daemon
		env     envconfig.Lookuper
		wantErr string
	}{
		{"variable", Daemon{APIKey: key}, none, ""},
		{"file", Daemon{APIKeyFile: private}, none, ""},
		{"systemd credential", Daemon{}, creds, ""},
		{"both", Daemon{APIKey: key, APIKeyFile: private}, none, "not both"},
		{"world-readable file", Daemon{APIKeyFile: open}, none, "chmod 600"},
		{"empty file", Daemon{APIKeyFile: empty}, none, "empty"},
		{"missing file", Daemon{APIKeyFile: filepath.Join(dir, "nope")}, none, "no such file"},
		{"nothing", Daemon{}, none, "TICKETBRIDGE_API_KEY_FILE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.ReadAPIKey(tc.env)
			if tc.wantErr == "" {
				if err != nil || got != key {
					t.Fatalf("apiKey = %q, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatalf("error %q contains the key", err)
			}
		})
	}
}

// TestConfigExample: config.example.env parses as systemd and --env-file
// read it, and names every TICKETBRIDGE_ variable the code reads, including
// the adapters' prefixed ones.
func TestConfigExample(t *testing.T) {
	example, err := os.ReadFile("../../config.example.env")
	if err != nil {
		t.Fatal(err)
	}
	// Commented-out defaults must parse too once uncommented.
	uncommented := regexp.MustCompile(`(?m)^#(TICKETBRIDGE_)`).ReplaceAll(example, []byte("$1"))
	vars, err := ParseEnv(bytes.NewReader(uncommented), "config.example.env")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDaemon(context.Background(), envconfig.MapLookuper(vars)); err != nil {
		t.Fatalf("the example's defaults do not load: %v", err)
	}
	var missing []string
	literal := regexp.MustCompile(`TICKETBRIDGE_[A-Z0-9_]+`)
	prefix := regexp.MustCompile(`EnvPrefix\s*=\s*"(TICKETBRIDGE_[A-Z0-9_]+_)"|PrefixLookuper\("(TICKETBRIDGE_[A-Z0-9_]+_)"`)
	tag := regexp.MustCompile("env:\"([A-Z0-9_]+)")
	err = filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if kit := filepath.Base(filepath.Dir(path)); strings.HasSuffix(kit, "test") || strings.HasSuffix(kit, "fake") || kit == "testutil" {
			return nil // a test kit: what it reads is for tests, not for the daemon
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		names := literal.FindAllString(string(src), -1)
		if m := prefix.FindStringSubmatch(string(src)); m != nil {
			p := m[1] + m[2]
			dir, _ := os.ReadDir(filepath.Dir(path))
			for _, f := range dir {
				if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), f.Name())); err == nil && !strings.HasSuffix(f.Name(), "_test.go") {
					for _, tm := range tag.FindAllStringSubmatch(string(b), -1) {
						names = append(names, p+tm[1])
					}
				}
			}
		}
		for _, n := range names {
			if strings.HasSuffix(n, "_") {
				continue // a prefix, completed by the tags above
			}
			if strings.HasPrefix(n, "TICKETBRIDGE_TEST_") {
				continue // a development server's line (deploy/dev), read by the demo: no setting of the daemon
			}
			if _, ok := vars[n]; !ok && !bytes.Contains(example, []byte(n+"=")) {
				missing = append(missing, n+" ("+path+")")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("config.example.env lacks:\n%s", strings.Join(missing, "\n"))
	}
}

// TestPlainHTTPRefusedOffLoopback: the API key, the helpdesk's credentials
// and the webhook's signed deliveries go over https, or plain http to a
// loopback address; TICKETBRIDGE_ALLOW_INSECURE_HTTP=true is the one
// opt-out, and the error names it, the variable and the address (never
// its query values).
func TestPlainHTTPRefusedOffLoopback(t *testing.T) {
	ctx := context.Background()
	secret := strings.Repeat("s", 40)
	for _, tc := range []struct {
		name, variable string
		env            map[string]string
		load           func(env envconfig.Lookuper) error
	}{
		{"API", "TICKETBRIDGE_API_URL", map[string]string{"TICKETBRIDGE_API_URL": "http://api.example.net"}, func(env envconfig.Lookuper) error {
			cfg, err := LoadDaemon(ctx, env)
			if err != nil {
				return err
			}
			return CheckAPIURL(cfg.APIURL, cfg.AllowInsecureHTTP)
		}},
		{"Request Tracker", "TICKETBRIDGE_RT_URL", map[string]string{"TICKETBRIDGE_RT_URL": "http://rt.example.net/rt", "TICKETBRIDGE_RT_TOKEN": "tok-123456"},
			func(env envconfig.Lookuper) error { _, err := rt.LoadConfig(ctx, env); return err }},
		{"Zammad", "TICKETBRIDGE_ZAMMAD_URL", map[string]string{"TICKETBRIDGE_ZAMMAD_URL": "http://zammad.example.net", "TICKETBRIDGE_ZAMMAD_TOKEN": "tok-123456", "TICKETBRIDGE_ZAMMAD_CUSTOMER": "guests@hotel.example"},
			func(env envconfig.Lookuper) error { _, err := zammad.LoadConfig(ctx, env); return err }},
		{"webhook", "TICKETBRIDGE_WEBHOOK_URL", map[string]string{"TICKETBRIDGE_WEBHOOK_URL": "http://hooks.example.net/in", "TICKETBRIDGE_WEBHOOK_SECRET": secret, "TICKETBRIDGE_WEBHOOK_LISTEN": "off", "TICKETBRIDGE_WEBHOOK_DIR": t.TempDir()},
			func(env envconfig.Lookuper) error { _, err := webhook.LoadConfig(ctx, env, ""); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.load(envconfig.MapLookuper(tc.env))
			if err == nil {
				t.Fatal("plain http to a host that is not loopback accepted")
			}
			for _, want := range []string{tc.variable, "http://", "TICKETBRIDGE_ALLOW_INSECURE_HTTP=true"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
			optOut := map[string]string{"TICKETBRIDGE_ALLOW_INSECURE_HTTP": "true"}
			loopback := map[string]string{}
			for k, v := range tc.env {
				optOut[k] = v
				loopback[k] = v
			}
			loopback[tc.variable] = "http://127.0.0.1:8089/x"
			if err := tc.load(envconfig.MapLookuper(optOut)); err != nil {
				t.Errorf("with the opt-out: %v", err)
			}
			if err := tc.load(envconfig.MapLookuper(loopback)); err != nil {
				t.Errorf("to loopback: %v", err)
			}
		})
	}
}
