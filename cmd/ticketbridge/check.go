package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

const checkAbout = `Check what the daemon needs, one line each, PASS or FAIL with the fix:
the configuration, the API key, the API (reachable, key accepted, tickets
readable), the right to write (proven without writing anything), the
helpdesk and the state file. Exit status 0 only when everything passed.

With the packaged /etc/ticketbridge/ticketbridge.env (the default when it
exists and no TICKETBRIDGE_* variable is set), the check runs as the service
would: credentials from /etc/ticketbridge (where the unit's LoadCredential
reads them), the state below /var/lib/ticketbridge.

The write right is probed with POST /tickets/<random id>/status and an empty
status: an API that knows the key's rights answers 403 (tickets:write
missing) or 404 (the right is there; no such ticket). The ticket does not
exist and the status is not valid, so nothing is created or changed.`

// The service's layout, as deploy/ticketbridge.service sets it up.
const (
	serviceEnvFile     = "/etc/ticketbridge/ticketbridge.env"
	serviceCredDir     = "/etc/ticketbridge"
	serviceStateDir    = "/var/lib/ticketbridge"
	serviceCredRuntime = "/run/credentials/ticketbridge.service"
)

// checkOptions are the parts of a check that tests replace.
type checkOptions struct {
	// Registry holds the adapters the check may open.
	Registry adapters.Registry
	// Timeout bounds each check that talks to the network.
	Timeout time.Duration
	// ServiceEnvFile, ServiceCredDir and ServiceStateDir describe the
	// packaged service's layout (see checkAbout); ServiceEnvFile "" turns
	// the service emulation off.
	ServiceEnvFile  string
	ServiceCredDir  string
	ServiceStateDir string
	// Logger receives the adapters' and the store's warnings.
	Logger *slog.Logger
}

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", checkAbout, stdout)
	var ef envFlag
	ef.register(fs)
	timeout := fs.Duration("timeout", 15*time.Second, "bound each network check to `duration`")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: check: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *timeout <= 0 {
		return fmt.Errorf("%w: check: --timeout %s: want a positive duration", errUsage, *timeout)
	}
	return checkAll(ctx, ef.path, stdout, checkOptions{
		Registry:        daemonAdapters(),
		Timeout:         *timeout,
		ServiceEnvFile:  serviceEnvFile,
		ServiceCredDir:  serviceCredDir,
		ServiceStateDir: serviceStateDir,
		Logger:          newLogger(stderr, "auto", "warn"),
	})
}

// checkResult is one line of the check's verdict.
type checkResult struct {
	name   string
	status string // PASS, FAIL or SKIP
	detail string
	fix    string
}

const (
	checkPass = "PASS"
	checkFail = "FAIL"
	checkSkip = "SKIP"
)

// checker runs the checks in order and prints each as it ends.
type checker struct {
	ctx     context.Context
	out     io.Writer
	opts    checkOptions
	env     envconfig.Lookuper
	envFile string // the env file read, for the fixes
	scratch string // the service's state directory stands in here; "" when none
	results []checkResult
}

func (c *checker) report(r checkResult) checkResult {
	c.results = append(c.results, r)
	fmt.Fprintf(c.out, "%s  %-14s %s\n", r.status, r.name, r.detail)
	if r.fix != "" && r.status == checkFail {
		fmt.Fprintf(c.out, "      %-14s fix: %s\n", "", r.fix)
	}
	return r
}

func pass(name, format string, a ...any) checkResult {
	return checkResult{name: name, status: checkPass, detail: fmt.Sprintf(format, a...)}
}

func fail(name, fix, format string, a ...any) checkResult {
	return checkResult{name: name, status: checkFail, detail: fmt.Sprintf(format, a...), fix: fix}
}

func skip(name, why string) checkResult {
	return checkResult{name: name, status: checkSkip, detail: "not checked: " + why}
}

