package jsmq

import "time"

// Defaults of the JetStream queue, shared by both backends. The boot config's defaults for
// mq.prefix, mq.partitions, mq.ack_wait and mq.embedded.max_bytes are these constants; the
// others have no key (docs/queue.md lists them).
const (
	DefaultPrefix          = "wh"
	DefaultPartitions      = 4
	DefaultMaxBytes        = 1 << 30
	DefaultDLQMaxBytes     = 1 << 30
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultAckWait         = 30 * time.Second
	DefaultMaxAckPending   = 10000
	DefaultMaxFrameRecords = 1024
	DefaultMaxFrameBytes   = 768 << 10
	DefaultPublishTimeout  = 5 * time.Second
)

// WithDefaults returns t with zero fields set to the defaults above (Replicas to 1).
func (t Topology) WithDefaults() Topology {
	if t.Prefix == "" {
		t.Prefix = DefaultPrefix
	}
	if t.Partitions == 0 {
		t.Partitions = DefaultPartitions
	}
	if t.Replicas == 0 {
		t.Replicas = 1
	}
	if t.MaxBytes == 0 {
		t.MaxBytes = DefaultMaxBytes
	}
	if t.DLQMaxBytes == 0 {
		t.DLQMaxBytes = DefaultDLQMaxBytes
	}
	if t.DuplicateWindow == 0 {
		t.DuplicateWindow = DefaultDuplicateWindow
	}
	if t.AckWait == 0 {
		t.AckWait = DefaultAckWait
	}
	if t.MaxAckPending == 0 {
		t.MaxAckPending = DefaultMaxAckPending
	}
	return t
}
