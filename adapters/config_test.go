package adapters_test

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
)

var testBase = adapters.BaseURL{
	Var:         "X_URL",
	What:        "the helpdesk's address",
	Example:     "https://desk.example",
	Credentials: "put the key in X_KEY",
	APISuffix:   "/api/v2",
}

func TestBaseURLCheck(t *testing.T) {
	for raw, want := range map[string]string{
		" https://desk.example/ ":         "https://desk.example",
		"https://desk.example/api/v2/":    "https://desk.example",
		"https://desk.example/sub/api/v2": "https://desk.example/sub",
		"https://desk.example/api/v1":     "https://desk.example/api/v1",
		"http://127.0.0.1:8080/api/v2":    "http://127.0.0.1:8080",
		"http://localhost:8080":           "http://localhost:8080",
		"http://[::1]:8080/":              "http://[::1]:8080",
	} {
		a := adapters.ParseURL(raw)
		err := testBase.Check(a)
		if got := testBase.Base(a); err != nil || got != want {
			t.Errorf("Base(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for raw, want := range map[string]string{
		"":                              "X_URL is not set: give the helpdesk's address, e.g. https://desk.example",
		"https://desk.example/%zz":      "X_URL does not parse as a URL: want e.g. https://desk.example",
		"https://k:secret@desk.example": "X_URL carries credentials: put the key in X_KEY",
		"desk.example":                  `X_URL "desk.example" has no host: want e.g. https://desk.example`,
		"http://desk.example":           `X_URL "http://desk.example": plain http to a host that is not loopback would carry the credentials in clear: use https, or set TICKETBRIDGE_ALLOW_INSECURE_HTTP=true to accept it`,
		"ftp://desk.example":            `X_URL "ftp://desk.example": the scheme must be https (or http to a loopback address)`,
		"https://desk.example/?a=1":     `X_URL "https://desk.example/?a=xxxxx": remove the query or fragment`,
		"https://desk.example/#top":     `X_URL "https://desk.example/": remove the query or fragment`,
	} {
		a := adapters.ParseURL(raw)
		err := testBase.Check(a)
		if err == nil || err.Error() != want {
			t.Errorf("Check(%q) error %v; want %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Check(%q) error shows the password: %v", raw, err)
		}
		if s := fmt.Sprint(a); strings.Contains(s, "secret") {
			t.Errorf("%q prints as %q, with the password", raw, s)
		}
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true,
		"desk.example": false, "10.0.0.1": false, "": false, "localhost.example": false,
	} {
		if got := adapters.Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v", host, got)
		}
	}
}

func TestParseDepartments(t *testing.T) {
	id := func(item, text string) (int64, error) {
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("X_GROUPS item %q: %q is not a group id", item, text)
		}
		return n, nil
	}
	got, err := adapters.ParseDepartments("X_GROUPS", "department=groupid", " housekeeping = 12 , maintenance=7,,", id)
	if want := map[string]int64{"housekeeping": 12, "maintenance": 7}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseDepartments = %v, %v; want %v", got, err, want)
	}
	if got, err := adapters.ParseDepartments("X_GROUPS", "department=groupid", " ", id); err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty: %v, %v; want an empty map", got, err)
	}
	for s, want := range map[string]string{
		"housekeeping":     `X_GROUPS item "housekeeping": want department=groupid`,
		"=12":              `X_GROUPS item "=12": want department=groupid`,
		"housekeeping=abc": `X_GROUPS item "housekeeping=abc": "abc" is not a group id`,
		"housekeeping=":    `X_GROUPS item "housekeeping=": "" is not a group id`,
		"a=1, b=2, a=3":    `X_GROUPS names department "a" twice`,
	} {
		if _, err := adapters.ParseDepartments("X_GROUPS", "department=groupid", s, id); err == nil || err.Error() != want {
			t.Errorf("ParseDepartments(%q) error %v; want %q", s, err, want)
		}
	}
}
