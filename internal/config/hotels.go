package config

// This file is the daemon's many hotels: TICKETBRIDGE_HOTELS_DIR names a
// directory of <name>.env files, one per hotel. Each hotel's variables are
// looked up in its own file first and in the main configuration second
// (the defaults), and each hotel gets its own API client, helpdesk
// adapter, state file, engine and scheduler; the daemon runs them side by
// side, so that one hotel's dead API or helpdesk never delays another's
// cycles. What the hotels share is the process: the metrics and health
// endpoints, the log, and a bound on the API requests in flight.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// Hotels is read from the main configuration only.
type Hotels struct {
	// Dir holds one <name>.env file per hotel; empty serves the one hotel
	// of the main configuration.
	Dir string `env:"TICKETBRIDGE_HOTELS_DIR"`
	// MaxInFlight caps the API and helpdesk requests in flight across all
	// hotels.
	MaxInFlight int `env:"TICKETBRIDGE_MAX_IN_FLIGHT, default=32"`
	// Ready names the hotels whose failure makes /readyz answer 503
	// (comma-separated); empty means every hotel.
	Ready string `env:"TICKETBRIDGE_READY_HOTELS"`
	// LeaseTTL bounds how long a hotel whose state is in PostgreSQL stays
	// without a replica when the one syncing it dies: replicas renew their
	// leases every tenth of it, a lease lives five eighths of it, and a
	// replica that could not renew stops the hotel before another may take
	// it (see the daemon's leases).
	LeaseTTL time.Duration `env:"TICKETBRIDGE_LEASE_TTL, default=8s"`
}

// LoadHotels reads and checks the variables of the many hotels.
func LoadHotels(ctx context.Context, env envconfig.Lookuper) (Hotels, error) {
	var c Hotels
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &c, Lookuper: env}); err != nil {
		return c, fmt.Errorf("read configuration: %w", err)
	}
	c.Dir = strings.TrimSpace(c.Dir)
	if c.MaxInFlight < 1 {
		return c, fmt.Errorf("read configuration: TICKETBRIDGE_MAX_IN_FLIGHT=%d: want 1 or more, such as 32", c.MaxInFlight)
	}
	if c.LeaseTTL < 2*time.Second || c.LeaseTTL > 10*time.Minute {
		return c, fmt.Errorf("read configuration: TICKETBRIDGE_LEASE_TTL=%s: want 2s to 10m, such as 8s", c.LeaseTTL)
	}
	for _, n := range c.ReadyNames() {
		if !hotelName.MatchString(n) {
			return c, fmt.Errorf("read configuration: TICKETBRIDGE_READY_HOTELS: %q is not a hotel name (lower-case letters, digits and -)", n)
		}
	}
	return c, nil
}

