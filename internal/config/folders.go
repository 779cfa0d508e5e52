package config

import (
	"context"
	"path/filepath"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
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
