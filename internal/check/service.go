package check

// This file is check's view from inside the service: on an installed
// system it reads the unit the package installed (its user, credentials
// and sandbox) and judges, with the files' owners, groups and modes,
// whether the daemon started by systemd could read its secrets and write
// its state and helpdesk folders. Run as root, check itself could do
// everything; the service could not, and would fail at start.

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ticketbridge/ticketbridge/internal/config"
)

// serviceView is whom the service runs as and what its unit lets it reach.
type serviceView struct {
	unit config.Unit
	acct config.Account
}

// Access wanted of a file, as the permission bits of one class.
const (
	mayRead   fs.FileMode = 4
	mayWrite  fs.FileMode = 2
	maySearch fs.FileMode = 1
)

// service reads the installed unit and finds its user, once; nil when
// the packaged env file is not checked or no unit is installed. A user
// that cannot be found is reported.
func (c *checker) service() *serviceView {
	if c.svcDone {
		return c.svc
	}
	c.svcDone = true
	files := c.opts.Service.UnitFiles()
	if !c.src.Service || len(files) == 0 {
		return nil
	}
	if _, err := os.Stat(files[0]); err != nil {
		return nil // not installed from the package
	}
	u, err := config.ReadUnit(files...)
	if err != nil {
		c.report(fail("service user", "reinstall the package (dpkg -i), which installs "+files[0], "%v", err))
		return nil
	}
	if u.User == "" {
		c.report(skip("as the service", "the unit names no user (User= or DynamicUser=yes): the service runs as root"))
		return nil
	}
	lookup := c.opts.Account
	if lookup == nil {
		lookup = config.LookupAccount
	}
	a, err := lookup(u.User, u.Group, u.SupplementaryGroups...)
	if err != nil {
		c.report(fail("service user", "reinstall the package (dpkg -i), which makes the user "+u.User, "the unit runs the daemon as %s: %v", u.User, err))
		return nil
	}
	c.svc = &serviceView{unit: u, acct: a}
	return c.svc
}

// checkAsService judges, as the service's user with the unit's
// credentials and sandbox, the secrets the hotel's configuration reads
// and the folders it writes: one FAIL with the fix for each that would
// stop the daemon at start, else one PASS.
func (c *checker) checkAsService(cfg config.Daemon) {
	const name = "as the service"
	sv := c.service()
	if sv == nil {
		return
	}
	var problems []checkResult
	problem := func(p config.Problem, w config.Where, format string, a ...any) {
		w.Account = sv.acct
		problems = append(problems, fail(name, p.Fix(w), format, a...))
	}
	var read, wrote []string
	for _, s := range c.secrets(cfg) {
		if ok := c.judgeSecret(sv, s, problem); ok {
			read = append(read, s.what)
		}
	}
	stateDir := c.opts.Service.StateDir
	if !cfg.State.IsDB() {
		if c.judgeState(sv, cfg.State.Value(), stateDir, problem) {
			wrote = append(wrote, filepath.Dir(cfg.State.Value()))
		}
	}
	for _, f := range c.folders(cfg) {
		if c.judgeFolder(sv, f, stateDir, problem) {
			wrote = append(wrote, f.Path)
		}
	}
	for _, p := range problems {
		c.report(p)
	}
	if len(problems) > 0 {
		return
	}
	detail := fmt.Sprintf("%s (uid %d), with the unit's credentials and sandbox", sv.acct.Name, sv.acct.UID)
	if len(read) > 0 {
		detail += ", may read " + strings.Join(read, ", ")
	}
	if len(wrote) > 0 {
		detail += "; may write " + strings.Join(c.shown(wrote), ", ")
	}
	c.report(pass(name, "%s", detail))
}

// shown names paths below the scratch directory as the service's.
func (c *checker) shown(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p
		if rel, err := filepath.Rel(c.scratch, p); c.scratch != "" && err == nil && filepath.IsLocal(rel) {
			out[i] = filepath.Join(c.opts.Service.StateDir, rel)
		}
	}
	return out
}

// secretRef is a secret file the daemon reads: the variable naming it
// (raw, as the service sees it), or the credential it reads by itself.
type secretRef struct {
	what       string // for the PASS line
	variable   string // "" for a credential read without one
	path       string // the path the service opens
	credential string // the credential's name when path is below the runtime credentials
	required   bool   // without it the daemon does not start
	fixVar     string // the variable the fix names
}