// checkAll runs every check against the environment (and envFile when it
// is set), printing one verdict per check to out. It returns an exitError
// of code 1 when any check failed.
func checkAll(ctx context.Context, envFile string, out io.Writer, opts checkOptions) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	c := &checker{ctx: ctx, out: out, opts: opts, envFile: envFile}

	cleanup, err := c.environment()
	defer cleanup()
	if err != nil {
		c.report(fail("configuration", "name a readable file of KEY=VALUE lines (see config.example.env)", "%v", err))
		c.report(skip("the rest", "the configuration could not be read"))
		return c.verdict()
	}

	cfg, cfgOK := c.checkConfig()
	key, keyOK := c.checkKey(cfg)
	apiOK := false
	if keyOK {
		apiOK = c.checkAPI(cfg, key)
	} else {
		c.report(skip("API", "no usable API key"))
	}
	if apiOK {
		c.checkWrite(cfg, key)
	} else {
		c.report(skip("API write", "the API check failed"))
	}
	c.checkHelpdesk(cfg, cfgOK)
	c.checkState(cfg)
	return c.verdict()
}

func (c *checker) verdict() error {
	failed := 0
	for _, r := range c.results {
		if r.status == checkFail {
			failed++
		}
	}
	if failed == 0 {
		fmt.Fprintf(c.out, "\nAll %d checks passed.\n", len(c.results))
		return nil
	}
	fmt.Fprintf(c.out, "\n%d of %d checks failed.\n", failed, len(c.results))
	return &exitError{code: 1}
}

// environment builds the lookuper: the process environment, the env file,
// and when the packaged env file is checked outside systemd, the service's
// directories. It returns a cleanup to run at the end.
func (c *checker) environment() (func(), error) {
	nop := func() {}
	if c.envFile == "" && c.opts.ServiceEnvFile != "" && !anyTicketbridgeVar() {
		if _, err := os.Stat(c.opts.ServiceEnvFile); err == nil {
			c.envFile = c.opts.ServiceEnvFile
		}
	}
	ef := envFlag{path: c.envFile}
	env, err := ef.lookuper()
	if err != nil {
		return nop, err
	}
	c.env = env
	if c.envFile != "" {
		fmt.Fprintf(c.out, "Checking %s.\n", c.envFile)
	} else {
		fmt.Fprintln(c.out, "Checking the TICKETBRIDGE_* variables of the environment.")
	}
	if !c.serviceEmulation() {
		return nop, nil
	}
	over := map[string]string{"CREDENTIALS_DIRECTORY": c.opts.ServiceCredDir}
	cleanup := nop
	note := fmt.Sprintf("Checking as the service runs: credentials from %s; ", c.opts.ServiceCredDir)
	if fi, err := os.Stat(c.opts.ServiceStateDir); err == nil && fi.IsDir() {
		over["STATE_DIRECTORY"] = c.opts.ServiceStateDir
		note += "state in " + c.opts.ServiceStateDir + "."
	} else {
		// The service never ran: systemd makes its state directory at the
		// first start. Try the helpdesk folders in a scratch directory
		// rather than leave root-owned ones behind.
		scratch, err := os.MkdirTemp("", "ticketbridge-check-")
		if err != nil {
			return nop, fmt.Errorf("make scratch directory: %w", err)
		}
		cleanup = func() { _ = os.RemoveAll(scratch) }
		c.scratch = scratch
		over["STATE_DIRECTORY"] = scratch
		note += c.opts.ServiceStateDir + " does not exist yet (systemd makes it at the first start), so the state and helpdesk folders are tried in a scratch directory."
	}
	fmt.Fprintln(c.out, note)
	c.env = serviceLookuper{base: envconfig.MultiLookuper(envconfig.MapLookuper(over), env), credDir: c.opts.ServiceCredDir}
	return cleanup, nil
}

// serviceEmulation reports whether the packaged env file is checked
// outside the service.
func (c *checker) serviceEmulation() bool {
	if c.opts.ServiceEnvFile == "" || c.envFile == "" {
		return false
	}
	a, err1 := filepath.Abs(c.envFile)
	b, err2 := filepath.Abs(c.opts.ServiceEnvFile)
	if err1 != nil || err2 != nil || a != b {
		return false
	}
	for _, k := range []string{"STATE_DIRECTORY", "CREDENTIALS_DIRECTORY"} {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			return false
		}
	}
	return true
}

