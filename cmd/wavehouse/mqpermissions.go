package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/wavehouse/wavehouse/internal/app"
)

// mqPermissions runs `wavehouse mq permissions`: one NATS user per role with the least
// permissions it needs on the topology the config implies, as a nats-server authorization block
// (conf) or as JSON (the pub/sub permissions of a user JWT, for nsc or another account tool).
func mqPermissions(args []string, stdout, stderr io.Writer) int {
	f := newMQFlags("permissions")
	format := f.fs.String("format", "conf", "output format: conf (nats-server authorization block) or json (per-role pub/sub permissions)")
	prefix := f.fs.String("user-prefix", "wavehouse-", "user names are this prefix followed by the role")
	cfg, code, ok := f.load(args, stderr)
	if !ok {
		return code
	}
	if cfg.MQ.Backend != "nats" {
		fmt.Fprintf(stderr, "wavehouse mq permissions: mq.backend is %q: permissions are for mq.backend nats\n", cfg.MQ.Backend)
		return 2
	}
	users := app.NATSUsers(cfg, *prefix)
	switch *format {
	case "conf":
		_, _ = stdout.Write(app.RenderNATSAuthorization(users))
	case "json":
		b, err := json.MarshalIndent(users, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "wavehouse mq permissions: %v\n", err)
			return 1
		}
		_, _ = stdout.Write(append(b, '\n'))
	default:
		fmt.Fprintf(stderr, "wavehouse mq permissions: --format %q: use conf or json\n", *format)
		return 2
	}
	return 0
}
