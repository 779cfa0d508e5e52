package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

// Folder is a helpdesk folder the daemon writes: the variable naming it
// and its absolute path.
type Folder struct{ Var, Path string }

// HelpdeskFolders lists the folders the adapter of cfg keeps on disk (the
// files helpdesk's folder, the webhook's delivery records), absolute;
// none for a helpdesk reached over the network.
func HelpdeskFolders(ctx context.Context, cfg Daemon, env envconfig.Lookuper) []Folder {
	switch cfg.Adapter {
	case files.Name:
		if fc, err := files.LoadConfig(ctx, env); err == nil {
			return []Folder{{"TICKETBRIDGE_FILES_DIR", abs(fc.Dir)}}
		}
	case webhook.Name:
		if wc, err := webhook.LoadConfig(ctx, env, cfg.StateDir()); err == nil && wc.Dir != "" {
			return []Folder{{"TICKETBRIDGE_WEBHOOK_DIR", abs(wc.Dir)}}
		}
	}
	return nil
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// FolderMove is the content of one helpdesk folder to move: the entries
// of From to put in To.
type FolderMove struct {
	From, To string
	Entries  []string
}

// FolderMoves finds what of the helpdesk folders of main, the
// configuration of one hotel (with env), moves into hotel h's when h
// adopts that hotel (`hotels adopt`): every entry but those holding a
// folder of a hotel of all (h's among them). An entry that would
// overwrite one in h's folder is an error, and so is a folder of h that
// is a link.
func FolderMoves(ctx context.Context, main Daemon, env envconfig.Lookuper, h Hotel, all []Hotel) ([]FolderMove, error) {
	olds := HelpdeskFolders(ctx, main, env)
	news := HelpdeskFolders(ctx, h.Daemon, h.Env)
	var keep []string
	for _, o := range all {
		for _, f := range HelpdeskFolders(ctx, o.Daemon, o.Env) {
			keep = append(keep, f.Path)
		}
	}
	var out []FolderMove
	for _, o := range olds {
		j := slices.IndexFunc(news, func(n Folder) bool { return n.Var == o.Var })
		if j < 0 || news[j].Path == o.Path {
			continue
		}
		old, err := safefile.OpenDir(o.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		des, err := old.ReadDir()
		old.Close()
		if err != nil {
			return nil, err
		}
		m := FolderMove{From: o.Path, To: news[j].Path}
		// The new folder often lies in the staff's folder (2770), where
		// anyone of the group could have made it a link: it is opened
		// as adopt will move into it, following no such link.
		to, err := safefile.OpenDir(m.To)
		switch {
		case errors.Is(err, safefile.ErrLink):
			return nil, fmt.Errorf("%w: remove it and run adopt again (adopt makes the folder), or name another folder in %s", err, o.Var)
		case errors.Is(err, fs.ErrNotExist):
			to = nil
		case err != nil:
			return nil, err
		}
		for _, de := range des {
			p := filepath.Join(o.Path, de.Name())
			if slices.ContainsFunc(keep, func(k string) bool { return Within(k, p) }) {
				continue
			}
			if to != nil {
				if there, err := to.Exists(de.Name()); err != nil || there {
					to.Close()
					if err != nil {
						return nil, err
					}
					return nil, fmt.Errorf("%s holds %s already: adopt would overwrite it; empty %s or name another folder in %s", m.To, de.Name(), m.To, o.Var)
				}
			}
			m.Entries = append(m.Entries, de.Name())
		}
		if to != nil {
			to.Close()
		}
		if len(m.Entries) > 0 {
			out = append(out, m)
		}
	}
	return out, nil
}
