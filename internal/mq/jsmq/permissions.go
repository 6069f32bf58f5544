package jsmq

import "slices"

// Access is what one NATS user does with the queue. Each field adds the subjects of the calls
// that ability makes (Permissions); a user gets nothing else. Every process that runs the queue
// also verifies the topology at boot, reads the stream and consumer state behind its metrics,
// lists the partition streams and keeps the partition layout record in the schema bucket, so
// those grants come with any Access.
type Access struct {
	// Publish is the api's ingest: publishing frames to the partition subjects.
	Publish bool
	// Replay is the api's SSE history: ordered consumers on the partition streams.
	Replay bool
	// DeadLetters is the api's /v1/ops/dlq: reading, deleting, purging and replaying dead letters
	// (a replay republishes to the partition subjects and keeps its markers in the journal).
	DeadLetters bool
	// Consume is the ingest worker: pulling and acknowledging on the durable ingest consumers,
	// dead-lettering, and the batch-plan journal.
	Consume bool
	// Trim is the sweeper: purging the partition streams below the ack floor (reading frame
	// headers with ordered consumers to find the keyed frames TrimToFit keeps), expiring dead
	// letters and compacting the journal.
	Trim bool
	// LeaseBucket is the coord lease bucket the user reads and writes; empty: none (its stream
	// info stays readable, as boot verifies the whole topology).
	LeaseBucket string
	// Manage creates and updates the streams, consumers and buckets (mq.nats.manage_topology).
	Manage bool
}

// Rules are the allow and deny lists of one direction (publish or subscribe) of a NATS user's
// permissions; a deny wins over an allow.
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Permissions are a NATS user's permissions, in the shape of nats-server's authorization
// permissions block and of a user JWT's (pub, sub).
type Permissions struct {
	Publish   Rules `json:"pub"`
	Subscribe Rules `json:"sub"`
}

// The JetStream API and protocol subjects the queue's calls use (nats.go jetstream, default
// API prefix): what nats-server checks a publish against.
const (
	apiPrefix  = "$JS.API."
	ackPrefix  = "$JS.ACK."
	flowPrefix = "$JS.FC."
	// InboxSubjects is where nats.go receives every reply (requests, pulls, KV watches).
	InboxSubjects = "_INBOX.>"
)

