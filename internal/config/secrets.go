package config

// This file is what a hotel runs with besides its variables: the secret
// files it reads (the API key, the helpdesk's token or password, the
// webhook secret), so that a reload restarts exactly the hotels whose
// secrets changed.

import (
	"context"
	"crypto/sha256"
	"maps"
	"slices"
	"strings"
	gosync "sync"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/internal/secretfile"
)

// SecretFiles holds, for each secret file a hotel reads, by the variable
// or credential that names it, a digest of its path and of what it holds
// (or of why it cannot be read). It is compared in memory only: it is
// never printed.
type SecretFiles map[string][sha256.Size]byte

// ReadSecretFiles reads the secret files of a hotel whose variables env
// looks up and whose adapter is adapter: the API key's
// (TICKETBRIDGE_API_KEY_FILE, or the credential api-key), the adapter's
// TICKETBRIDGE_<ADAPTER>_*_FILE, and the webhook adapter's credential
// webhook-secret. A secret given as a value is not a file and is left
// out. The console token is the process's, not a hotel's.
func ReadSecretFiles(env envconfig.Lookuper, adapter string) SecretFiles {
	out := SecretFiles{}
	add := func(name, path string) {
		if path == "" {
			return
		}
		h := sha256.New()
		h.Write([]byte(path + "\x00"))
		if v, err := secretfile.Read(path, name); err != nil {
			h.Write([]byte("unread\x00" + err.Error()))
		} else {
			h.Write([]byte("read\x00" + v))
		}
		out[name] = [sha256.Size]byte(h.Sum(nil))
	}
	set := func(k string) string {
		v, _ := env.Lookup(k)
		return strings.TrimSpace(v)
	}
	if set("TICKETBRIDGE_API_KEY") == "" {
		if p := set("TICKETBRIDGE_API_KEY_FILE"); p != "" {
			add("TICKETBRIDGE_API_KEY_FILE", p)
		} else {
			add("$CREDENTIALS_DIRECTORY/api-key", credentialFile(env, "api-key"))
		}
	}
	prefix := EnvPrefix + strings.ToUpper(adapter) + "_"
	for _, k := range fileVariables() {
		if strings.HasPrefix(k, prefix) {
			add(k, set(k))
		}
	}
	if adapter == webhook.Name && set("TICKETBRIDGE_WEBHOOK_SECRET") == "" && set("TICKETBRIDGE_WEBHOOK_SECRET_FILE") == "" {
		add("$CREDENTIALS_DIRECTORY/webhook-secret", credentialFile(env, "webhook-secret"))
	}
	return out
}

// fileVariables returns the TICKETBRIDGE_*_FILE variables, each naming a
// secret file.
var fileVariables = gosync.OnceValue(func() []string {
	var out []string
	for _, k := range KnownVariables(context.Background()) {
		if strings.HasSuffix(k, "_FILE") {
			out = append(out, k)
		}
	}
	return out
})

// Changed returns, sorted, the names of the secret files that differ
// between s and now: named by one and not the other, or holding another
// path or content.
func (s SecretFiles) Changed(now SecretFiles) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if old, ok := s[k]; !ok || old != now[k] {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if _, ok := now[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
