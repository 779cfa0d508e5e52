package config

// This file reads the systemd unit the package installs, so that `check`
// judges what the service may read and write with the unit's own user,
// credentials and sandbox instead of a second copy of them.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Unit is what the service's unit says about whom the daemon runs as and
// what it may reach: read from the installed unit file and its drop-ins
// (systemctl edit), later files winning and an empty list setting
// clearing the list, as systemd reads them.
type Unit struct {
	// Files are the files read, in order.
	Files []string
	// User and Group run the daemon: User= and Group=, or, with
	// DynamicUser=yes and no User=, the unit's name (systemd then uses the
	// static user of that name, which the package makes).
	User, Group string
	// SupplementaryGroups= of the unit.
	SupplementaryGroups []string
	// Credentials maps each LoadCredential= name to its source file;
	// Defaults holds the names SetCredential= gives a value when the
	// source cannot be read.
	Credentials map[string]string
	Defaults    map[string]bool
	// StateDirectory= names, below /var/lib.
	StateDirectory []string
	// ReadWritePaths= without their "-" (ignore if missing) prefix: with
	// ProtectSystem=strict everything else but the state directory is
	// read-only to the daemon.
	ReadWritePaths []string
	ProtectSystem  string
	// ProtectHome= (yes, read-only, tmpfs) and PrivateTmp= hide /home,
	// /root, /run/user, and /tmp, /var/tmp, from the daemon.
	ProtectHome string
	PrivateTmp  bool
	// UMask= as written (octal), "" when the unit sets none.
	UMask string
}

// UnitFiles returns the unit files systemd reads for l's unit, in order: the
// administrator's copy in l.UnitDir when there is one, else the packaged
// l.Unit; then every l.UnitDir/<unit>.d/*.conf drop-in, by name. Nil
// when l names no unit.
func (l Layout) UnitFiles() []string {
	if l.Unit == "" {
		return nil
	}
	base := filepath.Base(l.Unit)
	main := l.Unit
	if l.UnitDir != "" {
		if _, err := os.Stat(filepath.Join(l.UnitDir, base)); err == nil {
			main = filepath.Join(l.UnitDir, base)
		}
	}
	files := []string{main}
	if l.UnitDir != "" {
		drop, _ := filepath.Glob(filepath.Join(l.UnitDir, base+".d", "*.conf"))
		slices.Sort(drop)
		files = append(files, drop...)
	}
	return files
}

// ReadUnit reads the settings of the unit files' Service section, in
// order (see [Unit]). A file that cannot be read is an error.
func ReadUnit(files ...string) (Unit, error) {
	u := Unit{Files: files, Credentials: map[string]string{}, Defaults: map[string]bool{}}
	dynamic := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return u, fmt.Errorf("read unit: %w", err)
		}
		section := ""
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			if line[0] == '[' {
				section = line
				continue
			}
			key, val, ok := strings.Cut(line, "=")
			if !ok || section != "[Service]" {
				continue
			}
			key, val = strings.TrimSpace(key), strings.TrimSpace(val)
			switch key {
			case "User":
				u.User = val
			case "Group":
				u.Group = val
			case "DynamicUser":
				dynamic = isYes(val)
			case "SupplementaryGroups":
				u.SupplementaryGroups = appendList(u.SupplementaryGroups, val)
			case "LoadCredential":
				if val == "" {
					clear(u.Credentials)
					continue
				}
				name, src, _ := strings.Cut(val, ":")
				u.Credentials[name] = src
			case "SetCredential":
				if val == "" {
					clear(u.Defaults)
					continue
				}
				name, _, _ := strings.Cut(val, ":")
				u.Defaults[name] = true
			case "StateDirectory":
				u.StateDirectory = appendList(u.StateDirectory, val)
			case "ReadWritePaths":
				u.ReadWritePaths = appendList(u.ReadWritePaths, val)
			case "ProtectSystem":
				u.ProtectSystem = val
			case "ProtectHome":
				u.ProtectHome = val
			case "PrivateTmp":
				u.PrivateTmp = isYes(val)
			case "UMask":
				u.UMask = val
			}
		}
		if err := sc.Err(); err != nil {
			return u, fmt.Errorf("read unit %s: %w", f, err)
		}
	}
	for i, p := range u.ReadWritePaths {
		u.ReadWritePaths[i] = strings.TrimLeft(p, "-+")
	}
	if u.User == "" && dynamic && len(files) > 0 {
		u.User = strings.TrimSuffix(filepath.Base(files[0]), ".service")
	}
	if u.Group == "" {
		u.Group = u.User
	}
	return u, nil
}

// appendList adds the space-separated items of val to list; an empty val
// clears it, as systemd does.
func appendList(list []string, val string) []string {
	if val == "" {
		return nil
	}
	return append(list, strings.Fields(val)...)
}

func isYes(v string) bool {
	switch strings.ToLower(v) {
	case "1", "yes", "true", "on":
		return true
	}
	return false
}

// Hidden says why the unit's sandbox hides path from the daemon, "" when
// it does not.
func (u Unit) Hidden(path string) string {
	if ph := strings.ToLower(u.ProtectHome); ph != "" && !isNo(ph) {
		for _, d := range []string{"/home", "/root", "/run/user"} {
			if Within(path, d) {
				return fmt.Sprintf("the unit's ProtectHome=%s hides %s from the service", u.ProtectHome, d)
			}
		}
	}
	if u.PrivateTmp {
		for _, d := range []string{"/tmp", "/var/tmp"} {
			if Within(path, d) {
				return fmt.Sprintf("the unit's PrivateTmp=yes gives the service a %s of its own", d)
			}
		}
	}
	return ""
}

// ReadOnly says why the unit's sandbox keeps the daemon from writing
// below dir, "" when it does not; stateDir is the unit's state directory,
// which it may write.
func (u Unit) ReadOnly(dir, stateDir string) string {
	if strings.ToLower(u.ProtectSystem) != "strict" || Within(dir, stateDir) {
		return ""
	}
	for _, p := range u.ReadWritePaths {
		if Within(dir, p) {
			return ""
		}
	}
	return fmt.Sprintf("the unit's ProtectSystem=strict keeps %s read-only to the service (ReadWritePaths= names what it may write: %s)", dir, strings.Join(u.ReadWritePaths, " "))
}

func isNo(v string) bool {
	switch strings.ToLower(v) {
	case "0", "no", "false", "off":
		return true
	}
	return false
}

// Within reports whether path is dir or below it.
func Within(path, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && (filepath.IsLocal(rel) || rel == ".")
}
