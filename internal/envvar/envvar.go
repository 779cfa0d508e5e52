// Package envvar turns an error of go-envconfig, which names the struct
// field at fault ("Timeout: time: invalid duration ..."), into one that
// names the variable an operator sets, and its value when that cannot be
// a secret. Every package that reads an env-tagged configuration (the
// engine, each adapter) explains its errors through it, so that they all
// read the same way.
//
// [Load] reads a configuration with go-envconfig and explains its errors,
// for the packages whose reading needs nothing more. The package owns no
// configuration and reads no variable of its own; it imports go-envconfig
// and the standard library only.
package envvar

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/sethvargo/go-envconfig"
)

// Load fills target, a pointer to an env-tagged struct, from the
// variables prefix+NAME ("" for none) that env holds (nil: none), and its
// other fields from the tags' defaults. Its error reads "read <what>: "
// and names the variable at fault (see [Explain]); what names the
// configuration, e.g. "sync configuration".
func Load(ctx context.Context, env envconfig.Lookuper, prefix, what string, target any) error {
	if env == nil {
		env = envconfig.MapLookuper(nil)
	}
	l := env
	if prefix != "" {
		l = envconfig.PrefixLookuper(prefix, env)
	}
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: target, Lookuper: l}); err != nil {
		return fmt.Errorf("read %s: %w", what, Explain(err, target, env, prefix))
	}
	return nil
}

// Explain rewrites err, returned by go-envconfig for target (a struct or
// a pointer to one) read through env under prefix ("" for none), so that it
// names the variable and its value: `TICKETBRIDGE_CONCURRENCY="four":
// strconv.ParseInt: ...`. Fields of nested structs are followed, with their
// prefix= option. The value of a string field is never shown: a string
// parses whatever it holds, and it may be a secret. The error of a field's
// decoder (go-envconfig's Decoder) that already names the variable is
// returned as it is: the decoder said what is wrong, and it quotes only
// what may be printed. An error that names no field of target is returned
// as it is; a nil err gives nil.
func Explain(err error, target any, env envconfig.Lookuper, prefix string) error {
	if err == nil {
		return nil
	}
	t := reflect.TypeOf(target)
	msg, inner := err.Error(), err
	for {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return err
		}
		f, ok := fieldOf(t, msg)
		next := errors.Unwrap(inner)
		if !ok || next == nil {
			return err
		}
		tag, opts, _ := strings.Cut(f.Tag.Get("env"), ",")
		msg, inner = strings.TrimPrefix(msg, f.Name+": "), next
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && tag == "" {
			prefix += nestedPrefix(opts)
			t = ft
			continue
		}
		key := prefix + tag
		if strings.HasPrefix(inner.Error(), key) {
			return inner
		}
		if ft.Kind() == reflect.String {
			return fmt.Errorf("%s: %w", key, inner)
		}
		var v string
		if env != nil {
			v, _ = env.Lookup(key)
		}
		return fmt.Errorf("%s=%q: %w", key, v, inner)
	}
}

// fieldOf returns the field of t whose name starts msg.
func fieldOf(t reflect.Type, msg string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); strings.HasPrefix(msg, f.Name+": ") {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// nestedPrefix returns the prefix= option of a nested struct's env tag.
func nestedPrefix(opts string) string {
	for _, o := range strings.Split(opts, ",") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(o), "prefix="); ok {
			return p
		}
	}
	return ""
}
