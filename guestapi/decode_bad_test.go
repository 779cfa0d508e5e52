package guestapi

import (
	"strings"
	"testing"
)

// TestDecodeRefusesAmbiguousAnswers: an answer that is not valid UTF-8, a
// list naming a ticket twice and a thread naming a message twice are
// refused with an error that says what is wrong, rather than decoded into
// replacement characters or one of the two versions picked at random.
func TestDecodeRefusesAmbiguousAnswers(t *testing.T) {
	for _, c := range []struct {
		name, body, want string
		decode           func([]byte) error
	}{
		{"list/invalid UTF-8", "{\"tickets\":[{\"id\":\"a\",\"task_description\":\"towels \xff\xfe\"}]}", "not valid UTF-8", decodeListErr},
		{"list/repeated id", `{"tickets":[{"id":"a","status":"new"},{"id":"b"},{"id":"a","status":"done"}]}`, `tickets[2]: id "a" repeats tickets[0]`, decodeListErr},
		{"thread/invalid UTF-8", "{\"ticket\":{\"id\":\"t\"},\"messages\":[{\"id\":\"m\",\"body\":\"hi \xc3\"}]}", "not valid UTF-8", decodeThreadErr},
		{"thread/repeated message id", `{"ticket":{"id":"t"},"messages":[{"id":"m","body":"one"},{"id":"m","body":"two"}]}`, `messages[1]: id "m" repeats messages[0]`, decodeThreadErr},
		{"object/invalid UTF-8", "{\"success\":true,\"message_id\":\"\xff\"}", "not valid UTF-8", func(b []byte) error {
			var res PostMessageResult
			return decodeObject(b, &res)
		}},
	} {
		err := c.decode([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	// Distinct ids and valid text still decode.
	if err := decodeListErr([]byte(`{"tickets":[{"id":"a"},{"id":"b"}]}`)); err != nil {
		t.Errorf("distinct ids: %v", err)
	}
	if err := decodeThreadErr([]byte(`{"ticket":{"id":"t"},"messages":[{"id":"m","body":"Grüße 👋"},{"id":"n"}]}`)); err != nil {
		t.Errorf("distinct message ids: %v", err)
	}
}

func decodeListErr(b []byte) error {
	_, err := decodeList(b)
	return err
}

func decodeThreadErr(b []byte) error {
	_, err := decodeThread(b)
	return err
}
