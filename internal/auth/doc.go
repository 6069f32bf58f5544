// Package auth turns an `Authorization: Bearer <key>` header into a Principal (tenant, key id,
// scopes, tables) and enforces per-route scope and table rules.
//
// # Semantics
//
// An API key is wh_<keyid>_<secret>: keyid is 12 lowercase hex digits, secret 64 (32 random bytes
// from crypto/rand). Settings store only the key id and the hex SHA-256 of the secret; the key id
// selects the key and its tenant, and the secret's hash is compared in constant time
// (crypto/subtle). The tenant always comes from the key, never from a client header.
//
// A key that is unknown, revoked (removed from settings), malformed or whose secret does not
// match is 401 auth.invalid_key; an expired key is 401 auth.expired_key; a missing header is
// 401 auth.missing_key. A key without the route's scope is 403 auth.missing_scope naming the
// scope; a key restricted to tables that does not list the route's table is 403
// auth.table_not_allowed.
//
// The operator key (read from a file) guards /v1/ops/*: it may call every ops route and names
// the tenant of tenant-scoped ops routes with ?tenant=. A tenant key with the admin scope may call
// its own tenant's ops routes, except the operator-only ones (settings reload). The operator key
// is refused on non-ops routes.
//
// Anonymous access: when Config.AllowAnonymous is set (the API listener is loopback, or
// auth.allow_anonymous is true) and the settings hold no API key at all, requests without a
// header act as Config.AnonymousTenant on the ingest, query and stream routes. They never reach
// /v1/ops/*: there the answer is 401 auth.anonymous_ops, which says how to send the operator key
// (docs/adr/0009). As soon as one key exists, anonymous access ends, without restart.
//
// EnsureOperatorKeyFile generates the operator key file the binary uses when
// auth.operator_key_file is empty (<data_dir>/operator.key, mode 0600).
//
// # Errors
//
// Authenticate returns ErrMissingKey, ErrInvalidKey or ErrExpiredKey; authorization failures are
// ErrForbidden. Neither errors nor log lines ever contain a key's secret, the operator key or a
// password: audit lines carry the key id (public), the reason, method, path and remote address.
//
// # Capabilities
//
// Scopes: ingest, query, stream, admin. Routes() is the route→rule table the API wires with
// Handle; unknown /v1/ops/* patterns default to the admin rule.
package auth
