package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReadUnitOfThePackage reads the unit the package installs: check
// takes the service's user, credentials and sandbox from it, not from a
// second copy.
func TestReadUnitOfThePackage(t *testing.T) {
	dir := t.TempDir()
	unit := filepath.Join(dir, "lib", "ticketbridge.service")
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "ticketbridge.service"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(unit), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unit, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l := Layout{Unit: unit, UnitDir: filepath.Join(dir, "etc")}
	u, err := ReadUnit(l.UnitFiles()...)
	if err != nil {
		t.Fatal(err)
	}
	if u.User != "ticketbridge" || u.Group != "ticketbridge" {
		t.Errorf("user %q group %q, want ticketbridge (DynamicUser=yes, the unit's name)", u.User, u.Group)
	}
	if u.Credentials["api-key"] != "/etc/ticketbridge/api-key" || u.Credentials["console-token"] != "/etc/ticketbridge/console-token" || !u.Defaults["console-token"] {
		t.Errorf("credentials %v, defaults %v", u.Credentials, u.Defaults)
	}
	if !slices.Equal(u.StateDirectory, []string{"ticketbridge"}) || !slices.Equal(u.ReadWritePaths, []string{"/srv/ticketbridge/helpdesk"}) {
		t.Errorf("state %v, read-write %v", u.StateDirectory, u.ReadWritePaths)
	}
	if why := u.ReadOnly("/srv/ticketbridge/helpdesk/seaside", "/var/lib/ticketbridge"); why != "" {
		t.Errorf("a hotel's folder below ReadWritePaths: %s", why)
	}
	if why := u.ReadOnly("/srv/hotels/seaside", "/var/lib/ticketbridge"); why == "" {
		t.Error("a folder outside ReadWritePaths is not read-only under ProtectSystem=strict")
	}
	if u.UMask != "0007" {
		t.Errorf("UMask %q, want 0007", u.UMask)
	}
	if u.Hidden("/home/ops/key") == "" || u.Hidden("/tmp/key") == "" || u.Hidden("/etc/ticketbridge/api-key") != "" {
		t.Error("ProtectHome= and PrivateTmp= are not judged")
	}

	// systemctl edit: a drop-in, an empty LoadCredential= clearing the
	// list (the README's many hotels), a path added.
	drop := filepath.Join(l.UnitDir, "ticketbridge.service.d", "override.conf")
	if err := os.MkdirAll(filepath.Dir(drop), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(drop, []byte("[Service]\nLoadCredential=\nReadWritePaths=-/srv/hotels\nPrivateTmp=no\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err = ReadUnit(l.UnitFiles()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Credentials) != 0 || u.ReadOnly("/srv/hotels/seaside", "/var/lib/ticketbridge") != "" || u.Hidden("/tmp/x") != "" {
		t.Errorf("the drop-in is not read: credentials %v, read-write %v, private tmp %v", u.Credentials, u.ReadWritePaths, u.PrivateTmp)
	}
}
