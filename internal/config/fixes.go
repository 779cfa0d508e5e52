package config

// This file is the one table of fixes for what stops the daemon at start
// or stops its cycles: `check` prints them in its fix column, and the
// daemon's and `once`'s errors carry the same text (WithFix, at start and
// for each cycle's fatal error), so that a problem reads alike before and
// after the service started. The errors themselves say what is wrong; what
// to do about it is here, once.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/safefile"
	"github.com/ticketbridge/ticketbridge/sync"
)

// Problem is a kind of problem that stops the daemon at start.
type Problem int

const (
	// NotWritable: the daemon's user may not write a folder or file it
	// writes (the state, a helpdesk folder).
	NotWritable Problem = iota + 1
	// SecretUnreadable: the daemon's user may not read a secret file.
	SecretUnreadable
	// SecretIsCredential: a variable names the source of one of the
	// unit's credentials, which the daemon's user may not read; the
	// credential's copy it may.
	SecretIsCredential
	// CredentialMissing: the daemon reads a credential the unit does not
	// pass.
	CredentialMissing
	// CredentialSourceMissing: the file a credential is loaded from does
	// not exist, and the unit does not start without it.
	CredentialSourceMissing
	// Sandboxed: the unit's sandbox hides a path from the daemon.
	Sandboxed
	// ReadOnlyPath: the unit's ProtectSystem=strict keeps a folder the
	// daemon writes read-only.
	ReadOnlyPath
	// KeyRefused: the API refused the key (sync.ErrKeyRefused); Path is
	// the key's file.
	KeyRefused
	// MissingRight: the key lacks a ticket right (sync.ErrMissingRight);
	// Path is the key's file.
	MissingRight
	// HelpdeskRefused: the helpdesk refused the adapter's credentials
	// (sync.ErrHelpdeskRefused); Var names the adapter's variables.
	HelpdeskRefused
	// LinkedFolder: a symbolic link stands where a folder is expected
	// (safefile.ErrLink).
	LinkedFolder
	// NoHotels: a command names a hotel (--hotel) where the configuration
	// serves one (ErrNoHotels).
	NoHotels
	// Moved: the state was synced with another API, helpdesk or
	// organisation than the configuration names (sync.ErrMoved; its
	// error names the command that confirms the move).
	Moved
)

// Where is what a fix names.
type Where struct {
	// Path is the file or folder.
	Path string
	// Var is the variable that names it, when one does.
	Var string
	// Credential is the unit's credential concerned, when one is.
	Credential string
	// Account is the user the daemon runs as.
	Account Account
}

// fixes is the table: each problem's fix, from what it names.
var fixes = map[Problem]func(w Where) string{
	NotWritable: func(w Where) string {
		return fmt.Sprintf("run sudo chown -R %s:%s %s && sudo chmod -R u+rwX %s: the daemon runs as %s and writes there",
			w.Account.Name, w.Account.Group, w.Path, w.Path, w.Account.Name)
	},
	SecretUnreadable: func(w Where) string {
		return fmt.Sprintf("run sudo chown %s:%s %s (it stays mode 600), or pass it as a credential: LoadCredential=NAME:%s (sudo systemctl edit ticketbridge) and %s=%s/NAME",
			w.Account.Name, w.Account.Group, w.Path, w.Path, orVar(w.Var), ServiceCredRuntime)
	},
	SecretIsCredential: func(w Where) string {
		return fmt.Sprintf("the unit passes %s as its credential %s, which the daemon reads by itself: remove %s from the configuration (or set it to %s/%s)",
			w.Path, w.Credential, orVar(w.Var), ServiceCredRuntime, w.Credential)
	},
	CredentialMissing: func(w Where) string {
		return fmt.Sprintf("add LoadCredential=%s:/etc/ticketbridge/%s to the unit (sudo systemctl edit ticketbridge) and put the file there, or name another file in %s",
			w.Credential, w.Credential, orVar(w.Var))
	},
	CredentialSourceMissing: func(w Where) string {
		return fmt.Sprintf("write it to %s (sudo sh -c 'umask 077; cat > %s'): systemd does not start the service without the file its credential %s is loaded from",
			w.Path, w.Path, w.Credential)
	},
	Sandboxed: func(w Where) string {
		return fmt.Sprintf("move it below /etc/ticketbridge or /srv/ticketbridge and name the new place in %s", orVar(w.Var))
	},
	ReadOnlyPath: func(w Where) string {
		return fmt.Sprintf("add ReadWritePaths=%s to the unit (sudo systemctl edit ticketbridge), or name a folder below one it lists in %s", w.Path, orVar(w.Var))
	},
	KeyRefused: func(w Where) string {
		return fmt.Sprintf("create a key with the right tickets:write in the platform's console, write it to %s and run chmod 600 on that file", orKeyFile(w.Path))
	},
	MissingRight: func(w Where) string {
		return fmt.Sprintf("give the key the ticket right read + replies in the platform's console (Settings, AI and administration, API Keys), or create one that has it and write it to %s", orKeyFile(w.Path))
	},
	HelpdeskRefused: func(w Where) string {
		return fmt.Sprintf("check the token or password in %s: revoked, expired, mistyped, or lacking a right the bridge needs (ticketbridge check says which)", orVar(w.Var))
	},
	LinkedFolder: func(w Where) string {
		return "replace the link by the folder itself: a link there is not followed, since someone other than root or the service could have put it there"
	},
	NoHotels: func(w Where) string {
		return "--hotel needs TICKETBRIDGE_HOTELS_DIR, a folder of <name>.env files: leave --hotel out to act on the one hotel"
	},
	Moved: func(w Where) string {
		return "if this is a copy (a restored backup or a cloned machine started elsewhere), stop it, or give it a state of its own (TICKETBRIDGE_STATE); " +
			"if the move is meant, stop the daemon and run the confirm-move command the error names, or set TICKETBRIDGE_ALLOW_MOVE for one start (docs/security.md)"
	},
}

