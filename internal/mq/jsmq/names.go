package jsmq

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// EscapeToken makes s usable as one NATS subject token. Letters, digits,
// '_' and '-' are kept; every other byte (dots, wildcards, spaces, '~'
// itself, UTF-8 bytes) becomes "~HH". The mapping is reversible
// (UnescapeToken) and injective, so two names never share a subject.
func EscapeToken(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "~%02X", c)
	}
	return b.String()
}

// UnescapeToken reverses EscapeToken.
func UnescapeToken(s string) (string, error) {
	if !strings.Contains(s, "~") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '~' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%w: bad escape in %q", mq.ErrInvalid, s)
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("%w: bad escape in %q", mq.ErrInvalid, s)
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}

// Names derives every JetStream name and subject from the prefix.
type Names struct {
	Prefix     string
	Partitions int
}

// ConsumerName is the durable ingest consumer on every partition stream.
const ConsumerName = "ingest"

// Stream returns the stream of partition p: "<prefix>_in_<p>".
func (n Names) Stream(p int) string { return n.Prefix + "_in_" + strconv.Itoa(p) }

// StreamSubjects returns the subject filter of partition p's stream.
func (n Names) StreamSubjects(p int) string { return n.Prefix + ".in." + strconv.Itoa(p) + ".>" }

// DLQStream returns the dead-letter stream name.
func (n Names) DLQStream() string { return n.Prefix + "_dlq" }

// DLQSubjects returns the dead-letter stream's subject filter.
func (n Names) DLQSubjects() string { return n.Prefix + ".dlq.>" }

// LeaseBucket returns the coord lease KV bucket name.
func (n Names) LeaseBucket() string { return n.Prefix + "_leases" }

// JournalBucket returns the batch-plan journal KV bucket name (see Queue.Plan).
func (n Names) JournalBucket() string { return n.Prefix + "_journal" }

// SchemaBucket returns the KV bucket of the last known table schemas (see Queue.PutSchema).
func (n Names) SchemaBucket() string { return n.Prefix + "_schemas" }

// Partition returns the partition of tenant/table.
func (n Names) Partition(tenant, table string) int {
	return mq.PartitionOf(tenant, table, n.Partitions)
}

// Subject returns the ingest subject of tenant/table:
// "<prefix>.in.<partition>.<tenant>.<table>" with escaped tokens.
func (n Names) Subject(tenant, table string) string {
	return n.Prefix + ".in." + strconv.Itoa(n.Partition(tenant, table)) + "." + EscapeToken(tenant) + "." + EscapeToken(table)
}

// DLQSubject returns the dead-letter subject of tenant/table.
func (n Names) DLQSubject(tenant, table string) string {
	return n.Prefix + ".dlq." + EscapeToken(tenant) + "." + EscapeToken(table)
}

// UndecodableTenant is the tenant token of the dead-letter subject that
// holds undecodable messages whose subject names no tenant and table. It is
// not a valid tenant name, so it never clashes with a tenant's entries.
const UndecodableTenant = "_undecodable"

// DLQUndecodableSubject returns the dead-letter subject of undecodable
// messages of partition p whose subject could not be parsed:
// "<prefix>.dlq._undecodable.in_<p>".
func (n Names) DLQUndecodableSubject(p int) string {
	return n.Prefix + ".dlq." + UndecodableTenant + ".in_" + strconv.Itoa(p)
}

// ParseSubject returns the tenant and table of an ingest or dead-letter
// subject.
func (n Names) ParseSubject(subject string) (tenant, table string, err error) {
	parts := strings.Split(subject, ".")
	var tt []string
	switch {
	case len(parts) == 5 && parts[1] == "in":
		tt = parts[3:]
	case len(parts) == 4 && parts[1] == "dlq":
		tt = parts[2:]
	default:
		return "", "", fmt.Errorf("%w: unexpected subject %q", mq.ErrInvalid, subject)
	}
	if tenant, err = UnescapeToken(tt[0]); err != nil {
		return "", "", err
	}
	if table, err = UnescapeToken(tt[1]); err != nil {
		return "", "", err
	}
	return tenant, table, nil
}

// ValidPrefix reports whether prefix can start subjects and stream names.
func ValidPrefix(prefix string) bool {
	if prefix == "" || len(prefix) > 32 {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		if !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
