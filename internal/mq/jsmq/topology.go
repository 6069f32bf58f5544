package jsmq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wavehouse/wavehouse/internal/mq"
)

// Topology is the JetStream layout WaveHouse needs: one stream per
// partition with a durable ingest consumer, a dead-letter stream, and the KV
// buckets (coord leases, batch-plan journal, last known table schemas).
type Topology struct {
	// Prefix starts every subject and name.
	Prefix string
	// Partitions is the number of partition streams.
	Partitions int
	// Replicas is the stream replica count (1 embedded, 3 in production).
	Replicas int
	// MaxBytes bounds each partition stream (-1: unlimited). New publishes
	// beyond it fail with mq: queue full (discard new).
	MaxBytes int64
	// DLQMaxBytes bounds the dead-letter stream (-1: unlimited).
	DLQMaxBytes int64
	// DuplicateWindow is the idempotency-key dedupe window.
	DuplicateWindow time.Duration
	// AckWait is how long a delivery may stay unacknowledged before it is
	// redelivered.
	AckWait time.Duration
	// MaxAckPending bounds unacknowledged deliveries per partition.
	MaxAckPending int
}

// Names returns the names derived from the topology's prefix.
func (t Topology) Names() Names { return Names{Prefix: t.Prefix, Partitions: t.Partitions} }

// Validate reports every problem of t.
func (t Topology) Validate() error {
	var errs []error
	if !ValidPrefix(t.Prefix) {
		errs = append(errs, fmt.Errorf("prefix %q: use 1-32 characters of [A-Za-z0-9_-]", t.Prefix))
	}
	if t.Partitions < 1 || t.Partitions > 1024 {
		errs = append(errs, fmt.Errorf("partitions %d: must be between 1 and 1024", t.Partitions))
	}
	if t.Replicas < 1 || t.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas %d: must be between 1 and 5", t.Replicas))
	}
	if t.DuplicateWindow <= 0 {
		errs = append(errs, errors.New("duplicate_window: must be positive"))
	}
	if t.AckWait <= 0 {
		errs = append(errs, errors.New("ack_wait: must be positive"))
	}
	if t.MaxAckPending < 1 {
		errs = append(errs, errors.New("max_ack_pending: must be at least 1"))
	}
	return errors.Join(errs...)
}

func orUnlimited(v int64) int64 {
	if v <= 0 {
		return -1
	}
	return v
}

// Streams returns the stream configurations: partitions, then the DLQ.
func (t Topology) Streams() []jetstream.StreamConfig {
	n := t.Names()
	out := make([]jetstream.StreamConfig, 0, t.Partitions+1)
	for p := 0; p < t.Partitions; p++ {
		out = append(out, jetstream.StreamConfig{
			Name:              n.Stream(p),
			Description:       "WaveHouse ingest queue, partition " + fmt.Sprint(p),
			Subjects:          []string{n.StreamSubjects(p)},
			Retention:         jetstream.LimitsPolicy,
			MaxConsumers:      -1,
			MaxMsgs:           -1,
			MaxBytes:          orUnlimited(t.MaxBytes),
			Discard:           jetstream.DiscardNew,
			MaxAge:            0,
			MaxMsgsPerSubject: -1,
			MaxMsgSize:        -1,
			Storage:           jetstream.FileStorage,
			Replicas:          t.Replicas,
			Duplicates:        t.DuplicateWindow,
			AllowDirect:       true,
		})
	}
	out = append(out, jetstream.StreamConfig{
		Name:              n.DLQStream(),
		Description:       "WaveHouse dead-letter queue",
		Subjects:          []string{n.DLQSubjects()},
		Retention:         jetstream.LimitsPolicy,
		MaxConsumers:      -1,
		MaxMsgs:           -1,
		MaxBytes:          orUnlimited(t.DLQMaxBytes),
		Discard:           jetstream.DiscardNew,
		MaxMsgsPerSubject: -1,
		MaxMsgSize:        -1,
		Storage:           jetstream.FileStorage,
		Replicas:          t.Replicas,
		Duplicates:        t.DuplicateWindow,
		AllowDirect:       true,
	})
	return out
}

// ConsumerSpec is a durable consumer and its stream.
type ConsumerSpec struct {
	Stream string                   `json:"stream"`
	Config jetstream.ConsumerConfig `json:"config"`
}

// Consumers returns the durable ingest consumer of every partition.
func (t Topology) Consumers() []ConsumerSpec {
	n := t.Names()
	out := make([]ConsumerSpec, 0, t.Partitions)
	for p := 0; p < t.Partitions; p++ {
		out = append(out, ConsumerSpec{Stream: n.Stream(p), Config: jetstream.ConsumerConfig{
			Durable:       ConsumerName,
			Description:   "WaveHouse ingest worker",
			DeliverPolicy: jetstream.DeliverAllPolicy,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       t.AckWait,
			MaxDeliver:    -1,
			MaxAckPending: t.MaxAckPending,
			ReplayPolicy:  jetstream.ReplayInstantPolicy,
			Replicas:      t.Replicas,
		}})
	}
	return out
}

// KeyValues returns the KV buckets: the coord leases, the batch-plan journal and the last known
// table schemas.
func (t Topology) KeyValues() []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{{
		Bucket:      t.Names().LeaseBucket(),
		Description: "WaveHouse coord leases",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    t.Replicas,
	}, {
		Bucket:      t.Names().JournalBucket(),
		Description: "WaveHouse ingest batch plans (exactly-once inserts)",
		// No max_age: the ingest consumer redelivers without limit (max_deliver -1), so a plan
		// must stay as long as any of its frames can come back. Forget deletes a plan once its
		// frames are acknowledged; CompactJournal (the sweeper) removes what Forget left.
		History:  1,
		Storage:  jetstream.FileStorage,
		Replicas: t.Replicas,
	}, {
		Bucket:      t.Names().SchemaBucket(),
		Description: "WaveHouse last known table schemas (validation while ClickHouse is down)",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    t.Replicas,
	}}
}

