package config

import "time"

// Enum is a configuration key whose value is one of a fixed set. The table below is the one place
// those sets are written: Validate refuses anything else, and a test in internal/app boots every
// value through the constructors `serve` uses, so a value `config check` accepts always boots.
type Enum struct {
	Key    string
	Values []string
}

// Enums lists every enum-typed key with its values. roles is a list of these values.
func Enums() []Enum {
	return []Enum{
		{"roles", []string{string(RoleAPI), string(RoleIngest), string(RoleSweeper)}},
		{"log.level", []string{"debug", "info", "warn", "error"}},
		{"log.format", []string{"json", "text"}},
		{"stream.slow_policy", []string{"gap", "disconnect"}},
		{"store.backend", []string{"chdb", "clickhouse"}},
		{"mq.backend", []string{"embedded", "nats"}},
		{"mq.embedded.sync", []string{"always", "interval", "none"}},
		{"cache.backend", []string{"local", "redis"}},
		{"dedupe.backend", []string{"local", "dynamodb"}},
		{"coord.backend", []string{"local", "nats"}},
	}
}

// enumValues returns the values of key in Enums (nil for a key that is not an enum).
func enumValues(key string) []string {
	for _, e := range Enums() {
		if e.Key == key {
			return e.Values
		}
	}
	return nil
}

// embeddedNoneFlush is the background fsync period of the embedded queue under
// mq.embedded.sync: none (embeddedmq.NoneFlushInterval; config imports no backend, and a test
// in internal/app holds the two equal through the warning text).
const embeddedNoneFlush = 2 * time.Minute
