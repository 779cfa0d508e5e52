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

// accounts points the account databases at files of the test: the
// current user, alice and bob in the group of the test's files, and the
// group's listed members.
func accounts(t *testing.T, primary []string, members string) {
	t.Helper()
	dir := t.TempDir()
	uid, gid := os.Getuid(), os.Getgid()
	pw := fmt.Sprintf("root:x:0:0::/root:/bin/sh\nservice:x:%d:%d::/:/bin/false\n", uid, gid+1)
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
