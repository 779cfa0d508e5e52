package config

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/envvar"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/internal/secretfile"
	"github.com/ticketbridge/ticketbridge/state"
)

// Daemon is the daemon's own configuration; the engine, the adapters and
// the metrics server declare theirs in their packages and process them
// against the same lookuper. Every variable is listed in config.example.env.
type Daemon struct {
	APIURL     string        `env:"TICKETBRIDGE_API_URL"`
	APIKey     redact.Secret `env:"TICKETBRIDGE_API_KEY"`
	APIKeyFile string        `env:"TICKETBRIDGE_API_KEY_FILE"`
	// State is where the hotel's state is kept, a file or a PostgreSQL
	// database, its kind judged once when read.
	State state.Location `env:"TICKETBRIDGE_STATE"`
	// PGMaxConns bounds the connections the process opens to the
	// PostgreSQL database of State (0: state.DefaultMaxConns); LoadDaemon
	// puts it into State as the URL's pool_max_conns.
	PGMaxConns int `env:"TICKETBRIDGE_PG_MAX_CONNS"`
	// Hotel is the name of the hotel of a daemon of many (its file's
	// name); empty for one hotel. State in PostgreSQL is kept under it.
	Hotel     string
	Adapter   string `env:"TICKETBRIDGE_ADAPTER, default=files"`
	LogLevel  string `env:"TICKETBRIDGE_LOG_LEVEL, default=info"`
	LogFormat string `env:"TICKETBRIDGE_LOG_FORMAT, default=auto"`

	// The status maps, parsed when read (adapters.StatusTo, StatusFrom).
	StatusToHelpdesk   adapters.StatusTo   `env:"TICKETBRIDGE_STATUS_TO_HELPDESK"`
	StatusFromHelpdesk adapters.StatusFrom `env:"TICKETBRIDGE_STATUS_FROM_HELPDESK"`

	// AllowInsecureHTTP accepts plain http to an API or helpdesk that is
	// not on a loopback address (see adapters.CheckHTTPS); the adapters
	// read the same variable.
	AllowInsecureHTTP bool `env:"TICKETBRIDGE_ALLOW_INSECURE_HTTP, default=false"`
}

// The service's layout, as deploy/ticketbridge.service sets it up.
const (
	ServiceEnvFile     = "/etc/ticketbridge/ticketbridge.env"
	ServiceCredDir     = "/etc/ticketbridge"
	ServiceStateDir    = "/var/lib/ticketbridge"
	ServiceCredRuntime = "/run/credentials/ticketbridge.service"
	ServiceUnit        = "/lib/systemd/system/ticketbridge.service"
	ServiceUnitDir     = "/etc/systemd/system"
)

// Layout is where the packaged service keeps its configuration,
// its key and its state. On an installed system every command reads the
// configuration as the service does (see [envFlag.source]).
type Layout struct {
	// EnvFile is the packaged env file; "" turns the emulation off.
	EnvFile string
	// CredDir holds the files the unit's LoadCredential= reads (api-key).
	CredDir string
	// StateDir is the unit's StateDirectory.
	StateDir string
	// Unit is the unit file the package installs, and UnitDir where the
	// administrator's copy and drop-ins of it are (see UnitFiles); check
	// reads them to judge what the service may reach. "" for none.
	Unit, UnitDir string
}

// Packaged is the layout of the .deb.
var Packaged = Layout{EnvFile: ServiceEnvFile, CredDir: ServiceCredDir, StateDir: ServiceStateDir, Unit: ServiceUnit, UnitDir: ServiceUnitDir}

// Source is where a command's configuration comes from.
type Source struct {
	// env looks the variables up.
	Env envconfig.Lookuper
	// file is the env file read, "" when none.
	File string
	// service is set when the packaged env file is read outside systemd:
	// the key and the state are then looked for where the unit has them.
	Service bool
	Layout  Layout
	// stateDirMissing is set when service is and the service's state
	// directory does not exist yet (systemd makes it at the first start).
	StateDirMissing bool
	// names are the TICKETBRIDGE_* names set, in the environment or the
	// file; inFile holds those set in the file only.
	names  []string
	inFile map[string]bool
	// skipped is the packaged env file when it exists but is not read,
	// because TICKETBRIDGE_* variables are set in the environment.
	skipped string
}

