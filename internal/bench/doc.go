// Package bench is the load generator behind `wavehouse bench ingest`.
//
// It sends pre-generated batches of a standard seven-column row shape to a WaveHouse gateway
// (POST /v1/ingest/{table}) from N concurrent clients, bounded by a duration and/or a request
// count, and measures requests/s, rows/s, latency percentiles and status codes. It then polls
// until every accepted row is queryable and derives end-to-end rows/s and freshness (accept →
// queryable) from a timeline of accepted-row marks sampled every 100 ms. The same batches can be
// sent straight to ClickHouse (HTTP JSONEachRow, or a native batch) in the same run, so the
// gateway and the direct baseline are printed side by side.
//
// The tool shares the CPU with the gateway and ClickHouse on small machines, so bodies are
// generated (and compressed) before the clock starts and responses are discarded unparsed.
package bench