// serviceLookuper reads paths of the service's runtime credentials
// directory from the files they are loaded from.
type serviceLookuper struct {
	base    envconfig.Lookuper
	credDir string
}

func (l serviceLookuper) Lookup(key string) (string, bool) {
	v, ok := l.base.Lookup(key)
	if ok && strings.HasPrefix(v, serviceCredRuntime+"/") {
		v = filepath.Join(l.credDir, strings.TrimPrefix(v, serviceCredRuntime+"/"))
	}
	return v, ok
}

func anyTicketbridgeVar() bool {
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TICKETBRIDGE_") {
			return true
		}
	}
	return false
}

func (c *checker) fixEnv() string {
	if c.envFile != "" {
		return "edit " + c.envFile
	}
	return "set the variable"
}

// checkConfig reads every variable the daemon reads and checks its form.
func (c *checker) checkConfig() (Config, bool) {
	var problems []string
	cfg, err := loadConfig(c.ctx, c.env)
	if err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "read configuration: "))
	}
	sc, err := sync.LoadConfig(c.ctx, c.env)
	if err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "read sync configuration: "))
	}
	tc, err := loadTelemetryConfig(c.ctx, c.env)
	if err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "read configuration: "))
	}
	if _, err := adapters.ParseStatusPairs(cfg.StatusToHelpdesk); err != nil {
		problems = append(problems, "TICKETBRIDGE_STATUS_TO_HELPDESK: "+err.Error())
	}
	if _, err := adapters.ParseReverseStatusPairs(cfg.StatusFromHelpdesk); err != nil {
		problems = append(problems, "TICKETBRIDGE_STATUS_FROM_HELPDESK: "+err.Error())
	}
	if strings.TrimSpace(cfg.APIURL) == "" {
		problems = append(problems, "TICKETBRIDGE_API_URL is not set: want the API root ({functions_url}), e.g. https://api.example.com")
	}
	if len(problems) > 0 {
		c.report(fail("configuration", c.fixEnv()+": correct the variables named (config.example.env shows each one's form)",
			"%s", strings.Join(problems, "; ")))
		return cfg, false
	}
	metricsOn := "metrics off"
	if tc.Listen != "" {
		metricsOn = "metrics on " + tc.Listen
	}
	c.report(pass("configuration", "adapter %s, schedule %q, state %s, %s", cfg.Adapter, sc.Schedule, state.Redacted(cfg.State), metricsOn))
	return cfg, true
}

// checkKey finds the API key without contacting anybody.
func (c *checker) checkKey(cfg Config) (string, bool) {
	key, err := cfg.apiKey(c.env)
	if err != nil {
		c.report(fail("API key", keyFix(c.keyPath(cfg)), "%v", err))
		return "", false
	}
	if !strings.HasPrefix(key, guestapi.KeyPrefix) || len(key) == len(guestapi.KeyPrefix) {
		c.report(fail("API key", keyFix(c.keyPath(cfg)), "the key does not look like a Guest Requests API key (it starts with %q)", guestapi.KeyPrefix))
		return "", false
	}
	c.report(pass("API key", "found in %s", c.keySource(cfg)))
	return key, true
}

func (c *checker) keySource(cfg Config) string {
	switch {
	case cfg.APIKey != "":
		return "TICKETBRIDGE_API_KEY"
	case cfg.APIKeyFile != "":
		return cfg.APIKeyFile
	}
	return c.keyPath(cfg)
}

// keyPath is the file the key should be in.
func (c *checker) keyPath(cfg Config) string {
	if cfg.APIKeyFile != "" {
		return cfg.APIKeyFile
	}
	if dir, ok := c.env.Lookup("CREDENTIALS_DIRECTORY"); ok && dir != "" {
		if strings.HasPrefix(dir, serviceCredRuntime) || c.serviceEmulation() {
			return filepath.Join(c.opts.ServiceCredDir, "api-key")
		}
		return filepath.Join(dir, "api-key")
	}
	return "the file named by TICKETBRIDGE_API_KEY_FILE"
}