// FindSource finds the configuration, the same way for every command: the
// process environment, over the env file at path (--env-file). With no
// path, outside systemd and with no TICKETBRIDGE_* variable set, the
// packaged env file of l is read when it exists, and then the key and the state
// are where the unit has them: the key in the directory its LoadCredential=
// reads (a path below /run/credentials/ticketbridge.service/ is read from
// there too), the state in its StateDirectory.
func FindSource(path string, l Layout) (Source, error) {
	src := Source{File: path, Layout: l}
	if src.File == "" && l.EnvFile != "" && !UnderSystemd() {
		if _, err := os.Stat(l.EnvFile); err == nil {
			if anyTicketbridgeVar() {
				src.skipped = l.EnvFile
			} else {
				src.File = l.EnvFile
			}
		}
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, EnvPrefix) {
			src.names = append(src.names, k)
		}
	}
	src.Env = envconfig.OsLookuper()
	if src.File != "" {
		m, err := readEnvFile(src.File)
		if err != nil {
			return src, err
		}
		for k := range m {
			if strings.HasPrefix(k, EnvPrefix) && !slices.Contains(src.names, k) {
				src.names = append(src.names, k)
				if src.inFile == nil {
					src.inFile = map[string]bool{}
				}
				src.inFile[k] = true
			}
		}
		src.Env = envconfig.MultiLookuper(envconfig.OsLookuper(), envconfig.MapLookuper(m))
	}
	slices.Sort(src.names)
	if !src.IsServiceFile() || UnderSystemd() {
		return src, nil
	}
	src.Service = true
	if fi, err := os.Stat(l.StateDir); err != nil || !fi.IsDir() {
		src.StateDirMissing = true
	}
	over := map[string]string{"CREDENTIALS_DIRECTORY": l.CredDir, "STATE_DIRECTORY": l.StateDir}
	src.Env = serviceLookuper{base: envconfig.MultiLookuper(envconfig.MapLookuper(over), src.Env), credDir: l.CredDir}
	return src, nil
}

// SkipNote says, when the packaged env file is not read because
// TICKETBRIDGE_* variables are set in the environment, which file, why,
// and how to read it as well; "" otherwise. Every command prints it
// first, so that a variable in the shell never silently replaces the
// installed configuration.
func (s Source) SkipNote() string {
	if s.skipped == "" {
		return ""
	}
	set := s.names
	if len(set) > 3 {
		set = append(slices.Clone(set[:3]), "…")
	}
	return fmt.Sprintf("note: %s is not read, because %s is set in the environment; add --env-file %s to read it as well (the environment wins)",
		s.skipped, strings.Join(set, ", "), s.skipped)
}

// Explain adds to a configuration error which file it comes from, when
// the packaged one was read without being named.
func (s Source) Explain(err error) error {
	if err == nil || s.File == "" {
		return err
	}
	return fmt.Errorf("%w (configuration from %s)", err, s.Describe())
}

// IsServiceFile reports whether the file read is the packaged env file.
func (s Source) IsServiceFile() bool {
	if s.Layout.EnvFile == "" || s.File == "" {
		return false
	}
	a, err1 := filepath.Abs(s.File)
	b, err2 := filepath.Abs(s.Layout.EnvFile)
	return err1 == nil && err2 == nil && a == b
}

// Describe says where the configuration comes from, for a note to the
// user; "" for the process environment alone.
func (s Source) Describe() string {
	switch {
	case s.Service:
		return fmt.Sprintf("%s, as the service reads it: the key from %s, the state in %s", s.File, s.Layout.CredDir, s.Layout.StateDir)
	case s.File != "":
		return s.File
	}
	return ""
}