// secrets lists the secret files the hotel's daemon reads at start: every
// *_FILE variable of the daemon and of its adapter that is set, and the
// credentials api-key and console-token it reads by itself.
func (c *checker) secrets(cfg config.Daemon) []secretRef {
	raw := config.Unmapped(c.env)
	adapterPrefix := config.EnvPrefix + strings.ToUpper(cfg.Adapter) + "_"
	var out []secretRef
	ref := func(what, variable, path string, required bool, fixVar string) {
		s := secretRef{what: what, variable: variable, path: path, required: required, fixVar: fixVar}
		if n, ok := strings.CutPrefix(path, config.ServiceCredRuntime+"/"); ok {
			s.credential = n
		}
		out = append(out, s)
	}
	for _, v := range config.KnownVariables(c.ctx) {
		if !strings.HasSuffix(v, "_FILE") {
			continue
		}
		own := v == "TICKETBRIDGE_API_KEY_FILE" || v == "TICKETBRIDGE_CONSOLE_TOKEN_FILE"
		if !own && !strings.HasPrefix(v, adapterPrefix) {
			continue
		}
		if p, ok := raw.Lookup(v); ok && strings.TrimSpace(p) != "" {
			ref(strings.TrimSuffix(strings.TrimPrefix(v, config.EnvPrefix), "_FILE"), v, strings.TrimSpace(p), true, v)
		}
	}
	has := func(v string) bool { p, ok := raw.Lookup(v); return ok && strings.TrimSpace(p) != "" }
	if !has("TICKETBRIDGE_API_KEY_FILE") && !has("TICKETBRIDGE_API_KEY") {
		ref("the API key", "", config.ServiceCredRuntime+"/api-key", true, "TICKETBRIDGE_API_KEY_FILE")
	}
	if !has("TICKETBRIDGE_CONSOLE_TOKEN_FILE") {
		if tc, err := config.LoadTelemetry(c.ctx, c.env); err == nil && tc.Listen != "" {
			ref("the console token", "", config.ServiceCredRuntime+"/"+config.ConsoleCredential, false, "TICKETBRIDGE_CONSOLE_TOKEN_FILE")
		}
	}
	return out
}

// judgeSecret reports what keeps the service from reading s; ok when
// nothing does.
func (c *checker) judgeSecret(sv *serviceView, s secretRef, problem func(config.Problem, config.Where, string, ...any)) bool {
	w := config.Where{Path: s.path, Var: s.fixVar, Credential: s.credential}
	if s.credential != "" {
		src, ok := sv.unit.Credentials[s.credential]
		switch {
		case !ok && s.required:
			problem(config.CredentialMissing, w, "%s: the unit passes no credential %s (%s)", cmp.Or(s.variable, s.what), s.credential, strings.Join(sv.unit.Files, ", "))
			return false
		case !ok:
			return true // optional, and not passed: the daemon goes without
		}
		if _, err := os.Stat(src); err != nil && !sv.unit.Defaults[s.credential] {
			w.Path = src
			problem(config.CredentialSourceMissing, w, "the unit's credential %s is loaded from %s, which does not exist: the service does not start", s.credential, src)
			return false
		}
		return true
	}
	if why := sv.unit.Hidden(s.path); why != "" {
		problem(config.Sandboxed, w, "%s=%s: %s", s.variable, s.path, why)
		return false
	}
	err := judgePath(sv.acct, "/", s.path, mayRead)
	if err == nil {
		return true
	}
	for n, src := range sv.unit.Credentials {
		if filepath.Clean(src) == filepath.Clean(s.path) {
			w.Credential = n
			problem(config.SecretIsCredential, w, "%s=%s: %v", s.variable, s.path, err)
			return false
		}
	}
	problem(config.SecretUnreadable, w, "%s=%s: %v", s.variable, s.path, err)
	return false
}

// judgeState reports what keeps the service from writing its state file
// and the folder it is in; ok when nothing does.
func (c *checker) judgeState(sv *serviceView, path, stateDir string, problem func(config.Problem, config.Where, string, ...any)) bool {
	dir := filepath.Dir(path)
	w := config.Where{Path: dir, Var: "TICKETBRIDGE_STATE"}
	if c.scratch != "" && config.Within(path, c.scratch) {
		return true // systemd makes the state directory, the service's
	}
	var top string
	if config.Within(path, stateDir) {
		real, err := filepath.EvalSymlinks(stateDir)
		if err != nil {
			return true // systemd makes it at the first start, the service's
		}
		fi, err := os.Stat(real)
		if err != nil {
			return true
		}
		if uid, gid, ok := config.FileOwner(fi); ok && (uid != sv.acct.UID || len(sv.acct.GIDs) == 0 || gid != sv.acct.GIDs[0]) {
			// systemd gives the whole directory to the service at start
			// when its top is another's.
			return true
		}
		top = real
		if rel, err := filepath.Rel(stateDir, dir); err == nil && filepath.IsLocal(rel) {
			dir = filepath.Join(real, rel)
		} else if dir == stateDir {
			dir = real
		}
		path = filepath.Join(dir, filepath.Base(path))
		w.Path = stateDir
	} else {
		top = "/"
		if why := cmp.Or(sv.unit.Hidden(dir), sv.unit.ReadOnly(dir, stateDir)); why != "" {
			p := config.Sandboxed
			if sv.unit.Hidden(dir) == "" {
				p = config.ReadOnlyPath
			}
			problem(p, w, "the state file %s: %s", path, why)
			return false
		}
	}
	if err := judgePath(sv.acct, top, dir, mayWrite|maySearch); err != nil {
		problem(config.NotWritable, w, "the state's folder: %v", err)
		return false
	}
	if _, err := os.Stat(path); err == nil {
		if err := judgePath(sv.acct, top, path, mayRead|mayWrite); err != nil {
			problem(config.NotWritable, w, "the state file: %v; the service cannot open it", err)
			return false
		}
	}
	return true
}