func keyFix(path string) string {
	return fmt.Sprintf("create a key with the right tickets:write in the platform's console, write it to %s and run chmod 600 on that file", path)
}

func (c *checker) client(cfg Config, key string) (*guestapi.Client, error) {
	return guestapi.New(guestapi.Config{
		BaseURL:     cfg.APIURL,
		APIKey:      key,
		MaxAttempts: 1,
		Logger:      c.opts.Logger,
	})
}

// checkAPI lists one ticket: the API is reachable, the key accepted and
// allowed to read tickets.
func (c *checker) checkAPI(cfg Config, key string) bool {
	const name = "API"
	if strings.TrimSpace(cfg.APIURL) == "" {
		c.report(skip(name, "TICKETBRIDGE_API_URL is not set"))
		return false
	}
	urlFix := "set TICKETBRIDGE_API_URL to the API root ({functions_url}) the platform gave, e.g. https://api.example.com, without /ops-public-api/v1"
	cl, err := c.client(cfg, key)
	if err != nil {
		c.report(fail(name, c.fixEnv()+": "+urlFix, "%s", strings.TrimPrefix(err.Error(), "check config: ")))
		return false
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	url := strings.TrimRight(strings.TrimSpace(cfg.APIURL), "/")
	_, err = cl.ListTickets(ctx, guestapi.ListOptions{Limit: 1})
	var ae *guestapi.Error
	switch {
	case err == nil:
		detail := url + " answers; the key is accepted and may read tickets"
		if v, err := cl.Verify(ctx); err == nil {
			detail += " (organisation " + v.Organization + ")"
		}
		c.report(pass(name, "%s", detail))
		return true
	case errors.Is(err, guestapi.ErrUnauthorized):
		c.report(fail(name, keyFix(c.keyPath(cfg)), "the API refused the key (401): it is revoked, expired or mistyped"))
	case errors.Is(err, guestapi.ErrForbidden):
		c.report(fail(name, keyFix(c.keyPath(cfg)), "the key may not read tickets (403, needs %s)", orRight(err, "tickets:read")))
	case errors.Is(err, guestapi.ErrNotFound):
		c.report(fail(name, c.fixEnv()+": "+urlFix, "%s answers 404 to %s/tickets: it is not the root of the Guest Requests API", url, guestapi.TicketsPrefix))
	case errors.Is(err, guestapi.ErrBadResponse):
		c.report(fail(name, c.fixEnv()+": "+urlFix, "%s answers, but not as the Guest Requests API: %v", url, err))
	case errors.As(err, &ae):
		c.report(fail(name, "try again later; if it persists, ask the platform's support", "the API answered with an error: %v", err))
	case ctx.Err() != nil:
		c.report(fail(name, "check TICKETBRIDGE_API_URL and that this server reaches "+url+" (DNS, firewall, proxy)",
			"no answer from %s within %s", url, c.opts.Timeout))
	default:
		c.report(fail(name, "check that this server reaches "+url+" (DNS, firewall, proxy) and TICKETBRIDGE_API_URL",
			"cannot reach %s: %v", url, err))
	}
	return false
}

// orRight returns the right a 403 names, else def.
func orRight(err error, def string) string {
	var ae *guestapi.Error
	if errors.As(err, &ae) && ae.Need != "" {
		return ae.Need
	}
	return def
}

// checkWrite proves the right tickets:write without writing: see
// checkAbout.
func (c *checker) checkWrite(cfg Config, key string) {
	const name = "API write"
	cl, err := c.client(cfg, key)
	if err != nil {
		c.report(fail(name, "", "%v", err))
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	// No Idempotency-Key: the client sends it once.
	_, err = cl.SetStatus(ctx, uuid.NewString(), "", "")
	switch {
	case errors.Is(err, guestapi.ErrNotFound):
		c.report(pass(name, "the key may post replies and set statuses (probed on a ticket that does not exist; nothing was written)"))
	case errors.Is(err, guestapi.ErrForbidden):
		c.report(fail(name, keyFix(c.keyPath(cfg)),
			"the key may read but not write tickets (403, needs %s): replies and status changes would not reach the guest", orRight(err, "tickets:write")))
	case errors.Is(err, guestapi.ErrUnauthorized):
		c.report(fail(name, keyFix(c.keyPath(cfg)), "the API refused the key (401): it is revoked, expired or mistyped"))
	case errors.Is(err, guestapi.ErrInvalidStatus), errors.Is(err, guestapi.ErrBodyRequired):
		c.report(pass(name, "not proven: this API judges the request before the key's rights (nothing was written); the first reply will show it"))
	case err == nil:
		c.report(fail(name, "report this to the platform's support", "the API accepted an empty status for a ticket that cannot exist"))
	default:
		c.report(fail(name, "try again later; if it persists, ask the platform's support", "%v", err))
	}
}

// checkHelpdesk opens the configured adapter and lets it check its
// helpdesk.
func (c *checker) checkHelpdesk(cfg Config, cfgOK bool) {
	const name = "helpdesk"
	if cfg.Adapter == "" {
		c.report(fail(name, c.fixEnv()+": set TICKETBRIDGE_ADAPTER", "TICKETBRIDGE_ADAPTER is empty"))
		return
	}
	to, err1 := adapters.ParseStatusPairs(cfg.StatusToHelpdesk)
	from, err2 := adapters.ParseReverseStatusPairs(cfg.StatusFromHelpdesk)
	if err1 != nil || err2 != nil {
		c.report(skip(name, "the status mapping does not parse (see configuration)"))
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	fix := fmt.Sprintf("%s: check TICKETBRIDGE_ADAPTER and the TICKETBRIDGE_%s_* variables (config.example.env)", c.fixEnv(), strings.ToUpper(cfg.Adapter))
	hd, err := c.opts.Registry.Open(ctx, cfg.Adapter, adapters.Deps{
		Env:                c.env,
		Logger:             c.opts.Logger.With("adapter", cfg.Adapter),
		StatusToHelpdesk:   to,
		StatusFromHelpdesk: from,
	})
	if err != nil {
		c.report(fail(name, fix, "%v", err))
		return
	}
	defer hd.Close()
	ch, ok := hd.(adapters.Checker)
	if !ok {
		c.report(pass(name, "adapter %s is configured (it cannot check its helpdesk without writing to it)", cfg.Adapter))
		return
	}
	if err := ch.Check(ctx); err != nil {
		c.report(fail(name, fix, "%v", err))
		return
	}
	c.report(pass(name, "adapter %s reaches its helpdesk", cfg.Adapter))
}

// checkState opens the state file read-only, or makes sure it can be
// created.
func (c *checker) checkState(cfg Config) {
	const name = "state file"
	path := cfg.State
	fix := c.fixEnv() + ": point TICKETBRIDGE_STATE at a file in a directory the daemon may write"
	if state.IsURL(path) {
		c.checkPostgresState(cfg)
		return
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		if err := creatable(path); err != nil {
			c.report(fail(name, fix, "%s cannot be created: %v", path, err))
			return
		}
		if rel, err := filepath.Rel(c.scratch, path); c.scratch != "" && err == nil && filepath.IsLocal(rel) {
			c.report(pass(name, "%s does not exist yet; systemd makes its directory and the daemon the file at the first start",
				filepath.Join(c.opts.ServiceStateDir, rel)))
			return
		}
		c.report(pass(name, "%s does not exist yet; the daemon creates it at its first start", path))
		return
	case err != nil:
		c.report(fail(name, fix, "%v", err))
		return
	case !fi.Mode().IsRegular():
		c.report(fail(name, fix, "%s is not a regular file", path))
		return
	}
	st, err := state.Open(path, state.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond, Logger: c.opts.Logger})
	switch {
	case errors.Is(err, state.ErrLocked):
		c.report(pass(name, "%s is in use by the running daemon (not opened)", path))
		return
	case errors.Is(err, state.ErrOldSchema):
		c.report(pass(name, "%s was written by an older ticketbridge; the daemon migrates it at start, keeping a copy", path))
		return
	case errors.Is(err, state.ErrNewerSchema):
		c.report(fail(name, "install the newer ticketbridge again, or point TICKETBRIDGE_STATE at another file", "%v", err))
		return
	case err != nil:
		c.report(fail(name, fix, "%v", err))
		return
	}
	var stored string
	var ok bool
	merr := st.View(func(tx *state.Tx) error {
		var err error
		stored, ok, err = tx.Meta(sync.MetaAdapter)
		return err
	})
	stats, serr := st.Stats()
	_ = st.Close()
	switch {
	case merr != nil:
		c.report(fail(name, fix, "%v", merr))
		return
	case ok && stored != cfg.Adapter:
		c.report(fail(name, fmt.Sprintf("set TICKETBRIDGE_ADAPTER=%s, or point TICKETBRIDGE_STATE at another file", stored),
			"%s was made with adapter %q, but TICKETBRIDGE_ADAPTER is %q", path, stored, cfg.Adapter))
		return
	}
	// The open was read-only; the daemon needs to write.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		c.report(fail(name, fix, "%s is not writable: %v", path, err))
		return
	}
	_ = f.Close()
	detail := path + " opens"
	if serr == nil {
		detail += fmt.Sprintf(": %d tickets tracked, %d replies waiting to be sent, %d refused", stats.Tickets, stats.JournalPending, stats.JournalFailed)
	}
	c.report(pass(name, "%s", detail))
}

// creatable reports why path cannot be created: its nearest existing
// ancestor must be a directory this process may write.
func creatable(path string) error {
	dir := filepath.Dir(path)
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory", dir)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return err
		}
		dir = parent
	}
	f, err := os.CreateTemp(dir, ".ticketbridge-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// checkPostgresState opens the PostgreSQL state read-only: it writes
// nothing, so whether the role may create the tables shows at the first
// start.
func (c *checker) checkPostgresState(cfg Config) {
	const name = "state database"
	where := state.Redacted(cfg.State)
	st, err := state.Open(cfg.State, state.Options{ReadOnly: true, Logger: c.opts.Logger})
	switch {
	case errors.Is(err, state.ErrNotStateFile):
		c.report(pass(name, "%s answers and holds no state yet; the daemon creates its tables at its first start", where))
		return
	case errors.Is(err, state.ErrOldSchema):
		c.report(pass(name, "%s was written by an older ticketbridge; the daemon migrates it at start (take a pg_dump first)", where))
		return
	case err != nil:
		c.report(fail(name, c.fixEnv()+": point TICKETBRIDGE_STATE at a PostgreSQL database the daemon may use", "%v", err))
		return
	}
	var stored string
	var ok bool
	merr := st.View(func(tx *state.Tx) error {
		var err error
		stored, ok, err = tx.Meta(sync.MetaAdapter)
		return err
	})
	stats, serr := st.Stats()
	_ = st.Close()
	switch {
	case merr != nil:
		c.report(fail(name, "check the database", "%v", merr))
	case ok && stored != cfg.Adapter:
		c.report(fail(name, fmt.Sprintf("set TICKETBRIDGE_ADAPTER=%s, or point TICKETBRIDGE_STATE at another database", stored),
			"%s was made with adapter %q, but TICKETBRIDGE_ADAPTER is %q", where, stored, cfg.Adapter))
	case serr != nil:
		c.report(pass(name, "%s opens", where))
	default:
		c.report(pass(name, "%s opens: %d tickets tracked, %d replies waiting to be sent, %d refused", where, stats.Tickets, stats.JournalPending, stats.JournalFailed))
	}
}
