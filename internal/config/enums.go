package config

import (
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/store/clickhousestore"
	"github.com/wavehouse/wavehouse/internal/stream"
)

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
		{"stream.slow_policy", []string{stream.PolicyGap, stream.PolicyDisconnect}},
		{"store.backend", []string{"chdb", "clickhouse"}},
		{"store.clickhouse.cluster.insert", []string{clickhousestore.InsertDistributed, clickhousestore.InsertLocal}},
		{"mq.backend", []string{"embedded", "nats"}},
		{"mq.embedded.sync", []string{embeddedmq.SyncAlways, embeddedmq.SyncInterval, embeddedmq.SyncNone}},
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