// ReadyNames returns the hotels TICKETBRIDGE_READY_HOTELS names; nil means
// every hotel.
func (c Hotels) ReadyNames() []string {
	var out []string
	for _, n := range strings.Split(c.Ready, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// hotelName is the form of a hotel's name, the base name of its file.
var hotelName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// HotelSuffix ends the name of every hotel file.
const HotelSuffix = ".env"

// processVars are read from the main configuration only: a hotel file that
// sets one is warned about.
var processVars = []string{
	"TICKETBRIDGE_HOTELS_DIR", "TICKETBRIDGE_MAX_IN_FLIGHT", "TICKETBRIDGE_READY_HOTELS",
	"TICKETBRIDGE_LISTEN", "TICKETBRIDGE_CYCLE_MAX", "TICKETBRIDGE_LOG_FORMAT", "TICKETBRIDGE_LOG_LEVEL",
	// One status page, one sign-in for every hotel.
	"TICKETBRIDGE_CONSOLE_TOKEN_FILE", "TICKETBRIDGE_CONSOLE_EXTERNAL_URL",
	"TICKETBRIDGE_CONSOLE_SECURE_COOKIE", "TICKETBRIDGE_CONSOLE_TRUSTED_PROXIES", "TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS",
	"TICKETBRIDGE_LEASE_TTL", // one heartbeat for every hotel of the replica
	// One notifier for every hotel; only the ping URLs may be a hotel's
	// (TICKETBRIDGE_NOTIFY_PING_PER=hotel).
	"TICKETBRIDGE_NOTIFY_URLS", "TICKETBRIDGE_NOTIFY_URLS_FILE", "TICKETBRIDGE_NOTIFY_SUPPORT_URLS",
	"TICKETBRIDGE_NOTIFY_SUPPORT_URLS_FILE", "TICKETBRIDGE_NOTIFY_SMTP_URL", "TICKETBRIDGE_NOTIFY_SMTP_USER",
	"TICKETBRIDGE_NOTIFY_SMTP_PASSWORD", "TICKETBRIDGE_NOTIFY_SMTP_PASSWORD_FILE", "TICKETBRIDGE_NOTIFY_FROM",
	"TICKETBRIDGE_NOTIFY_REPEAT", "TICKETBRIDGE_NOTIFY_CYCLES_FAILING_AFTER", "TICKETBRIDGE_NOTIFY_REQUEST_ERROR_AFTER",
	"TICKETBRIDGE_NOTIFY_DEADLINE_WARN_BEFORE", "TICKETBRIDGE_NOTIFY_GROUP_WINDOW", "TICKETBRIDGE_NOTIFY_PING_INTERVAL",
	"TICKETBRIDGE_NOTIFY_PING_PER",
}

// HotelFile is one file of the hotels directory.
type HotelFile struct {
	Name string
	Path string
	Vars map[string]string
	// Sum is the file's content hash: an edited file restarts its hotel.
	Sum [sha256.Size]byte
}

// ReadHotelsDir reads every <name>.env file of dir, in name order. Hidden
// entries are skipped, other entries passed to warn and skipped; a .env file whose name is not a
// hotel name, or that does not parse, is an error naming it.
func ReadHotelsDir(dir string, warn func(string)) ([]HotelFile, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read hotels directory: %w", err)
	}
	var out []HotelFile
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			// Hidden: an editor's swap file, or the ..data links of a
			// Kubernetes ConfigMap volume.
			continue
		}
		path := filepath.Join(dir, de.Name())
		name, ok := strings.CutSuffix(de.Name(), HotelSuffix)
		if !ok || de.IsDir() {
			warn(fmt.Sprintf("%s is not a hotel file (<name>%s) and is ignored", path, HotelSuffix))
			continue
		}
		if !hotelName.MatchString(name) {
			return nil, fmt.Errorf("read hotels directory: %s: %q is not a hotel name: want lower-case letters, digits and -, starting with a letter or digit, at most 63", path, name)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read hotel %s: %w", name, err)
		}
		vars, err := ParseEnv(strings.NewReader(string(b)), path)
		if err != nil {
			return nil, err
		}
		out = append(out, HotelFile{Name: name, Path: path, Vars: vars, Sum: sha256.Sum256(b)})
	}
	return out, nil
}

// Hotel is one hotel's resolved configuration.
type Hotel struct {
	File HotelFile
	// Env looks up the hotel's variables: its file, with the state and key
	// settings made its own, then the main configuration.
	Env    envconfig.Lookuper
	Daemon Daemon
	Sync   sync.Config
	// Key is the hotel's API key, read to check it is there and its own.
	Key redact.Secret
	// Secrets are the secret files the hotel reads: one that changed
	// restarts the hotel at a reload.
	Secrets SecretFiles
	// Ping is the hotel's own ping URLs, parsed (nil: its file names
	// none); the daemon pings them when TICKETBRIDGE_NOTIFY_PING_PER is
	// hotel.
	Ping *notify.Ping
}

// Name is the hotel's name, its file's without the suffix.
func (h Hotel) Name() string { return h.File.Name }