// Ensure creates what is missing and updates what differs.
func (t Topology) Ensure(ctx context.Context, js jetstream.JetStream) error {
	for _, sc := range t.Streams() {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("create stream %s: %w", sc.Name, translate(err))
		}
	}
	for _, cs := range t.Consumers() {
		if _, err := js.CreateOrUpdateConsumer(ctx, cs.Stream, cs.Config); err != nil {
			return fmt.Errorf("create consumer %s on stream %s: %w", cs.Config.Durable, cs.Stream, translate(err))
		}
	}
	for _, kc := range t.KeyValues() {
		if _, err := js.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("create key-value bucket %s: %w", kc.Bucket, translate(err))
		}
	}
	return nil
}

// Verify compares the server's topology with t and returns one line per
// difference (empty when it matches), or an error when the server could not
// be asked.
func (t Topology) Verify(ctx context.Context, js jetstream.JetStream) ([]string, error) {
	var diffs []string
	for _, want := range t.Streams() {
		s, err := js.Stream(ctx, want.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			diffs = append(diffs, fmt.Sprintf("stream %s is missing (subjects %v)", want.Name, want.Subjects))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", want.Name, translate(err))
		}
		diffs = append(diffs, diffStream(want, s.CachedInfo().Config)...)
	}
	for _, want := range t.Consumers() {
		c, err := js.Consumer(ctx, want.Stream, want.Config.Durable)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue // already reported
		}
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			diffs = append(diffs, fmt.Sprintf("consumer %s on stream %s is missing", want.Config.Durable, want.Stream))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("consumer %s on stream %s: %w", want.Config.Durable, want.Stream, translate(err))
		}
		diffs = append(diffs, diffConsumer(want, c.CachedInfo().Config)...)
	}
	for _, want := range t.KeyValues() {
		kv, err := js.KeyValue(ctx, want.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			diffs = append(diffs, fmt.Sprintf("key-value bucket %s is missing", want.Bucket))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("key-value bucket %s: %w", want.Bucket, translate(err))
		}
		if want.Bucket != t.Names().JournalBucket() {
			continue
		}
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("key-value bucket %s: %w", want.Bucket, translate(err))
		}
		if st.TTL() != 0 {
			diffs = append(diffs, fmt.Sprintf("key-value bucket %s: ttl is %s, want none (a batch plan must outlive every redelivery of its frames)",
				want.Bucket, st.TTL()))
		}
	}
	return diffs, nil
}

func diffStream(want, got jetstream.StreamConfig) []string {
	var d []string
	f := func(field string, w, g any) {
		d = append(d, fmt.Sprintf("stream %s: %s is %v, want %v", want.Name, field, g, w))
	}
	if !slices.Equal(want.Subjects, got.Subjects) {
		f("subjects", want.Subjects, got.Subjects)
	}
	if want.Retention != got.Retention {
		f("retention", want.Retention, got.Retention)
	}
	if want.Storage != got.Storage {
		f("storage", want.Storage, got.Storage)
	}
	if want.Discard != got.Discard {
		f("discard", want.Discard, got.Discard)
	}
	if want.Replicas != got.Replicas {
		f("replicas", want.Replicas, got.Replicas)
	}
	if want.MaxBytes != got.MaxBytes {
		f("max_bytes", want.MaxBytes, got.MaxBytes)
	}
	if got.MaxAge != 0 {
		f("max_age", "0 (retention is trimmed by WaveHouse, never above the ack floor)", got.MaxAge)
	}
	if got.MaxMsgs > 0 {
		f("max_msgs", -1, got.MaxMsgs)
	}
	if want.Duplicates != got.Duplicates {
		f("duplicate_window", want.Duplicates, got.Duplicates)
	}
	return d
}

func diffConsumer(want ConsumerSpec, got jetstream.ConsumerConfig) []string {
	var d []string
	f := func(field string, w, g any) {
		d = append(d, fmt.Sprintf("consumer %s on stream %s: %s is %v, want %v", want.Config.Durable, want.Stream, field, g, w))
	}
	w := want.Config
	if w.AckPolicy != got.AckPolicy {
		f("ack_policy", w.AckPolicy, got.AckPolicy)
	}
	if w.DeliverPolicy != got.DeliverPolicy {
		f("deliver_policy", w.DeliverPolicy, got.DeliverPolicy)
	}
	if got.FilterSubject != "" || len(got.FilterSubjects) > 0 {
		f("filter_subject", "none", got.FilterSubject+fmt.Sprint(got.FilterSubjects))
	}
	if got.MaxDeliver > 0 {
		f("max_deliver", -1, got.MaxDeliver)
	}
	if w.AckWait != got.AckWait {
		f("ack_wait", w.AckWait, got.AckWait)
	}
	return d
}

// TopologyError wraps verification differences as an mq.ErrTopology error
// that names every difference.
func TopologyError(diffs []string) error {
	if len(diffs) == 0 {
		return nil
	}
	errs := make([]error, 0, len(diffs)+1)
	errs = append(errs, mq.ErrTopology)
	for _, d := range diffs {
		errs = append(errs, errors.New(d))
	}
	return errors.Join(errs...)
}
