package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// Options are what Run is given besides the env file: the command's
// flags and the parts that tests replace.
type Options struct {
	// Registry holds the adapters the check may open.
	Registry adapters.Registry
	// Timeout bounds each check that talks to the network.
	Timeout time.Duration
	// Service is the packaged service's layout (see the package doc); an
	// empty EnvFile turns the service emulation off.
	Service config.Layout
	// Logger receives the adapters' and the store's warnings.
	Logger *slog.Logger
	// Hotel, with TICKETBRIDGE_HOTELS_DIR, checks that hotel only; empty
	// checks every hotel.
	Hotel string
	// Account finds the user the installed unit runs the daemon as;
	// nil looks it up in the system's users (config.LookupAccount).
	Account func(name, group string, extra ...string) (config.Account, error)
}

// checkResult is one line of the check's verdict.
type checkResult struct {
	name   string
	status string // PASS, WARN, FAIL or SKIP
	detail string
	fix    string
}

// The statuses of a row, first on its line.
const (
	Pass = "PASS"
	Fail = "FAIL"
	Warn = "WARN" // something waits for a person; the exit status stays 0
	Skip = "SKIP"
)

// checker runs the checks in order and prints each as it ends.
type checker struct {
	ctx     context.Context
	out     io.Writer
	opts    Options
	env     envconfig.Lookuper
	src     config.Source
	envFile string // the env file read, for the fixes
	scratch string // the service's state directory stands in here; "" when none
	results []checkResult
	// svc is whom the installed service runs as, read once (svcDone);
	// nil when no unit is installed (see service).
	svc     *serviceView
	svcDone bool
	// daemonErr is LoadDaemon's error, nil when the daemon's variables
	// read.
	daemonErr error
}

func (c *checker) report(r checkResult) checkResult {
	c.results = append(c.results, r)
	fmt.Fprintf(c.out, "%s  %-14s %s\n", r.status, r.name, r.detail)
	if r.fix != "" && (r.status == Fail || r.status == Warn) {
		fmt.Fprintf(c.out, "      %-14s fix: %s\n", "", r.fix)
	}
	return r
}

func pass(name, format string, a ...any) checkResult {
	return checkResult{name: name, status: Pass, detail: fmt.Sprintf(format, a...)}
}

func fail(name, fix, format string, a ...any) checkResult {
	return checkResult{name: name, status: Fail, detail: fmt.Sprintf(format, a...), fix: fix}
}

func warn(name, fix, format string, a ...any) checkResult {
	return checkResult{name: name, status: Warn, detail: fmt.Sprintf(format, a...), fix: fix}
}

func skip(name, why string) checkResult {
	return checkResult{name: name, status: Skip, detail: "not checked: " + why}
}

// ErrFailed is Run's error when a check failed; the verdict is printed
// already.
var ErrFailed = errors.New("a check failed")

// Run runs every check against the environment (and envFile when it is
// set), printing one verdict per check to out, and a summary. It returns
// ErrFailed when any check failed, and config.ErrNoHotels or an error
// wrapping config.ErrNoSuchHotel when opts.Hotel names no hotel of the
// configuration.
func Run(ctx context.Context, envFile string, out io.Writer, opts Options) error {
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
	hc, err := config.LoadHotels(c.ctx, c.env)
	switch {
	case err != nil:
		c.report(fail("configuration", c.fixEnv()+": correct the variable named", "%s", strings.TrimPrefix(err.Error(), "read configuration: ")))
		return c.verdict()
	case hc.Dir != "":
		return c.checkHotels()
	case opts.Hotel != "":
		return config.ErrNoHotels
	}
	c.checkOne()
	return c.verdict()
}

