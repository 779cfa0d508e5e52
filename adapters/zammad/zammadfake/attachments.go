package zammadfake

import (
	"strconv"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

// Attachment is a file attached to an article; the fake keeps its name
// and what Zammad tells of it, not its content.
type Attachment struct {
	ID       int64
	Filename string
	Size     int64
	MimeType string
}

// attachment makes the record of a file called name. The caller holds
// s.mu.
func (s *Server) attachment(name string) Attachment {
	ctype, size := saasfake.File(name)
	s.nextAtt++
	return Attachment{ID: s.nextAtt, Filename: name, Size: size, MimeType: ctype}
}

// attachmentsJSON is an article's "attachments" as Zammad's ticket
// articles API shows them: id, filename, size (a string, as Zammad stores
// it) and preferences with the Mime-Type.
func attachmentsJSON(as []Attachment) []map[string]any {
	out := make([]map[string]any, 0, len(as))
	for _, at := range as {
		out = append(out, map[string]any{
			"id": at.ID, "filename": at.Filename, "size": strconv.FormatInt(at.Size, 10),
			"preferences": map[string]any{"Content-Type": at.MimeType, "Mime-Type": at.MimeType},
		})
	}
	return out
}
