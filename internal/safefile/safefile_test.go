package safefile_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

const secret = "sk_live_Zq7SECRETKEYxx"

func TestJSONErrorQuotesNothing(t *testing.T) {
	var v struct {
		N int `json:"n"`
	}
	for _, data := range []string{secret, "{\n\"n\": " + "123456789012345678901234567890}", `{"n": "` + secret + `"}`, `{"` + secret + `": 1}`, `{"n": 1`} {
		dec := json.NewDecoder(strings.NewReader(data))
		dec.DisallowUnknownFields()
		err := safefile.JSONError([]byte(data), dec.Decode(&v))
		if err == nil {
			t.Errorf("%q: no error", data)
			continue
		}
		for _, leak := range []string{secret, secret[:1] + "'", "'s'", "12345"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("JSONError(%q) = %q: quotes the data", data, err)
			}
		}
	}
	err := safefile.JSONError([]byte("{\n  \"n\": x}"), json.Unmarshal([]byte("{\n  \"n\": x}"), &v))
	if !strings.Contains(err.Error(), "line 2") {
		t.Errorf("JSONError = %q; want it to name line 2", err)
	}
}