// checkHotels runs the checks of every hotel of the hotels directory, or
// of the one --hotel names, one section each.
func (c *checker) checkHotels() error {
	main, err := config.LoadDaemon(c.ctx, c.env)
	if err != nil {
		c.report(fail("configuration", c.fixEnv()+": correct the variables named", "%s", strings.TrimPrefix(err.Error(), "read configuration: ")))
		return c.verdict()
	}
	src := c.src
	src.Env = c.env
	var warnings []string
	secs, err := config.Sections(c.ctx, src, main, c.opts.Hotel, func(w string) { warnings = append(warnings, w) })
	if err != nil {
		if errors.Is(err, config.ErrNoHotels) || errors.Is(err, config.ErrNoSuchHotel) {
			return err
		}
		c.report(fail("hotels", c.fixEnv()+": correct the hotels directory", "%v", err))
		return c.verdict()
	}
	failed := map[string]bool{} // warnings reported as failures
	for _, h := range secs {
		fmt.Fprintf(c.out, "\n== hotel %s ==\n", h.Name)
		if h.Err != nil {
			c.report(fail("configuration", "correct the hotel's file (config.example.env shows each variable's form)", "%v", h.Err))
			continue
		}
		c.env, c.src, c.envFile = h.Conf.Env, config.HotelSource(src, h.Conf.File, h.Conf.Env), h.Conf.File.Path
		c.checkOne()
		// A secret staff may read fails the check; the daemon only
		// warns, so that an installed hotel goes on.
		for _, s := range config.HotelSecrets(h.Conf.File) {
			c.report(fail("hotel secrets", s.Fix(), "%s", s.Problem()))
			failed[s.Warning()] = true
		}
	}
	for _, w := range warnings {
		if !failed[w] {
			fmt.Fprintf(c.out, "warning: %s\n", w)
		}
	}
	return c.verdict()
}

// checkOne runs the checks of one hotel against c.env.
func (c *checker) checkOne() {
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
	if cfgOK && keyOK {
		c.checkServes(cfg, key)
	}
	if cfgOK {
		c.checkAsService(cfg)
		c.checkFullReads(cfg)
		c.checkHeld(cfg)
	}
}

// checkHeld fails when the running daemon's helpdesk holds changes until
// its team acts (adapters.HeldError), naming each and what it needs, and
// warns of each file the team handed it that it set aside.
func (c *checker) checkHeld(cfg config.Daemon) {
	snap, err := bridge.ReadSnapshot(cfg.State.Value() + bridge.StatusSuffix)
	if err != nil || len(snap.Held) == 0 {
		return
	}
	at := snap.At.Local().Format(time.DateTime)
	var what []string
	for _, h := range snap.Held {
		if h.SetAside() && h.Mail {
			c.report(warn("mail set aside", "do what its reason says, then move it back to the inbox to have it read again, or delete it from the folder "+path.Dir(h.File),
				"%s in %s, set aside at %s and not carried (as the daemon saw at %s): %s", h.Op, h.File, when(h.Since), at, h.Need))
			continue
		}
		if h.SetAside() {
			c.report(warn("file set aside", "fix it as its .error.txt says and move it back into the outbox, or delete it from "+path.Dir(h.File)+"/",
				"%s, set aside at %s and not sent (as the daemon saw at %s): %s", h.File, when(h.Since), at, h.Need))
			continue
		}
		what = append(what, h.Error())
	}
	if len(what) == 0 {
		return
	}
	c.report(fail("held changes", "do in the helpdesk what each names (for example fill in the fields required on solve); the daemon tries again every few minutes",
		"as the daemon saw at %s, the helpdesk holds %d changes: %s", at, len(what), strings.Join(what, "; ")))
}

// when is t in the local time, as status prints it; "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

// checkFullReads says how often every open request is read whatever the
// lists show, and whether the engine shortened that because the API left
// updated_at behind a change; and warns of the lists the last cycle found
// full (see checkFullLists). It reads the state file, or the running
// daemon's status snapshot; it prints nothing before the first cycle.
func (c *checker) checkFullReads(cfg config.Daemon) {
	sc, err := sync.LoadConfig(c.ctx, c.env)
	if err != nil {
		return
	}
	var f *sync.FullRead
	var last *sync.Report
	st, err := state.OpenAt(c.ctx, cfg.State, state.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond, Logger: c.opts.Logger, Hotel: cfg.Hotel})
	switch {
	case err == nil:
		fr, ferr := sync.ReadFullRead(c.ctx, st, sc.FullReadInterval)
		last, _ = sync.ReadLastCycle(c.ctx, st)
		_ = st.Close()
		if ferr == nil {
			f = &fr
		}
	case errors.Is(err, state.ErrLocked):
		if snap, err := bridge.ReadSnapshot(cfg.State.Value() + bridge.StatusSuffix); err == nil {
			f, last = snap.FullRead, snap.LastCycle
			if f == nil {
				f = &sync.FullRead{Configured: sc.FullReadInterval, Effective: sc.FullReadInterval}
			}
		}
	}
	c.checkRules(sc, last)
	if f == nil {
		return
	}
	c.report(pass("full reads", "%s", f))
	c.checkFullLists(last)
}

