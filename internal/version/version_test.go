package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const pkgPath = "github.com/ticketbridge/ticketbridge/internal/version"

// TestLinkerSetsVersion builds a program with -ldflags -X, as the release
// scripts do, and checks that Get returns what the linker was told.
func TestLinkerSetsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "printversion")
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X "+pkgPath+".version=9.8.7 -X "+pkgPath+".commit=abc1234",
		"./testdata/printversion")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if got, want := strings.TrimSpace(string(out)), "9.8.7 abc1234"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}

// TestReleaseScriptsSetVersion checks that the scripts that build releases
// name this package's variables in -X: a wrong name links silently and the
// release then reports "devel".
func TestReleaseScriptsSetVersion(t *testing.T) {
	xflag := regexp.MustCompile(`-X ([^=\s]+)=`)
	for _, script := range []string{"../../deploy/package.sh", "../../deploy/container/Dockerfile"} {
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range xflag.FindAllStringSubmatch(string(b), -1) {
			names = append(names, m[1])
		}
		slices.Sort(names)
		want := []string{pkgPath + ".commit", pkgPath + ".version"}
		if !slices.Equal(names, want) {
			t.Errorf("%s sets %q with -X, want %q", script, names, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	v, c, g := Get()
	if v == "" || c == "" || !strings.HasPrefix(g, "go") {
		t.Errorf("Get() = %q, %q, %q: want no empty field and a Go version", v, c, g)
	}
}
