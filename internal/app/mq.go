package app

import (
	"fmt"

	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/mq/embeddedmq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
)

// buildMQ creates the selected queue backend; its Start connects (or starts the in-process
// server) and reconciles or verifies the topology.
func (a *App) buildMQ() (Component, error) {
	switch a.cfg.MQ.Backend {
	case "embedded":
		q, err := embeddedmq.New(EmbeddedQueueConfig(a.cfg.MQ, a.queueBudget), embeddedmq.Deps{Registerer: a.reg, Log: a.log})
		if err != nil {
			return nil, err
		}
		a.queue = q
		return newComponent(compMQ, q.Start, q.Run, q.Close), nil
	case "nats":
		q, err := natsmq.New(NATSQueueConfig(a.cfg.MQ), natsmq.Deps{Registerer: a.reg, Log: a.log})
		if err != nil {
			return nil, err
		}
		a.queue = q
		a.natsQueue = q
		return newComponent(compMQ, q.Start, q.Run, q.Close), nil
	}
	return nil, fmt.Errorf("mq.backend %q is not built in", a.cfg.MQ.Backend)
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

// queueBudget is a tenant's queue byte budget from its settings (queue_max_bytes); 0 leaves the
// boot value (mq.embedded.tenant_max_bytes) in force.
func (a *App) queueBudget(tenant string) int64 {
	if a.settings == nil {
		return 0
	}
	if t, ok := a.settings.Current().Tenant(tenant); ok {
		return t.Limits.QueueMaxBytes
	}
	return 0
}
