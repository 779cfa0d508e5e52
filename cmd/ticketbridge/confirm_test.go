package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/check"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/state/statetest"
)

// tree returns the files below dir and their contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := os.ReadFile(p)
		files[p] = string(body)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameTree reports the first difference between two trees, "" for none.
func sameTree(a, b map[string]string) string {
	for p, body := range a {
		if other, ok := b[p]; !ok || other != body {
			return p
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			return p
		}
	}
	return ""
}

// TestCopiedStateIsHeldUntilConfirmed: a hotel's state and configuration
// copied and started against another helpdesk folder write nothing to
// either side, and check, status and the cycle's error say what changed
// and the command that confirms it; confirm-move wants what changed named
// with its new value, and then the hotel syncs. On PostgreSQL the copy is
// the same database (as a restored dump is), and confirm-move holds the
// hotel's lease.
func TestCopiedStateIsHeldUntilConfirmed(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var dbURL string
			if backend == "postgres" {
				dbURL = statetest.PostgresURL(t) // before newBridge clears the environment
			}
			b := newBridge(t)
			if dbURL != "" {
				b.vars["TICKETBRIDGE_STATE"] = dbURL
			}
			a := b.ticket("towels")
			if out, errOut, code := b.cmd("once"); code != 0 {
				t.Fatalf("once: exit %d\n%s\n%s", code, out, errOut)
			}

			// The copy: the same state, another helpdesk folder (a copy
			// of the first); work for either side waiting (a guest's
			// message, a reply in the outbox of the copy's helpdesk).
			old := b.vars["TICKETBRIDGE_FILES_DIR"]
			if dbURL == "" {
				copied := filepath.Join(t.TempDir(), "state.db")
				st, err := state.Open(t.Context(), b.vars["TICKETBRIDGE_STATE"], state.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := st.BackupFile(t.Context(), copied); err != nil {
					t.Fatal(err)
				}
				st.Close()
				b.vars["TICKETBRIDGE_STATE"] = copied
			}
			moved := filepath.Join(t.TempDir(), "helpdesk")
			b.vars["TICKETBRIDGE_FILES_DIR"] = moved
			if _, err := b.ts.Server.AddMessage(a, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: "and a pillow"}); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(moved, os.DirFS(old)); err != nil {
				t.Fatal(err)
			}
			b.drop("reply.txt", "ticket: "+b.folder(a)+"\nkind: reply\nauthor: Maria\n\nOn their way.\n")
			posts, oldTree, movedTree := b.posts(), tree(t, old), tree(t, moved)

			out, errOut, code := b.cmd("once")
			if code != 1 {
				t.Fatalf("once against another helpdesk: exit %d, want 1\n%s\n%s", code, out, errOut)
			}
			command := "ticketbridge confirm-move --helpdesk " + moved
			mustContain(t, "once's error", errOut, "held: the state was synced with another API or helpdesk", "helpdesk files "+old+" → files "+moved, command, "fix:")
			if n := b.posts() - posts; n != 0 {
				t.Errorf("the held cycle posted %d times upstream", n)
			}
			if p := sameTree(movedTree, tree(t, moved)); p != "" {
				t.Errorf("the held cycle changed %s in the other helpdesk", p)
			}
			if p := sameTree(oldTree, tree(t, old)); p != "" {
				t.Errorf("the held cycle changed %s in the first helpdesk", p)
			}

			out, _, _ = b.cmd("status")
			mustContain(t, "status", out, "held:", command)
			out, code, v := runChecks(t, b.envFile(), check.Options{Registry: bridge.Adapters()})
			if code == 0 || v["copy"] != check.Fail {
				t.Errorf("check: exit %d, copy %q, want a failure:\n%s", code, v["copy"], out)
			}
			mustContain(t, "check", out, command, "TICKETBRIDGE_ALLOW_MOVE")

			// Naming nothing, what did not change, or another place
			// confirms nothing.
			for _, args := range [][]string{{}, {"--api", b.ts.URL}, {"--helpdesk", old}} {
				if out, errOut, code := b.cmd("confirm-move", args...); code == 0 {
					t.Errorf("confirm-move %q: exit 0\n%s\n%s", args, out, errOut)
				}
			}
			if _, errOut, code := b.cmd("once"); code != 1 || !strings.Contains(errOut, "held:") {
				t.Fatalf("once after confirmations refused: exit %d\n%s", code, errOut)
			}

			out, errOut, code = b.cmd("confirm-move", "--helpdesk", moved)
			if code != 0 {
				t.Fatalf("confirm-move: exit %d\n%s\n%s", code, out, errOut)
			}
			mustContain(t, "confirm-move", out, "confirmed (helpdesk)")
			out, errOut, code = b.cmd("once")
			if code != 0 {
				t.Fatalf("once after confirm-move: exit %d\n%s\n%s", code, out, errOut)
			}
			if b.posts() == posts {
				t.Error("the reply was not sent upstream after the move was confirmed")
			}
			out, _, v = runChecks(t, b.envFile(), check.Options{Registry: bridge.Adapters()})
			if v["copy"] != check.Pass {
				t.Errorf("check after confirm-move: copy %q:\n%s", v["copy"], out)
			}
			if strings.Contains(out, b.ts.Keys.TicketsWrite) {
				t.Error("check shows the API key")
			}
		})
	}
}

// TestAllowMoveTakesTheMove: TICKETBRIDGE_ALLOW_MOVE lets a start take a
// moved helpdesk without confirm-move.
func TestAllowMoveTakesTheMove(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: exit %d\n%s\n%s", code, out, errOut)
	}
	b.vars["TICKETBRIDGE_FILES_DIR"] = filepath.Join(t.TempDir(), "helpdesk")
	b.vars["TICKETBRIDGE_ALLOW_MOVE"] = "helpdesk"
	out, errOut, code := b.cmd("once")
	if code != 0 {
		t.Fatalf("once with TICKETBRIDGE_ALLOW_MOVE: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, "once's log", errOut, "as TICKETBRIDGE_ALLOW_MOVE allows")
	delete(b.vars, "TICKETBRIDGE_ALLOW_MOVE")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once after the move: exit %d\n%s\n%s", code, out, errOut)
	}
}
