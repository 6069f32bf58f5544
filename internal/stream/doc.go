// Package stream serves GET /v1/stream/{table}: newly accepted rows as
// Server-Sent Events, pushed as soon as they are in the queue (before they
// reach ClickHouse), with gap-free resume from the queue's history.
//
// # Semantics
//
// Every queue record (the rows of one accepted ingest request) is one
// `event: rows` whose id is "<epoch>-<seq>-<index>": the epoch of the
// queue history (mq.Event.Epoch) and the record's mq.Position, which
// totally orders a table's records within the epoch, and whose data is a JSON array of row
// objects keyed by column with the canonical values as a query returns
// them. ?columns=a,b projects, ?where.col=value keeps rows whose value
// equals (a string compares its unquoted text); an event left with no row
// is not sent, but its id is, alone, before the next heartbeat.
//
// A request with Last-Event-ID (or ?since=<id>) gets a private ordered
// queue reader that starts strictly after the id and continues live, so the
// resumed stream is the uninterrupted one by construction. Without an id
// (or ?since=now) the request joins the table's one shared live reader in
// this process, which fans each record out to its subscribers without
// waiting for any of them: a subscriber whose bounded buffer is full gets
// an `event: gap` with the missed ids once it has room again, or is
// disconnected (slow_policy). A private reader instead waits for its own
// subscriber, slowing nobody else. An id of another epoch (or without one),
// past the head, or older than the retained history yields one
// `event: reset` first, naming the reason and the id delivery continues
// after; an id inside the window resumes exactly after it.
//
// # Errors
//
// Requests: 400 stream.invalid_id, stream.invalid_table,
// stream.invalid_parameter; 429 stream.too_many_subscribers; 503
// stream.closed after Close. A failed queue reader ends its streams with an
// SSE comment; clients reconnect with Last-Event-ID and lose nothing.
//
// # Capabilities
//
// Works over any mq.Replayer. With an external NATS queue every api process
// reads every record, so each process serves every row.
package stream
