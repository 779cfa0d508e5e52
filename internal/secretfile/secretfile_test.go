//go:build unix

package secretfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secret = "rta_MARKER-secretfile-0123456789abcdef"

// serviceUID is the uid of ServiceUser in the test's account files.
const serviceUID = 64123

// accounts points the account databases at files of the test: the
// current user, the service's user (serviceUID), the users whose primary
// group is the group of the test's files, and its listed members.
func accounts(t *testing.T, primary []string, members string) {
	t.Helper()
	dir := t.TempDir()
	uid, gid := os.Getuid(), os.Getgid()
	pw := fmt.Sprintf("root:x:0:0::/root:/bin/sh\nservice:x:%d:%d::/:/bin/false\n%s:x:%d:%d::/:/bin/false\n", uid, gid+1, ServiceUser, serviceUID, gid+2)
	for i, u := range primary {
		pw += fmt.Sprintf("%s:x:%d:%d::/:/bin/false\n", u, uid+1000+i, gid)
	}
	gr := fmt.Sprintf("root:x:0:\nother:x:%d:alice\nshared:x:%d:%s\n", gid+7, gid, members)
	for name, body := range map[string]string{"passwd": pw, "group": gr} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old1, old2 := passwdFile, groupFile
	passwdFile, groupFile = filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	t.Cleanup(func() { passwdFile, groupFile = old1, old2 })
}

func write(t *testing.T, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte("  "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     os.FileMode
		primary  []string
		members  string
		wantErr  string // "" means the secret is read
		readable bool
	}{
		{name: "owner only", mode: 0o600},
		{name: "owner only, group with staff", mode: 0o400, members: "alice,bob"},
		{name: "every user", mode: 0o604, wantErr: "every user may", readable: true},
		{name: "group of staff", mode: 0o640, members: "alice,bob,root,service", wantErr: "holds alice, bob", readable: true},
		{name: "group a user's primary", mode: 0o640, primary: []string{"carol"}, wantErr: "holds carol", readable: true},
		{name: "group of the service alone", mode: 0o440, members: "service,root"},
		{name: "group of nobody listed", mode: 0o640},
	} {
		t.Run(tc.name, func(t *testing.T) {
			accounts(t, tc.primary, tc.members)
			p := write(t, tc.mode)
			got, err := Read(p, "API key file")
			if tc.wantErr == "" {
				if err != nil || got != secret {
					t.Fatalf("Read: %q, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "chmod 600 "+p) {
				t.Fatalf("Read: %v; want an error with %q and the fix", err, tc.wantErr)
			}
			if errors.Is(err, ErrReadable) != tc.readable {
				t.Fatalf("errors.Is(err, ErrReadable) = %v", !tc.readable)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestReadFailsClosedWithoutAccounts(t *testing.T) {
	old := groupFile
	groupFile = filepath.Join(t.TempDir(), "missing")
	t.Cleanup(func() { groupFile = old })
	if _, err := Read(write(t, 0o640), "API key file"); !errors.Is(err, ErrReadable) {
		t.Fatalf("a group-readable file whose group cannot be told: %v", err)
	}
}

func TestReadEmptyAndMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(p, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p, "console token file"); err == nil || !strings.Contains(err.Error(), "the file is empty") {
		t.Fatalf("empty file: %v", err)
	}
	if _, err := Read(p+".nope", "console token file"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestReadRefusesWhatOthersMayWrite: a secret anyone but this process's
// user, root or the service may write is refused, with the fix: one may
// replace it with a value of theirs (a console token they then know, a
// helpdesk token of theirs). The group's members do not matter: a group
// that may write is refused.
func TestReadRefusesWhatOthersMayWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    os.FileMode
		wantErr string
	}{
		{name: "group may write", mode: 0o620, wantErr: "its group may change it (mode -rw--w----); run chmod 600 "},
		{name: "group of the service alone may write", mode: 0o660, wantErr: "its group may change it"},
		{name: "every user may write", mode: 0o602, wantErr: "every user may change it (mode -rw-----w-); run chmod 600 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			accounts(t, nil, "service")
			p := write(t, tc.mode)
			_, err := Read(p, "console token file")
			if !errors.Is(err, ErrWritable) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Read: %v; want ErrWritable with %q and the file", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}

	t.Run("owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("giving a file to another user needs root (chown); the CI runs the tests as root")
		}
		accounts(t, nil, "")
		p := write(t, 0o600)
		if err := os.Chown(p, 65534, -1); err != nil {
			t.Fatal(err)
		}
		_, err := Read(p, "console token file")
		if !errors.Is(err, ErrWritable) || !strings.Contains(err.Error(), "uid 65534") || !strings.Contains(err.Error(), "chown root "+p) {
			t.Fatalf("Read: %v; want ErrWritable naming the owner and the fix", err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error shows the secret: %v", err)
		}
	})

	t.Run("owned by the service, read by root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("giving a file to another user needs root (chown); the CI runs the tests as root")
		}
		// Root reads what the service reads (check, once --dry-run): the
		// service's user may own its secrets, as the package's
		// /etc/ticketbridge/keys holds them.
		accounts(t, nil, "")
		p := write(t, 0o600)
		if err := os.Chown(p, serviceUID, -1); err != nil {
			t.Fatal(err)
		}
		if got, err := Read(p, "API key file"); err != nil || got != secret {
			t.Fatalf("Read: %q, %v", got, err)
		}
	})
}