// hotelOwnVars are read from a hotel's file only, never inherited from
// the main configuration: the API key, which decides the hotel, and the
// ping URLs of TICKETBRIDGE_NOTIFY_PING_PER=hotel, each hotel's monitor
// (a hotel that names none pings none).
var hotelOwnVars = []string{"TICKETBRIDGE_API_KEY", "TICKETBRIDGE_API_KEY_FILE",
	"TICKETBRIDGE_NOTIFY_PING_URL", "TICKETBRIDGE_NOTIFY_PING_URL_FILE",
	"TICKETBRIDGE_NOTIFY_PING_FAIL_URL", "TICKETBRIDGE_NOTIFY_PING_FAIL_URL_FILE"}

// hotelEnv returns the lookuper of a hotel whose file sets vars: vars
// first, then base. A key, a ping URL (hotelOwnVars) or a state file that
// the file does not set is not inherited: the state defaults to defaultState (a file of its own, or
// the main configuration's database, where each hotel's state is kept
// under its name), and the key must be the hotel's own.
func hotelEnv(base envconfig.Lookuper, vars map[string]string, defaultState string) envconfig.Lookuper {
	own := make(map[string]string, len(vars)+3)
	for k, v := range vars {
		own[k] = v
	}
	for _, k := range hotelOwnVars {
		if _, ok := own[k]; !ok {
			own[k] = ""
		}
	}
	if _, ok := own["TICKETBRIDGE_STATE"]; !ok {
		own["TICKETBRIDGE_STATE"] = defaultState
	}
	m := envconfig.MapLookuper(own)
	if sl, ok := base.(serviceLookuper); ok {
		return serviceLookuper{base: envconfig.MultiLookuper(m, sl.base), credDir: sl.credDir}
	}
	return envconfig.MultiLookuper(m, base)
}

// HotelSource is src narrowed to a hotel: the names are those its file
// sets, for the warnings about unknown variables.
func HotelSource(src Source, h HotelFile, env envconfig.Lookuper) Source {
	hs := Source{Env: env, File: h.Path, Layout: src.Layout, Service: src.Service, inFile: map[string]bool{}}
	for k := range h.Vars {
		if strings.HasPrefix(k, EnvPrefix) {
			hs.names = append(hs.names, k)
			hs.inFile[k] = true
		}
	}
	slices.Sort(hs.names)
	return hs
}

// loadHotel resolves one hotel's configuration against the main one.
func loadHotel(ctx context.Context, src Source, main Daemon, h HotelFile) (Hotel, error) {
	def := filepath.Join(filepath.Dir(main.State.Value()), "hotels", h.Name+".db")
	if main.State.IsDB() {
		def = main.State.Value()
	}
	hc := Hotel{File: h, Env: hotelEnv(src.Env, h.Vars, def)}
	var err error
	if hc.Daemon, err = LoadDaemon(ctx, hc.Env); err != nil {
		return hc, fmt.Errorf("hotel %s (%s): %w", h.Name, h.Path, err)
	}
	hc.Daemon.Hotel = h.Name
	if hc.Sync, err = sync.LoadConfig(ctx, hc.Env); err != nil {
		return hc, fmt.Errorf("hotel %s (%s): read configuration: %w", h.Name, h.Path, errors.Unwrap(err))
	}
	key, err := hc.Daemon.ReadAPIKey(hc.Env)
	if err != nil {
		return hc, fmt.Errorf("hotel %s (%s): %w; each hotel names its own key in its file", h.Name, h.Path, err)
	}
	hc.Key = redact.Secret(key)
	if hc.Ping, err = notify.LoadPing(ctx, hc.Env); err != nil {
		return hc, fmt.Errorf("hotel %s (%s): %w", h.Name, h.Path, err)
	}
	hc.Secrets = ReadSecretFiles(hc.Env, hc.Daemon.Adapter)
	return hc, nil
}

// hotelWarnings returns the warnings about what a hotel file sets: unknown
// names, and names only the main configuration may set.
func hotelWarnings(ctx context.Context, src Source, hc Hotel) []string {
	out := UnknownVariables(ctx, HotelSource(src, hc.File, hc.Env))
	for _, k := range processVars {
		if _, ok := hc.File.Vars[k]; ok {
			out = append(out, fmt.Sprintf("%s (in %s) is read from the main configuration only and is ignored here", k, hc.File.Path))
		}
	}
	return out
}

