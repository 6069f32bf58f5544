package sharding

import (
	"fmt"
	"strings"
)

// Distributed is what a Distributed table's engine clause says.
type Distributed struct {
	// Cluster is the remote_servers name.
	Cluster string
	// Database and Table name the local table on every shard.
	Database, Table string
	// ShardingKey is the expression text, empty when the table has none.
	ShardingKey string
}

// ParseDistributed reads the engine clause "ENGINE = Distributed(cluster, db, table[, key[,
// policy]])" out of a table's create_table_query.
func ParseDistributed(createQuery string) (Distributed, error) {
	const marker = "ENGINE = Distributed("
	i := strings.Index(createQuery, marker)
	if i < 0 {
		return Distributed{}, fmt.Errorf("sharding: no %q in %q", marker, createQuery)
	}
	rest := createQuery[i+len(marker):]
	end := closing(rest)
	if end < 0 {
		return Distributed{}, fmt.Errorf("sharding: unbalanced Distributed(…) in %q", createQuery)
	}
	args := SplitArgs(rest[:end])
	if len(args) < 3 {
		return Distributed{}, fmt.Errorf("sharding: Distributed(%s) has fewer than 3 arguments", rest[:end])
	}
	d := Distributed{Cluster: name(args[0]), Database: name(args[1]), Table: name(args[2])}
	if len(args) > 3 {
		d.ShardingKey = strings.TrimSpace(args[3])
	}
	return d, nil
}

// closing returns the index of the parenthesis closing an already opened one in s, -1 if none.
func closing(s string) int {
	end := -1
	walk(s, 1, func(i int, c byte, depth int) bool {
		if c == ')' && depth == 0 {
			end = i
			return false
		}
		return true
	})
	return end
}

// name unquotes an identifier or string literal argument.
func name(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '\'' && s[len(s)-1] == '\'' || s[0] == '`' && s[len(s)-1] == '`') {
		return strings.ReplaceAll(s[1:len(s)-1], `\`+s[:1], s[:1])
	}
	return s
}