// UnderSystemd reports whether systemd started this process for a unit
// with state or credentials: its environment is then the unit's.
func UnderSystemd() bool {
	for _, k := range []string{"STATE_DIRECTORY", "CREDENTIALS_DIRECTORY"} {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			return true
		}
	}
	return false
}

// EnvPrefix starts every variable ticketbridge reads.
const EnvPrefix = "TICKETBRIDGE_"

func anyTicketbridgeVar() bool {
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, EnvPrefix) {
			return true
		}
	}
	return false
}

// serviceLookuper reads paths of the service's runtime credentials
// directory from the files they are loaded from.
type serviceLookuper struct {
	base    envconfig.Lookuper
	credDir string
}

func (l serviceLookuper) Lookup(key string) (string, bool) {
	v, ok := l.base.Lookup(key)
	if ok && strings.HasPrefix(v, ServiceCredRuntime+"/") {
		v = filepath.Join(l.credDir, strings.TrimPrefix(v, ServiceCredRuntime+"/"))
	}
	return v, ok
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
	return ParseEnv(f, path)
}

// ParseEnv reads the KEY=VALUE lines of an env file from r (see
// readEnvFile); name, the file's, is in its errors.
func ParseEnv(r io.Reader, name string) (map[string]string, error) {
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

// LoadDaemon processes the daemon's variables and resolves the defaults
// that depend on the environment (systemd's state and credentials
// directories).
func LoadDaemon(ctx context.Context, env envconfig.Lookuper) (Daemon, error) {
	var c Daemon
	err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &c, Lookuper: env})
	if c.State.IsZero() {
		// Also after an error, so that check judges the state it would use.
		c.State = state.ParseLocation("ticketbridge.db")
		if dir, ok := env.Lookup("STATE_DIRECTORY"); ok && dir != "" {
			// systemd may pass several directories separated by colons.
			c.State = state.ParseLocation(filepath.Join(strings.Split(dir, ":")[0], "state.db"))
		}
	}
	if err != nil {
		return c, fmt.Errorf("read configuration: %w", envvar.Explain(err, &c, env, ""))
	}
	if c.PGMaxConns < 0 {
		return c, fmt.Errorf("read configuration: TICKETBRIDGE_PG_MAX_CONNS=%d: want a positive number of connections", c.PGMaxConns)
	}
	if c.PGMaxConns > 0 {
		if c.State, err = c.State.WithMaxConns(c.PGMaxConns); err != nil {
			return c, fmt.Errorf("read configuration: %w", err)
		}
	}
	c.Adapter = strings.ToLower(strings.TrimSpace(c.Adapter))
	c.LogFormat = strings.ToLower(strings.TrimSpace(c.LogFormat))
	switch c.LogFormat {
	case "auto", "text", "json", "journal", "tint":
	default:
		return c, fmt.Errorf("read configuration: TICKETBRIDGE_LOG_FORMAT=%q: want auto, text, json, journal or tint", c.LogFormat)
	}
	if _, err := ParseLevel(c.LogLevel); err != nil {
		return c, fmt.Errorf("read configuration: TICKETBRIDGE_LOG_LEVEL: %w", err)
	}
	return c, nil
}

// StateDir is the directory of the state file, where an adapter keeps
// what it stores on disk when its configuration names no place
// (adapters.Deps.StateDir); "" when the state is in PostgreSQL.
func (c Daemon) StateDir() string { return c.State.Dir() }

// ReadAPIKey returns the API key from, in order: TICKETBRIDGE_API_KEY,
// TICKETBRIDGE_API_KEY_FILE, or systemd's $CREDENTIALS_DIRECTORY/api-key.
// A key file its group or other users may read is refused: the key opens
// every guest request of the hotel.
func (c Daemon) ReadAPIKey(env envconfig.Lookuper) (string, error) {
	if c.APIKey != "" {
		if c.APIKeyFile != "" {
			return "", errors.New("read API key: set TICKETBRIDGE_API_KEY or TICKETBRIDGE_API_KEY_FILE, not both")
		}
		return strings.TrimSpace(string(c.APIKey)), nil
	}
	path := c.APIKeyFile
	if path == "" {
		path = credentialFile(env, "api-key")
	}
	if path == "" {
		return "", errors.New("read API key: none configured: set TICKETBRIDGE_API_KEY_FILE (or TICKETBRIDGE_API_KEY) to the hotel's rta_ key")
	}
	return readSecretFile(path, "API key")
}