// LoadHotelDir resolves every hotel of the directory. A directory that
// cannot be read, a bad file name, or two hotels that would share a key, a
// state file or a helpdesk folder is an error; a hotel whose own
// configuration is wrong is returned in bad, and the others go on.
func LoadHotelDir(ctx context.Context, src Source, main Daemon, dir string, warn func(string)) (good []Hotel, bad map[string]error, err error) {
	files, err := ReadHotelsDir(dir, warn)
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		warn(fmt.Sprintf("the hotels directory %s holds no <name>%s file: no hotel is served", dir, HotelSuffix))
	}
	bad = map[string]error{}
	for _, f := range files {
		for _, s := range HotelSecrets(f) {
			warn(s.Warning())
		}
		hc, err := loadHotel(ctx, src, main, f)
		if err != nil {
			bad[f.Name] = err
			continue
		}
		for _, w := range hotelWarnings(ctx, src, hc) {
			warn(w)
		}
		if main.State.IsDB() && !hc.Daemon.State.IsDB() {
			warn(fmt.Sprintf("hotel %s keeps its state in the file %s while the main configuration's is in PostgreSQL: a hotel with a state file holds no lease, so every replica given this hotels directory syncs it on its own; set its TICKETBRIDGE_STATE to the database, or serve it from one daemon only", hc.Name(), hc.Daemon.State))
		}
		good = append(good, hc)
	}
	return good, bad, checkDistinct(good)
}