// checkRules says what the rules for what crosses leave out and what goes
// upstream, and, as the last cycle (nil: none yet) counted them, how many
// requests they leave out.
func (c *checker) checkRules(sc sync.Config, last *sync.Report) {
	msg := sync.RulesText(sc)
	if last != nil && len(last.LeftOut) > 0 {
		msg += fmt.Sprintf("; as the cycle of %s saw: %s (%s)", when(last.Start), sync.LeftOutText(last.LeftOut), sync.LeftOutHint)
	}
	c.report(pass("rules", "%s", msg))
}

// checkFullLists warns of the lists the last cycle (last, nil: none yet)
// found holding the API's limit of requests: older requests of their
// status and department are not discovered (see sync.FullList).
func (c *checker) checkFullLists(last *sync.Report) {
	if last == nil || len(last.FullLists) == 0 {
		return
	}
	lists := fmt.Sprintf("%d lists hold", len(last.FullLists))
	if len(last.FullLists) == 1 {
		lists = "1 list holds"
	}
	c.report(warn("full lists", sync.FullListsFix,
		"as the cycle of %s saw, %s %d requests, the API's limit: %s; %s",
		when(last.Start), lists, sync.ListLimit, sync.FullListsText(last.FullLists), sync.FullListsWhy))
}

func (c *checker) verdict() error {
	failed, warned := 0, 0
	for _, r := range c.results {
		switch r.status {
		case Fail:
			failed++
		case Warn:
			warned++
		}
	}
	if failed == 0 && warned > 0 {
		fmt.Fprintf(c.out, "\nNo check failed; %d of %d warn of something that waits for a person.\n", warned, len(c.results))
		return nil
	}
	if failed == 0 {
		fmt.Fprintf(c.out, "\nAll %d checks passed.\n", len(c.results))
		return nil
	}
	fmt.Fprintf(c.out, "\n%d of %d checks failed.\n", failed, len(c.results))
	return ErrFailed
}

// environment builds the lookuper as every command does (see
// config.FindSource). When the packaged env file is checked outside systemd
// before the service ever ran, its state directory is stood in for by a
// scratch directory, removed by the cleanup it returns.
func (c *checker) environment() (func(), error) {
	nop := func() {}
	src, err := config.FindSource(c.envFile, c.opts.Service)
	c.envFile = src.File
	if err != nil {
		return nop, err
	}
	c.src, c.env = src, src.Env
	if n := src.SkipNote(); n != "" {
		fmt.Fprintf(c.out, "%s%s.\n", strings.ToUpper(n[:1]), n[1:])
	}
	if c.envFile != "" {
		fmt.Fprintf(c.out, "Checking %s.\n", c.envFile)
	} else {
		fmt.Fprintln(c.out, "Checking the TICKETBRIDGE_* variables of the environment.")
	}
	if !src.Service {
		return nop, nil
	}
	cleanup := nop
	l := c.opts.Service
	note := fmt.Sprintf("Checking as the service runs: credentials from %s; ", l.CredDir)
	if !src.StateDirMissing {
		note += "state in " + l.StateDir + "."
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
		c.env = envconfig.MultiLookuper(envconfig.MapLookuper(map[string]string{"STATE_DIRECTORY": scratch}), src.Env)
		note += l.StateDir + " does not exist yet (systemd makes it at the first start), so the state and helpdesk folders are tried in a scratch directory."
	}
	fmt.Fprintln(c.out, note)
	return cleanup, nil
}

func (c *checker) fixEnv() string {
	if c.envFile != "" {
		return "edit " + c.envFile
	}
	return "set the variable"
}

