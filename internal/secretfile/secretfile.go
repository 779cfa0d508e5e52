// Package secretfile reads the one-line secrets the daemon is given as
// files: the API key, the helpdesks' tokens, the webhook secret, the
// console token. It is the one place that decides whether a secret file
// is kept well enough to be used.
//
// A file anyone but root, the process's user and the service may change
// is refused: one its group or every user may write, and one another
// user owns. (Root's commands, check and once --dry-run, accept the
// service's user, ServiceUser, as the owner: the service reads them.) The
// folder the file is in is not judged: secrets are reached through links
// (Kubernetes' ..data, systemd's credentials), and the package's and
// systemd's folders for them are root's or the service's.
//
// A file that every user may read is refused. A file its group may read is
// refused when that group holds anyone but the service and root: on an
// installed system the group ticketbridge holds the staff of the files
// helpdesk, who must not read the service's secrets. A group that holds
// the service alone is accepted, as Kubernetes mounts secrets (mode 0440,
// group fsGroup). Members are read from /etc/group and /etc/passwd; a
// group whose members a directory service lists elsewhere is not seen.
//
// Errors name the file, the variable or credential it came from and the
// fix, never the secret.
package secretfile

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ErrReadable is matched by the error of a secret file that users other
// than the service (and root) may read.
var ErrReadable = errors.New("readable by other users")

// ErrWritable is matched by the error of a secret file that users other
// than the process's own, root and the service may change.
var ErrWritable = errors.New("writable by other users")

// ServiceUser is the user the packaged service runs as.
const ServiceUser = "ticketbridge"

// The account databases; tests point them elsewhere.
var (
	groupFile  = "/etc/group"
	passwdFile = "/etc/passwd"
)

// Resolve returns the secret of the setting v: value when file is empty,
// else what [Read] reads from file, the value of v_FILE (a systemd
// credential, a mounted secret). Both set is an error. The errors name v
// or v_FILE and never show the secret.
func Resolve(v, value, file string) (string, error) {
	if file == "" {
		return value, nil
	}
	if value != "" {
		return "", fmt.Errorf("%s and %s_FILE are both set: use one", v, v)
	}
	// The path is configuration, not a secret; the errors hold only the
	// path and the reason.
	return Read(file, v+"_FILE")
}

// Read returns the content of path without surrounding white space; what
// names the file in errors ("API key file", "TICKETBRIDGE_ZENDESK_TOKEN_FILE").
// It refuses an empty file, and a file others may read (see the package
// doc), with an error matching [ErrReadable].
func Read(path, what string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", what, err)
	}
	if err := Check(path, fi); err != nil {
		return "", fmt.Errorf("read %s %s: %w", what, path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return "", fmt.Errorf("read %s %s: %w for this user", what, path, fs.ErrPermission)
		}
		return "", fmt.Errorf("read %s: %w", what, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("read %s %s: the file is empty", what, path)
	}
	return v, nil
}

// Check says whether the file at path, described by fi, is kept well
// enough for a secret: nil, or an error matching [ErrWritable] or
// [ErrReadable] that says who may change or read it and how to mend it.
func Check(path string, fi fs.FileInfo) error {
	perm := fi.Mode().Perm()
	switch {
	case perm&0o002 != 0:
		return fmt.Errorf("%w: every user may change it (mode %v); run chmod 600 %s", ErrWritable, perm, path)
	case perm&0o020 != 0:
		return fmt.Errorf("%w: its group may change it (mode %v); run chmod 600 %s", ErrWritable, perm, path)
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if perm&0o004 != 0 {
		return fmt.Errorf("%w: every user may (mode %v); run chmod 600 %s", ErrReadable, perm, path)
	}
	if perm&0o040 == 0 {
		return nil
	}
	gid, ok := fileGroup(fi)
	if !ok {
		return fmt.Errorf("%w: its group may (mode %v); run chmod 600 %s", ErrReadable, perm, path)
	}
	others, err := groupOthers(gid, os.Getuid())
	if err != nil {
		return fmt.Errorf("%w: its group may (mode %v) and its members cannot be told (%v); run chmod 600 %s", ErrReadable, perm, err, path)
	}
	if len(others) > 0 {
		if len(others) > 5 {
			others = append(others[:5], "…")
		}
		return fmt.Errorf("%w: its group (gid %d) may, and holds %s (mode %v); run chmod 600 %s", ErrReadable, gid, strings.Join(others, ", "), perm, path)
	}
	return nil
}

// checkOwner refuses a file that belongs to a user other than root, the
// process's effective user and, for a process of root's, the service's
// user: its owner may change it, whatever its mode.
func checkOwner(path string, fi fs.FileInfo) error {
	owner, ok := fileOwner(fi)
	euid := os.Geteuid()
	if !ok || owner == 0 || owner == euid {
		return nil
	}
	name := ""
	if u, err := userName(owner); err == nil {
		name = u
	}
	if euid == 0 && name == ServiceUser {
		// Root reads what the service reads (check, once --dry-run);
		// the service may own its secrets, as it owns the package's
		// /etc/ticketbridge/keys.
		return nil
	}
	who := fmt.Sprintf("uid %d", owner)
	if name != "" {
		who = fmt.Sprintf("%s (uid %d)", name, owner)
	}
	return fmt.Errorf("%w: it belongs to %s, who may change it; run chown root %s (or chown it to the user the daemon runs as)", ErrWritable, who, path)
}

// userName returns the name of the user uid.
func userName(uid int) (string, error) {
	name, _, err := passwd(-1, uid)
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", fmt.Errorf("no user of uid %d", uid)
	}
	return name, nil
}

// groupOthers returns the users other than uid and root who belong to the
// group gid: its listed members and the users whose primary group it is.
func groupOthers(gid, uid int) ([]string, error) {
	self, users, err := passwd(gid, uid)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(groupFile)
	if err != nil {
		return nil, fmt.Errorf("read the groups: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 4 || fields[2] != strconv.Itoa(gid) {
			continue
		}
		for _, m := range strings.Split(fields[3], ",") {
			if m = strings.TrimSpace(m); m != "" && m != self && m != "root" {
				users = append(users, m)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the groups: %w", err)
	}
	slices.Sort(users)
	return slices.Compact(users), nil
}

// passwd returns the name of uid and the users other than uid and root
// whose primary group is gid.
func passwd(gid, uid int) (self string, users []string, err error) {
	f, err := os.Open(passwdFile)
	if err != nil {
		return "", nil, fmt.Errorf("read the users: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 4 {
			continue
		}
		switch {
		case fields[2] == strconv.Itoa(uid):
			self = fields[0]
		case fields[2] == "0":
		case fields[3] == strconv.Itoa(gid):
			users = append(users, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		return "", nil, fmt.Errorf("read the users: %w", err)
	}
	return self, users, nil
}