// folders lists the helpdesk folders the hotel's adapter writes.
func (c *checker) folders(cfg config.Daemon) []config.Folder {
	return config.HelpdeskFolders(c.ctx, cfg, c.env)
}

// judgeFolder reports what keeps the service from writing the folder f
// and what is in it; ok when nothing does.
func (c *checker) judgeFolder(sv *serviceView, f config.Folder, stateDir string, problem func(config.Problem, config.Where, string, ...any)) bool {
	w := config.Where{Path: f.Path, Var: f.Var}
	if config.Within(f.Path, stateDir) || (c.scratch != "" && config.Within(f.Path, c.scratch)) {
		// In the state directory, judged with it: systemd gives it to the
		// service.
		return true
	}
	if why := sv.unit.Hidden(f.Path); why != "" {
		problem(config.Sandboxed, w, "%s=%s: %s", f.Var, f.Path, why)
		return false
	}
	if why := sv.unit.ReadOnly(f.Path, stateDir); why != "" {
		problem(config.ReadOnlyPath, w, "%s=%s: %s", f.Var, f.Path, why)
		return false
	}
	if err := judgePath(sv.acct, "/", f.Path, mayRead|mayWrite|maySearch); err != nil {
		problem(config.NotWritable, w, "the helpdesk folder: %v", err)
		return false
	}
	if _, err := os.Stat(f.Path); err != nil {
		return true // judged above: the daemon may make it
	}
	// What is in it: every folder the daemon writes, every file it reads,
	// its lock file it opens to write.
	err := filepath.WalkDir(f.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := mayRead
		switch {
		case d.IsDir():
			want = mayRead | mayWrite | maySearch
		case d.Name() == ".lock":
			want = mayRead | mayWrite
		case !fi.Mode().IsRegular():
			return nil
		}
		if !mayUse(sv.acct, fi, want) {
			return fmt.Errorf("%s may not %s %s (%s)", sv.acct.Name, wantWords(want), p, describe(fi))
		}
		return nil
	})
	if err != nil {
		problem(config.NotWritable, w, "the helpdesk folder: %v", err)
		return false
	}
	return true
}

// judgePath says why a may not do want with path, nil when it may: each
// folder from top down to it must let a pass, and path itself allow
// want. A path that does not exist is judged by the nearest folder above
// it, in which a must be able to make it.
func judgePath(a config.Account, top, path string, want fs.FileMode) error {
	top, path = filepath.Clean(top), filepath.Clean(path)
	rel, err := filepath.Rel(top, path)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		top, rel = "/", strings.TrimPrefix(path, "/")
	}
	cur := top
	fi, err := os.Stat(cur)
	if err != nil {
		return fmt.Errorf("%s: %w", cur, err)
	}
	var parts []string
	if rel != "." && rel != "" {
		parts = strings.Split(rel, string(filepath.Separator))
	}
	for _, part := range parts {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder", cur)
		}
		if !mayUse(a, fi, maySearch) {
			return fmt.Errorf("%s may not enter %s (%s)", a.Name, cur, describe(fi))
		}
		next := filepath.Join(cur, part)
		nfi, err := os.Stat(next)
		if errors.Is(err, fs.ErrNotExist) {
			if !mayUse(a, fi, mayWrite|maySearch) {
				return fmt.Errorf("%s does not exist and %s may not make it in %s (%s)", path, a.Name, cur, describe(fi))
			}
			return nil
		}
		if err != nil {
			return err
		}
		cur, fi = next, nfi
	}
	if !mayUse(a, fi, want) {
		return fmt.Errorf("%s may not %s %s (%s)", a.Name, wantWords(want), path, describe(fi))
	}
	return nil
}

// mayUse reports whether a may do want with the file fi describes, judged
// by its owner, group and mode as the kernel does (ACLs aside).
func mayUse(a config.Account, fi fs.FileInfo, want fs.FileMode) bool {
	if a.UID == 0 {
		return true
	}
	uid, gid, ok := config.FileOwner(fi)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case uid == a.UID:
		perm >>= 6
	case slices.Contains(a.GIDs, gid):
		perm >>= 3
	}
	return perm&want == want
}

func wantWords(want fs.FileMode) string {
	switch want {
	case mayRead:
		return "read"
	case mayRead | mayWrite:
		return "read and write"
	case mayRead | mayWrite | maySearch, mayWrite | maySearch:
		return "write in"
	}
	return "use"
}

// describe says who owns the file fi describes and its mode, as ls does.
func describe(fi fs.FileInfo) string {
	uid, gid, ok := config.FileOwner(fi)
	if !ok {
		return fi.Mode().String()
	}
	un, gn := fmt.Sprint(uid), fmt.Sprint(gid)
	if u, err := user.LookupId(un); err == nil {
		un = u.Username
	}
	if g, err := user.LookupGroupId(gn); err == nil {
		gn = g.Name
	}
	return fmt.Sprintf("%s:%s %s", un, gn, fi.Mode())
}
