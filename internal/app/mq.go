package app

import (
	"fmt"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/settings"

	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
)

// buildMQ creates the selected queue backend; its Start connects (or starts the in-process
// server) and reconciles or verifies the topology.
func buildMQ(e env, budget func(tenant string) int64) (mq.Queue, Component, error) {
	switch c := e.cfg.MQ; c.Backend {
	case "embedded":
		q, err := embeddedmq.New(EmbeddedQueueConfig(c, budget), embeddedmq.Deps{Registerer: e.reg, Log: e.log})
		if err != nil {
			return nil, nil, err
		}
		return q, newComponent(compMQ, q.Start, q.Run, q.Close), nil
	case "nats":
		q, err := natsmq.New(NATSQueueConfig(c), natsmq.Deps{Registerer: e.reg, Log: e.log})
		if err != nil {
			return nil, nil, err
		}
		return q, newComponent(compMQ, q.Start, q.Run, q.Close), nil
	}
	return nil, nil, fmt.Errorf("mq.backend %q is not built in", e.cfg.MQ.Backend)
}

// EmbeddedQueueConfig maps the mq block to the embedded backend's options; budget returns a
// tenant's own queue budget (nil: none).
func EmbeddedQueueConfig(c config.MQ, budget func(tenant string) int64) embeddedmq.Config {
	return embeddedmq.Config{
		Dir: c.Embedded.Dir, Sync: c.Embedded.Sync, SyncInterval: c.Embedded.SyncInterval.D(),
		Prefix: c.Prefix, Partitions: c.Partitions, AckWait: c.AckWait.D(),
		MaxBytes: unlimited(c.Embedded.MaxBytes), TenantMaxBytes: unlimited(c.Embedded.TenantMaxBytes),
		TenantBudget: budget,
	}
}

// NATSQueueConfig maps the mq block to the nats backend's options. serve builds its queue from
// it, and `wavehouse mq manifests|verify` render and check the topology it implies, so the
// manifests an operator applies are the ones serve verifies at boot.
func NATSQueueConfig(c config.MQ) natsmq.Config {
	n := c.NATS
	return natsmq.Config{
		URLs: n.URLs, CredsFile: n.CredsFile, NKeySeedFile: n.NKeySeedFile, User: n.User, PasswordFile: n.PasswordFile,
		TLS: natsmq.TLS{
			Enabled: n.TLS.Enabled, CAFile: n.TLS.CAFile, CertFile: n.TLS.CertFile, KeyFile: n.TLS.KeyFile,
			InsecureSkipVerify: n.TLS.InsecureSkipVerify,
		},
		ManageTopology: n.ManageTopology, Prefix: c.Prefix, Partitions: c.Partitions, Replicas: n.Replicas, AckWait: c.AckWait.D(),
		MaxBytes: unlimited(n.MaxBytes), DLQMaxBytes: unlimited(n.DLQMaxBytes),
		DuplicateWindow: n.DuplicateWindow.D(), MaxAckPending: n.MaxAckPending,
	}
}

// unlimited maps the config's "0: no limit" to the queue's -1 (0 there means its default).
func unlimited(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// queueBudget reads a tenant's queue byte budget from its settings (queue_max_bytes); 0 leaves
// the boot value (mq.embedded.tenant_max_bytes) in force, as does a process without settings.
func queueBudget(mgr *settings.Manager) func(tenant string) int64 {
	return func(tenant string) int64 {
		if mgr == nil {
			return 0
		}
		if t, ok := mgr.Current().Tenant(tenant); ok {
			return t.Limits.QueueMaxBytes
		}
		return 0
	}
}
