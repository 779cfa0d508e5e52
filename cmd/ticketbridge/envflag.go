package main

import "github.com/ticketbridge/ticketbridge/internal/config"

// envFlag is the --env-file flag shared by the commands that read the
// configuration.
type envFlag struct {
	path string
	// layout is where the packaged service keeps its files.
	layout config.Layout
}

// register adds the flag to fs; layout is the packaged service's.
func (f *envFlag) register(fs interface {
	StringVar(p *string, name, value, usage string)
}, layout config.Layout) {
	f.layout = layout
	fs.StringVar(&f.path, "env-file", "", "read TICKETBRIDGE_* variables from `FILE` (KEY=VALUE lines, as config.example.env); the process environment wins. Default on an installed system: "+config.ServiceEnvFile)
}

// source finds the configuration as every command does (see findSource):
// the process environment over the file named by --env-file, or the
// packaged env file of f's layout.
func (f *envFlag) source() (config.Source, error) { return config.FindSource(f.path, f.layout) }