// checkDistinct refuses two hotels that share what must be a hotel's own:
// the API key (the key decides the organisation), the state file, the
// folders of the files and webhook adapters, and the webhook adapter's
// inbound address.
func checkDistinct(hs []Hotel) error {
	if err := checkWebhookListen(hs); err != nil {
		return err
	}
	seen := map[string]string{}
	claim := func(h Hotel, what, v string) error {
		if v == "" {
			return nil
		}
		if other, ok := seen[what+"\x00"+v]; ok {
			return fmt.Errorf("read hotels directory: hotels %s and %s share %s; each hotel needs its own", other, h.Name(), what)
		}
		seen[what+"\x00"+v] = h.Name()
		return nil
	}
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		a, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		return a
	}
	for _, h := range hs {
		sum := sha256.Sum256([]byte(h.Key))
		if err := claim(h, "an API key", string(sum[:])); err != nil {
			return err
		}
		if !h.Daemon.State.IsDB() {
			if err := claim(h, "the state file "+abs(h.Daemon.State.Value()), abs(h.Daemon.State.Value())); err != nil {
				return err
			}
		}
		for adapter, v := range map[string]string{"files": "TICKETBRIDGE_FILES_DIR", "webhook": "TICKETBRIDGE_WEBHOOK_DIR"} {
			if h.Daemon.Adapter != adapter {
				continue
			}
			d, _ := h.Env.Lookup(v)
			if d = strings.TrimSpace(d); d == "" {
				return fmt.Errorf("read hotels directory: hotel %s (%s): set %s in its file: each hotel needs a folder of its own", h.Name(), h.File.Path, v)
			}
			if err := claim(h, v+"="+abs(d), abs(d)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkWebhookListen refuses two webhook hotels whose inbound endpoints
// would listen on the same port of the same address (an address such as
// 0.0.0.0 takes the port on every address), which would leave the second
// hotel unable to start.
func checkWebhookListen(hs []Hotel) error {
	type endpoint struct{ hotel, addr, host, port string }
	var seen []endpoint
	wildcard := func(host string) bool { return host == "" || host == "0.0.0.0" || host == "::" }
	for _, h := range hs {
		if h.Daemon.Adapter != webhook.Name {
			continue
		}
		addr, _ := h.Env.Lookup("TICKETBRIDGE_WEBHOOK_LISTEN")
		if addr == "" {
			addr = webhook.DefaultListen
		}
		if addr == webhook.ListenOff {
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "0" {
			continue // the adapter's own check names a bad one; port 0 is any free port
		}
		if host == "localhost" {
			host = "127.0.0.1"
		}
		for _, o := range seen {
			if o.port == port && (o.host == host || wildcard(o.host) || wildcard(host)) {
				return fmt.Errorf("read hotels directory: hotels %s and %s would both listen on %s (TICKETBRIDGE_WEBHOOK_LISTEN=%s); give each webhook hotel an address of its own in its file", o.hotel, h.Name(), addr, o.addr)
			}
		}
		seen = append(seen, endpoint{h.Name(), addr, host, port})
	}
	return nil
}

// HotelSecret is a secret a hotel file sets as a value while users besides
// the service may read the file: hotel files are the group ticketbridge's,
// which the staff of the files helpdesk join. It holds no secret.
type HotelSecret struct {
	Hotel, File string
	// Var is the variable set; FileVar the one that names a file
	// instead, "" when Var has none.
	Var, FileVar string
	Mode         fs.FileMode
}

// secretSuffixes end the names of the variables that hold secrets.
var secretSuffixes = []string{"_KEY", "_PASSWORD", "_TOKEN", "_SECRET"}

// HotelSecrets returns the secrets f sets as values, in name order, when
// users besides the service may read f (its group or every user); nil
// when only its owner may. A database password in TICKETBRIDGE_STATE is
// one.
func HotelSecrets(f HotelFile) []HotelSecret {
	mode := fs.FileMode(0o644) // unknown: taken as readable
	if fi, err := os.Stat(f.Path); err == nil {
		mode = fi.Mode().Perm()
	}
	if mode&0o044 == 0 {
		return nil
	}
	var out []HotelSecret
	for _, k := range slices.Sorted(maps.Keys(f.Vars)) {
		v := strings.TrimSpace(f.Vars[k])
		if v == "" || !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		fileVar := k + "_FILE"
		if !slices.Contains(fileVariables(), fileVar) {
			fileVar = ""
		}
		secret := fileVar != ""
		for _, suf := range secretSuffixes {
			secret = secret || strings.HasSuffix(k, suf)
		}
		if k == "TICKETBRIDGE_STATE" {
			secret = state.IsURL(v) && state.HasPassword(v)
		}
		if secret {
			out = append(out, HotelSecret{Hotel: f.Name, File: f.Path, Var: k, FileVar: fileVar, Mode: mode})
		}
	}
	return out
}

// Problem says what is wrong, naming the file and the variable.
func (s HotelSecret) Problem() string {
	what := s.Var + " "
	if s.Var == "TICKETBRIDGE_STATE" {
		what = "TICKETBRIDGE_STATE with a database password "
	}
	return fmt.Sprintf("%s sets %sas a value, and users besides the service may read the file (mode %v: staff who join its group)", s.File, what, s.Mode)
}

// Fix says how to keep the secret from them.
func (s HotelSecret) Fix() string {
	switch {
	case s.FileVar != "":
		return fmt.Sprintf("put the secret in a file only the service reads (mode 600, in /etc/ticketbridge/keys), set %s to its path and remove %s from %s", s.FileVar, s.Var, s.File)
	case s.Var == "TICKETBRIDGE_STATE":
		return fmt.Sprintf("leave the password out of %s: set TICKETBRIDGE_STATE in the main configuration (mode 600), which every hotel takes, or name a password file in it (passfile=/etc/ticketbridge/keys/%s.pgpass, mode 600)", s.File, s.Hotel)
	}
	return fmt.Sprintf("%s has no _FILE form: run sudo chown ticketbridge %s && sudo chmod 600 %s, so that only the service reads the file", s.Var, s.File, s.File)
}

// Warning is the line the daemon logs (and check prints) about s.
func (s HotelSecret) Warning() string {
	return fmt.Sprintf("hotel %s: %s; %s", s.Hotel, s.Problem(), s.Fix())
}
