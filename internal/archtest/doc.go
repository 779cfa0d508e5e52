// Package archtest holds the module's architecture tests: which package may
// import which, as the Layout section of the design says. Dependencies point
// one way, cmd -> internal -> sync -> (state, adapters, guestapi), and the
// tests fail when a package gains an import the rules forbid, directly or
// through the packages it imports.
//
// The rules and the allow-list of known exceptions are in rules_test.go:
// each rule says which packages it covers, what they must not depend on and
// why; each exception names the step that removes it. An exception that is
// no longer needed fails the test too, so the list only shrinks. The
// imports are read with `go list`, the identifiers with go/parser.
//
// TestMarkdownLinks holds the repository's Markdown files to the same
// kind of rule: every relative link, and every #anchor into a heading,
// leads somewhere (markdown_test.go; the small Markdown reader it needs is
// in markdown_parse_test.go).
//
// The package also keeps the doc comments true to the code: every doc
// link in them must name something that exists, so that a renamed or
// deleted identifier does not live on in the prose
// (TestDocLinksResolve, in doclinks_test.go, says what is checked).
//
// The package has no code of its own besides its tests, and nothing imports
// it.
package archtest
