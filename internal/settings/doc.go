// Package settings loads the settings directory: one file (or folder) per tenant holding its
// ClickHouse target, API keys, limits, dedupe retention and pipes. The directory is validated as a
// whole and served as an immutable Snapshot behind an atomic pointer; a Manager reloads it when a
// file changes (polled), on SIGHUP and on POST /v1/ops/settings/reload.
//
// # Semantics
//
// Layout: settings_dir/tenants/<tenant>.yaml, or settings_dir/tenants/<tenant>/tenant.yaml with
// the tenant's pipes as settings_dir/tenants/<tenant>/pipes/<pipe>.sql. The tenant's name is the
// file (or folder) name; it must match [a-z][a-z0-9_]{0,62}. A tenant defined both ways is a
// finding. Files whose names start with "." are ignored (editor swap files).
//
// A Snapshot is never modified after Load returns it, so readers may keep and share it freely.
// Manager.Current never returns nil. A reload either replaces the snapshot entirely or leaves the
// previous one in force: there is no partial application.
//
// Key ids are unique across all tenants, so a credential's id alone selects its tenant.
//
// # Errors
//
// Load reports every finding of the whole directory at once as an *InvalidError (errors.Is
// ErrInvalid), each finding naming file:line and the key at fault. Findings never quote a secret;
// key hashes and password files are referenced by key id and path only. Calls on a closed Manager
// return ErrClosed.
//
// # Capabilities
//
// The Manager detects changes by hashing the directory's contents every poll interval (there is no
// file-system notification dependency) and applies a change once the contents stayed the same
// for one interval, so a half-written file is never applied. An explicit Reload serves SIGHUP,
// and ReloadHandler serves POST /v1/ops/settings/reload.
package settings
