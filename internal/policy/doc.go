// Package policy holds the row and column policies of end-user roles (docs/jwt.md#policies):
// a row filter over columns and claims ([Filter]), a table's policy bound to one token
// ([Bound]: readable columns, forced insert values, a Go check of a row), and the rewrite
// that makes a query read policed tables only through their policy ([Rewrite]). It runs
// nothing: read surfaces (query, pipes, streams, the ClickHouse interface) and ingest apply
// it, and [HTTPError] gives every refusal its stable code.
package policy