// checkConfig reads every variable the daemon reads and checks its form.
func (c *checker) checkConfig() (config.Daemon, bool) {
	var problems []string
	cfg, err := config.LoadDaemon(c.ctx, c.env)
	c.daemonErr = err
	if err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "read configuration: "))
	}
	sc, err := sync.LoadConfig(c.ctx, c.env)
	if err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "read sync configuration: "))
	}
	tc, err := config.LoadTelemetry(c.ctx, c.env)
	if err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "read configuration: "))
	}
	if err == nil && tc.Listen != "" {
		// The daemon reads the status page's settings and token at start:
		// one it would refuse (too short, readable by others) stops it.
		if _, err := config.LoadConsole(c.ctx, c.env); err != nil {
			problems = append(problems, strings.TrimPrefix(err.Error(), "read configuration: "))
		}
	}
	// The daemon reads the notifications' settings at start and stops on
	// a target or ping URL it cannot parse.
	if _, err := config.LoadNotify(c.ctx, c.env); err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "read notification settings: "))
	}
	if err := config.CheckAPIURL(cfg.APIURL, cfg.AllowInsecureHTTP); err != nil {
		problems = append(problems, err.Error())
	}
	if _, ok := c.opts.Registry[cfg.Adapter]; !ok && c.opts.Registry != nil {
		problems = append(problems, fmt.Sprintf("TICKETBRIDGE_ADAPTER=%q: not an adapter of this ticketbridge; set it to one of %s", cfg.Adapter, strings.Join(c.opts.Registry.Names(), ", ")))
	}
	problems = append(problems, config.UnknownVariables(c.ctx, c.src)...)
	if len(problems) > 0 {
		c.report(fail("configuration", c.fixEnv()+": correct the variables named (config.example.env shows each one's form)",
			"%s", strings.Join(problems, "; ")))
		return cfg, false
	}
	metricsOn := "metrics off"
	if tc.Listen != "" {
		metricsOn = "metrics on " + tc.Listen
	}
	c.report(pass("configuration", "adapter %s, schedule %q, state %s, %s", cfg.Adapter, sc.Schedule, cfg.State.String(), metricsOn))
	return cfg, true
}

// checkKey finds the API key without contacting anybody.
func (c *checker) checkKey(cfg config.Daemon) (string, bool) {
	key, err := cfg.ReadAPIKey(c.env)
	if err != nil {
		c.report(fail("API key", keyFileFix(err, c.keyPath(cfg)), "%v", err))
		return "", false
	}
	if !strings.HasPrefix(key, guestapi.KeyPrefix) || len(key) == len(guestapi.KeyPrefix) {
		c.report(fail("API key", "write the hotel's key (it starts with "+guestapi.KeyPrefix+") to "+c.keyPath(cfg), "the key does not look like a Guest Requests API key (it starts with %q)", guestapi.KeyPrefix))
		return "", false
	}
	c.report(pass("API key", "found in %s", c.keySource(cfg)))
	return key, true
}

func (c *checker) keySource(cfg config.Daemon) string {
	switch {
	case cfg.APIKey != "":
		return "TICKETBRIDGE_API_KEY"
	case cfg.APIKeyFile != "":
		return cfg.APIKeyFile
	}
	return c.keyPath(cfg)
}

// keyPath is the file the key should be in.
func (c *checker) keyPath(cfg config.Daemon) string {
	if cfg.APIKeyFile != "" {
		return cfg.APIKeyFile
	}
	if dir, ok := c.env.Lookup("CREDENTIALS_DIRECTORY"); ok && dir != "" {
		if strings.HasPrefix(dir, config.ServiceCredRuntime) || c.src.Service {
			return filepath.Join(c.opts.Service.CredDir, "api-key")
		}
		return filepath.Join(dir, "api-key")
	}
	return "the file named by TICKETBRIDGE_API_KEY_FILE"
}

// keyFileFix is the fix of a key that could not be read from path.
func keyFileFix(err error, path string) string {
	msg := err.Error()
	switch {
	case errors.Is(err, config.ErrKeyFileOpen):
		return "run chmod 600 " + path
	case errors.Is(err, config.ErrKeyFileWritable) && strings.Contains(msg, "belongs to"):
		return "run chown root " + path + " (or chown it to the user the daemon runs as), and check who wrote the key"
	case errors.Is(err, config.ErrKeyFileWritable):
		return "run chmod 600 " + path + ", and check who wrote the key"
	case errors.Is(err, fs.ErrPermission) || strings.Contains(msg, "permission denied"):
		return "run the check as root (sudo ticketbridge check), as the service reads the key"
	case strings.Contains(msg, "the file is empty"):
		return "write the hotel's key (it starts with " + guestapi.KeyPrefix + ") to " + path
	case strings.Contains(msg, "not both"):
		return "remove TICKETBRIDGE_API_KEY or TICKETBRIDGE_API_KEY_FILE"
	}
	return keyFix(path)
}

// rightFix is the fix of a key that lacks a right, from the table.
func rightFix(path string) string { return config.MissingRight.Fix(config.Where{Path: path}) }