// Permissions returns the permissions of a user with access a, built from the names of t: every
// subject is one the queue, the journal, the schema bucket and natscoord address.
func (t Topology) Permissions(a Access) Permissions {
	t = t.WithDefaults()
	n := t.Names()
	var pub, deny []string
	add := func(s ...string) { pub = append(pub, s...) }

	// Every process: boot verification, metrics and stats, the stream listing, the layout record.
	add(apiPrefix + "STREAM.NAMES")
	for p := range t.Partitions {
		s := n.Stream(p)
		add(streamRead(s)...)
		add(apiPrefix + "CONSUMER.INFO." + s + "." + ConsumerName)
	}
	add(apiPrefix + "STREAM.INFO." + n.DLQStream())
	for _, b := range []string{n.LeaseBucket(), n.JournalBucket(), n.SchemaBucket()} {
		add(apiPrefix + "STREAM.INFO." + kvStream(b))
	}
	if a.LeaseBucket != "" && a.LeaseBucket != n.LeaseBucket() {
		add(apiPrefix + "STREAM.INFO." + kvStream(a.LeaseBucket))
	}
	add(kvRead(n.SchemaBucket(), ">")...)
	add(kvWrite(n.SchemaBucket(), ">"))

	if a.Publish || a.DeadLetters {
		for p := range t.Partitions {
			add(n.StreamSubjects(p))
		}
	}
	if a.Replay || a.Trim {
		// Ordered consumers (a replay; the trimmer's scan of frame headers, TrimToFit) get
		// generated names; the durable ingest consumer is never theirs.
		for p := range t.Partitions {
			s := n.Stream(p)
			add(apiPrefix+"CONSUMER.CREATE."+s+".*", apiPrefix+"CONSUMER.CREATE."+s+".*.>",
				apiPrefix+"CONSUMER.MSG.NEXT."+s+".*", apiPrefix+"CONSUMER.DELETE."+s+".*")
			if !a.Manage {
				deny = append(deny, apiPrefix+"CONSUMER.CREATE."+s+"."+ConsumerName, apiPrefix+"CONSUMER.CREATE."+s+"."+ConsumerName+".>",
					apiPrefix+"CONSUMER.DELETE."+s+"."+ConsumerName)
			}
			if !a.Consume {
				deny = append(deny, apiPrefix+"CONSUMER.MSG.NEXT."+s+"."+ConsumerName)
			}
		}
	}
	if a.DeadLetters {
		d := n.DLQStream()
		add(streamRead(d)...)
		add(apiPrefix+"STREAM.MSG.DELETE."+d, apiPrefix+"STREAM.PURGE."+d)
		add(kvRead(n.JournalBucket(), "replay.>")...)
		add(kvWrite(n.JournalBucket(), "replay.>"))
	}
	if a.Consume {
		for p := range t.Partitions {
			s := n.Stream(p)
			add(apiPrefix+"CONSUMER.MSG.NEXT."+s+"."+ConsumerName, ackPrefix+s+"."+ConsumerName+".>")
		}
		add(n.DLQSubjects())
		add(kvRead(n.JournalBucket(), ">")...)
		add(kvWatch(n.JournalBucket())...)
		add(kvWrite(n.JournalBucket(), ">"))
	}
	if a.Trim {
		// Trim lists every consumer of a partition stream: no durable one's ack floor is passed.
		for p := range t.Partitions {
			add(apiPrefix+"CONSUMER.LIST."+n.Stream(p), apiPrefix+"STREAM.PURGE."+n.Stream(p))
		}
		add(streamRead(n.DLQStream())...)
		add(apiPrefix + "STREAM.PURGE." + n.DLQStream())
		add(kvRead(n.JournalBucket(), ">")...)
		add(kvWatch(n.JournalBucket())...)
		add(kvWrite(n.JournalBucket(), ">"), apiPrefix+"STREAM.PURGE."+kvStream(n.JournalBucket()))
	}
	if a.LeaseBucket != "" {
		// natscoord reads a lease by the stream API (a read that sees the leader's state).
		add(apiPrefix + "STREAM.MSG.GET." + kvStream(a.LeaseBucket))
		add(kvRead(a.LeaseBucket, ">")...)
		add(kvWrite(a.LeaseBucket, ">"))
	}
	if a.Manage {
		streams := []string{n.DLQStream()}
		for p := range t.Partitions {
			s := n.Stream(p)
			streams = append(streams, s)
			add(apiPrefix+"CONSUMER.CREATE."+s+"."+ConsumerName, apiPrefix+"CONSUMER.DURABLE.CREATE."+s+"."+ConsumerName)
		}
		buckets := []string{n.LeaseBucket(), n.JournalBucket(), n.SchemaBucket()}
		if a.LeaseBucket != "" && a.LeaseBucket != n.LeaseBucket() {
			buckets = append(buckets, a.LeaseBucket)
		}
		for _, b := range buckets {
			streams = append(streams, kvStream(b))
		}
		for _, s := range streams {
			add(apiPrefix+"STREAM.CREATE."+s, apiPrefix+"STREAM.UPDATE."+s)
		}
		add(apiPrefix + "INFO")
	}
	return Permissions{
		Publish:   Rules{Allow: dedupe(pub), Deny: dedupe(deny)},
		Subscribe: Rules{Allow: []string{InboxSubjects}},
	}
}

// streamRead is a stream's info and message reads (direct, by sequence or by subject, and the
// stream API's).
func streamRead(s string) []string {
	return []string{apiPrefix + "STREAM.INFO." + s, apiPrefix + "STREAM.MSG.GET." + s, apiPrefix + "DIRECT.GET." + s, apiPrefix + "DIRECT.GET." + s + ".>"}
}

// kvStream is the stream behind a KV bucket.
func kvStream(bucket string) string { return "KV_" + bucket }

// kvRead is a KV bucket's reads of the keys keys matches (a direct get by key subject; Get falls
// back to the stream API only on a bucket without direct gets, which Ensure never creates).
func kvRead(bucket, keys string) []string {
	return []string{apiPrefix + "DIRECT.GET." + kvStream(bucket) + ".$KV." + bucket + "." + keys}
}

// kvWrite is the subject of a KV bucket's puts, deletes and purges of the keys keys matches.
func kvWrite(bucket, keys string) string { return "$KV." + bucket + "." + keys }

// kvWatch is what a watch or a key listing on a bucket uses: an ordered push consumer on its
// stream with flow control, recreated after a gap.
func kvWatch(bucket string) []string {
	s := kvStream(bucket)
	return []string{apiPrefix + "CONSUMER.CREATE." + s, apiPrefix + "CONSUMER.CREATE." + s + ".>",
		apiPrefix + "CONSUMER.DELETE." + s + ".*", apiPrefix + "CONSUMER.INFO." + s + ".*", flowPrefix + s + ".>"}
}

// dedupe drops repeated subjects, keeping the first occurrence (the order is the grants').
func dedupe(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
