package replytext

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFixtures runs every body in testdata (a .txt is a text/plain part, a
// .html a text/html one) against the .want file of the same name.
func TestFixtures(t *testing.T) {
	bodies, err := filepath.Glob("testdata/*.*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range bodies {
		ext := filepath.Ext(path)
		if ext != ".txt" && ext != ".html" {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(path), ext)
		t.Run(filepath.Base(path), func(t *testing.T) {
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", name+".want"))
			if err != nil {
				t.Fatalf("no expected text: %v", err)
			}
			got := Extract(string(body), ext == ".html")
			if got != strings.TrimSuffix(string(want), "\n") {
				t.Errorf("Extract(%s):\n%s\n--- want:\n%s", path, got, want)
			}
		})
	}
	if n < 12 {
		t.Errorf("found %d fixtures in testdata; want the forms of every client", n)
	}
}

func TestExtractPlain(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"nothing to strip", "Thanks!\nSee you.", "Thanks!\nSee you."},
		{"CRLF and trailing space", "a  \r\nb\r\n\r\n\r\n", "a\nb"},
		{"leading blank lines", "\n\n#note\nx", "#note\nx"},
		{"blank lines fold", "a\n\n\n\nb", "a\n\nb"},
		{"attribution with nothing quoted after ends the text",
			"Yes.\n\nOn Wed, 2 Dec 2026, Anna wrote:\nCan I?", "Yes."},
		{"attribution in German", "Ja.\n\nAm 02.12.2026 um 09:14 schrieb Anna Gruber <a@guest.example>:\n> Geht das?", "Ja."},
		{"attribution in German, wrapped", "Ja.\n\nAm Mi., 2. Dez. 2026 um 09:14 Uhr schrieb Anna Gruber <\nanna.gruber@guest.example>:\n\n> Geht das?", "Ja."},
		{"attribution in French", "Oui.\n\nLe mer. 2 déc. 2026 à 09:14, Anna <a@guest.example> a écrit :\n> Possible ?", "Oui."},
		{"a sentence with wrote: is kept", "I wrote: see you at 8.\nAlex", "I wrote: see you at 8.\nAlex"},
		{"a line starting On is kept", "On Monday the pool is closed.\nAlex", "On Monday the pool is closed.\nAlex"},
		{"only a quote", "On Wed, Anna wrote:\n> hi", ""},
		{"signature without its space", "Done.\n--\nAlex", "Done."},
		{"a dash line in the text is kept", "Price list\n-\nsee desk", "Price list\n-\nsee desk"},
		{"first line kept even if it looks like a delimiter", "--\nx", "--\nx"},
		{"mobile signatures", "Done.\n\nSent from my Galaxy\n", "Done."},
		{"mobile signature in German", "Erledigt.\n\nVon meinem iPhone gesendet", "Erledigt."},
		{"mobile signature mid-text is kept", "Sent from my iPhone, sorry for typos.\nmore", "Sent from my iPhone, sorry for typos.\nmore"},
		{"From line alone is kept", "From: the lobby\nWe saw it.", "From: the lobby\nWe saw it."},
		{"German Outlook header", "Erledigt.\n\nVon: Anna Gruber <a@guest.example>\nGesendet: Mittwoch, 2. Dezember 2026 09:14\nAn: Rezeption\nBetreff: Handtücher\n\nBitte Handtücher.", "Erledigt."},
		{"marker line kept", "#status done\n\nOn Wed, Anna wrote:\n> fix it", "#status done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Extract(tc.in, false); got != tc.want {
				t.Errorf("Extract(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestExtractHTML(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"fragment", "<div>Done.</div>", "Done."},
		{"head says nothing", "<html><head><title>Re: x</title></head><body><p>Done.</p></body></html>", "Done."},
		{"an agent's own blockquote stays", "<p>As the rules say:</p><blockquote>No pets.</blockquote>", "As the rules say:\nNo pets."},
		{"interleaved answer after a cite quote stays",
			"<blockquote type=\"cite\">Towels?</blockquote><div>Yes.</div><blockquote type=\"cite\">Pool?</blockquote><div>7 am.</div>", "Yes.\n7 am."},
		{"Outlook for Mac", "<div>Ok.</div><hr><div id=\"x_divRplyFwdMsg\"><b>From:</b> A</div><div>old</div>", "Ok."},
		{"Outlook border div without a header is kept",
			"<div>Ok.</div><div style=\"border-top:solid #E1E1E1 1.0pt\">Room 214</div>", "Ok.\nRoom 214"},
		{"unmarked attribution", "<div>Ok.</div><div>On Wed, 2 Dec 2026, Anna wrote:</div><div>old</div>", "Ok."},
		{"only quotes", "<blockquote type=\"cite\">hi</blockquote>", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Extract(tc.in, true); got != tc.want {
				t.Errorf("Extract(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzExtract checks that no body makes Extract panic, and that what it
// returns has no carriage return and no trailing blank line.
func FuzzExtract(f *testing.F) {
	f.Add("a\n> b\n-- \nc", false)
	f.Add("<div>a</div><blockquote type=cite>b</blockquote><hr><div id=divRplyFwdMsg>x</div>", true)
	f.Fuzz(func(t *testing.T, body string, isHTML bool) {
		got := Extract(body, isHTML)
		if strings.Contains(got, "\r") || strings.HasSuffix(got, "\n") || strings.HasPrefix(got, "\n") {
			t.Errorf("Extract(%q, %v) = %q", body, isHTML, got)
		}
	})
}