// keyFix is the fix of a key the API refused, from the table.
func keyFix(path string) string { return config.KeyRefused.Fix(config.Where{Path: path}) }

func (c *checker) client(cfg config.Daemon, key string) (*guestapi.Client, error) {
	return guestapi.New(guestapi.Config{
		BaseURL:     cfg.APIURL,
		APIKey:      key,
		MaxAttempts: 1,
		Logger:      c.opts.Logger,
	})
}

// checkAPI lists one ticket: the API is reachable, the key accepted and
// allowed to read tickets.
func (c *checker) checkAPI(cfg config.Daemon, key string) bool {
	const name = "API"
	if err := config.CheckAPIURL(cfg.APIURL, cfg.AllowInsecureHTTP); err != nil {
		c.report(skip(name, "TICKETBRIDGE_API_URL is not usable (see configuration)"))
		return false
	}
	urlFix := "set TICKETBRIDGE_API_URL to " + config.APIURLExample + ", without /ops-public-api/v1"
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
		c.report(fail(name, rightFix(c.keyPath(cfg)), "the key may not read tickets (403, needs %s)", orRight(err, "tickets:read")))
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

// checkWrite proves the right tickets:write without writing: see the
// package doc.
func (c *checker) checkWrite(cfg config.Daemon, key string) {
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
		c.report(fail(name, rightFix(c.keyPath(cfg)),
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
func (c *checker) checkHelpdesk(cfg config.Daemon, cfgOK bool) {
	const name = "helpdesk"
	if cfg.Adapter == "" {
		c.report(fail(name, c.fixEnv()+": set TICKETBRIDGE_ADAPTER", "TICKETBRIDGE_ADAPTER is empty"))
		return
	}
	if sme := (*adapters.StatusMapError)(nil); errors.As(c.daemonErr, &sme) {
		c.report(skip(name, "the status mapping does not parse (see configuration)"))
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	if _, ok := c.opts.Registry[cfg.Adapter]; !ok {
		c.report(skip(name, "TICKETBRIDGE_ADAPTER names no adapter (see configuration)"))
		return
	}
	fix := fmt.Sprintf("%s: check TICKETBRIDGE_ADAPTER and the TICKETBRIDGE_%s_* variables (config.example.env)", c.fixEnv(), strings.ToUpper(cfg.Adapter))
	hd, err := c.opts.Registry.Open(ctx, cfg.Adapter, adapters.Deps{
		// check makes nothing: no helpdesk folder as root, none in the
		// working directory; the adapter judges whether it could.
		ReadOnly:           true,
		Env:                c.env,
		Logger:             c.opts.Logger.With("adapter", cfg.Adapter),
		StatusToHelpdesk:   cfg.StatusToHelpdesk,
		StatusFromHelpdesk: cfg.StatusFromHelpdesk,
		StateDir:           cfg.StateDir(),
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
func (c *checker) checkState(cfg config.Daemon) {
	const name = "state file"
	path := cfg.State.Value()
	fix := c.fixEnv() + ": point TICKETBRIDGE_STATE at a file in a directory the daemon may write"
	if cfg.State.IsDB() {
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
				filepath.Join(c.opts.Service.StateDir, rel)))
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
	st, err := state.Open(c.ctx, path, state.Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond, Logger: c.opts.Logger})
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
	stored, ok, merr, stats, serr := stateFacts(c.ctx, st)
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
func (c *checker) checkPostgresState(cfg config.Daemon) {
	const name = "state database"
	where := cfg.State.String()
	st, err := state.OpenAt(c.ctx, cfg.State, state.Options{ReadOnly: true, Logger: c.opts.Logger, Hotel: cfg.Hotel})
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
	stored, ok, merr, stats, serr := stateFacts(c.ctx, st)
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

// stateFacts reads what check says of an open state and closes it: the
// adapter it was made with (ok false when none is recorded), with the
// error of that read, and its summary, with the error of that one.
func stateFacts(ctx context.Context, st *state.Store) (stored string, ok bool, merr error, stats state.Stats, serr error) {
	merr = st.View(ctx, func(tx *state.Tx) error {
		var err error
		stored, ok, err = tx.Meta(sync.MetaAdapter)
		return err
	})
	stats, serr = st.Stats(ctx)
	_ = st.Close()
	return stored, ok, merr, stats, serr
}