func orKeyFile(path string) string {
	if path == "" {
		return "the file named by TICKETBRIDGE_API_KEY_FILE"
	}
	return path
}

// byError are the problems known by their error, wherever it happens.
var byError = []struct {
	err error
	p   Problem
}{
	{sync.ErrKeyRefused, KeyRefused},
	{sync.ErrMissingRight, MissingRight},
	{sync.ErrHelpdeskRefused, HelpdeskRefused},
	{safefile.ErrLink, LinkedFolder},
	{ErrNoHotels, NoHotels},
	{sync.ErrMoved, Moved},
}

func orVar(v string) string {
	if v == "" {
		return "the configuration"
	}
	return v
}

// Fix returns the fix of p for what w names.
func (p Problem) Fix(w Where) string {
	if f, ok := fixes[p]; ok {
		return f(w)
	}
	return ""
}

// Account is a user the daemon runs as: its name, its primary group's, and
// the ids that decide what it may open.
type Account struct {
	Name, Group string
	UID         int
	GIDs        []int // the primary group first
}

// LookupAccount returns the account of the user name, with its groups;
// group, when not empty, is its primary group instead (a unit's Group=),
// and extra its supplementary groups (SupplementaryGroups=).
func LookupAccount(name, group string, extra ...string) (Account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return Account{}, fmt.Errorf("look up user %s: %w", name, err)
	}
	a := Account{Name: u.Username}
	if _, err := fmt.Sscan(u.Uid, &a.UID); err != nil {
		return a, fmt.Errorf("look up user %s: uid %q: %w", name, u.Uid, err)
	}
	primary := u.Gid
	if group != "" && group != name {
		g, err := user.LookupGroup(group)
		if err != nil {
			return a, fmt.Errorf("look up group %s: %w", group, err)
		}
		primary = g.Gid
	}
	ids := []string{primary}
	if more, err := u.GroupIds(); err == nil {
		ids = append(ids, more...)
	}
	for _, n := range extra {
		if g, err := user.LookupGroup(n); err == nil {
			ids = append(ids, g.Gid)
		}
	}
	for _, s := range ids {
		var id int
		if _, err := fmt.Sscan(s, &id); err == nil {
			a.GIDs = append(a.GIDs, id)
		}
	}
	a.Group = group
	if a.Group == "" {
		if g, err := user.LookupGroupId(primary); err == nil {
			a.Group = g.Name
		} else {
			a.Group = primary
		}
	}
	return a, nil
}

// CurrentAccount is the account of this process, for the fixes of its
// own errors; on failure it names the user by uid.
func CurrentAccount() Account {
	if u, err := user.Current(); err == nil {
		if a, err := LookupAccount(u.Username, ""); err == nil {
			return a
		}
	}
	uid := os.Getuid()
	return Account{Name: fmt.Sprint(uid), Group: fmt.Sprint(os.Getgid()), UID: uid, GIDs: []int{os.Getgid()}}
}

// WithFix returns err with the fix of the table that check would give for
// it, when it is a problem of the table: an error the table knows
// (byError: a refused key or credentials, a missing right, a link where a
// folder is expected), or a file or folder of the state or of the helpdesk
// (TICKETBRIDGE_FILES_DIR, TICKETBRIDGE_WEBHOOK_DIR) that who may not
// write, or that the system keeps read-only. Any other error is returned
// as it is. The start errors, each cycle's fatal error (sync.Deps.Advise)
// and the command line's (--hotel) go through it; env may be nil where no
// configuration was read.
func WithFix(err error, d Daemon, env envconfig.Lookuper, who Account) error {
	if err == nil {
		return nil
	}
	for _, b := range byError {
		if errors.Is(err, b.err) {
			w := Where{Account: who, Path: d.APIKeyFile}
			if d.Adapter != "" {
				w.Var = "the " + EnvPrefix + strings.ToUpper(d.Adapter) + "_* settings"
			}
			if w.Path == "" && env != nil {
				w.Path = credentialFile(env, "api-key")
			}
			return fmt.Errorf("%w; fix: %s", err, b.p.Fix(w))
		}
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	w := Where{Account: who}
	path := pe.Path
	switch {
	case !d.State.IsDB() && Within(path, d.StateDir()):
		w.Path, w.Var = d.StateDir(), "TICKETBRIDGE_STATE"
	default:
		for _, v := range []string{"TICKETBRIDGE_FILES_DIR", "TICKETBRIDGE_WEBHOOK_DIR"} {
			if dir, ok := env.Lookup(v); ok && strings.TrimSpace(dir) != "" && Within(path, filepath.Clean(strings.TrimSpace(dir))) {
				w.Path, w.Var = filepath.Clean(strings.TrimSpace(dir)), v
			}
		}
	}
	if w.Path == "" {
		return err
	}
	switch {
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w; fix: %s", err, ReadOnlyPath.Fix(w))
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w; fix: %s", err, NotWritable.Fix(w))
	}
	return err
}