// credentialFile returns the path of the credential name in systemd's
// $CREDENTIALS_DIRECTORY (where the unit's LoadCredential= puts it), ""
// when there is no such directory or file.
func credentialFile(env envconfig.Lookuper, name string) string {
	dir, ok := env.Lookup("CREDENTIALS_DIRECTORY")
	if !ok || dir == "" {
		return ""
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// ErrKeyFileOpen is matched by the error of a secret file that users
// other than the service may read.
var ErrKeyFileOpen = secretfile.ErrReadable

// ErrKeyFileWritable is matched by the error of a secret file that users
// other than the service (and root) may change.
var ErrKeyFileWritable = secretfile.ErrWritable

// readSecretFile reads a one-line secret from path, refusing a file that
// users other than the service may read (see package secretfile: the
// group ticketbridge holds the staff of the files helpdesk).
func readSecretFile(path, what string) (string, error) { return secretfile.Read(path, what+" file") }

// APIURLExample is the form of TICKETBRIDGE_API_URL the messages show.
const APIURLExample = "the API root the platform gave, e.g. https://api.example.com"

// CheckAPIURL says what is wrong with TICKETBRIDGE_API_URL, naming the
// value (never credentials in it). Plain http is accepted for a loopback
// host, or anywhere with allowInsecure (adapters.CheckHTTPS).
func CheckAPIURL(raw string, allowInsecure bool) error {
	v := strings.TrimSpace(raw)
	if v == "" {
		return fmt.Errorf("TICKETBRIDGE_API_URL is not set: want %s", APIURLExample)
	}
	u, err := url.Parse(v)
	if err == nil && u.User != nil {
		return errors.New("TICKETBRIDGE_API_URL carries user information: the API takes the key from TICKETBRIDGE_API_KEY_FILE only")
	}
	switch {
	case strings.ContainsAny(v, " \t"):
		// Only what comes before the space is a URL to print.
		first, _, _ := strings.Cut(strings.ReplaceAll(v, "\t", " "), " ")
		return fmt.Errorf("TICKETBRIDGE_API_URL=%q holds a space: in an env file a # after a value is part of the value; put comments on lines of their own", redact.URL(first)+" …")
	case err != nil:
		return fmt.Errorf("TICKETBRIDGE_API_URL=%q does not parse as a URL: want %s", redact.URL(v), APIURLExample)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("TICKETBRIDGE_API_URL=%q: want %s (with https:// before the host)", redact.URL(v), APIURLExample)
	case u.Fragment != "" || strings.Contains(v, "#"):
		return fmt.Errorf("TICKETBRIDGE_API_URL=%q holds a #: in an env file a # after a value is part of the value; put comments on lines of their own", redact.URL(v))
	case u.RawQuery != "":
		return fmt.Errorf("TICKETBRIDGE_API_URL=%q has a query: want %s", redact.URL(v), APIURLExample)
	}
	return adapters.CheckHTTPS("TICKETBRIDGE_API_URL", u, allowInsecure)
}

// ParseLevel reads TICKETBRIDGE_LOG_LEVEL: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.TrimSpace(s))); err != nil {
		return 0, fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	return l, nil
}

// Unmapped returns env without the reading of the service's runtime
// credential paths from their source files (see FindSource): the values
// as the service itself sees them.
func Unmapped(env envconfig.Lookuper) envconfig.Lookuper {
	if sl, ok := env.(serviceLookuper); ok {
		return sl.base
	}
	return env
}
