package jsmq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"gopkg.in/yaml.v3"
)

// Manifest is the JSON form of a Topology: every stream entry is exactly
// the configuration `nats stream add --config FILE` accepts, every consumer
// entry the one `nats consumer add STREAM --config FILE` accepts.
type Manifest struct {
	Streams   []jetstream.StreamConfig   `json:"streams"`
	Consumers []ConsumerSpec             `json:"consumers"`
	KeyValues []jetstream.KeyValueConfig `json:"key_value"`
}

// Manifest returns t's JSON manifest.
func (t Topology) Manifest() Manifest {
	return Manifest{Streams: t.Streams(), Consumers: t.Consumers(), KeyValues: t.KeyValues()}
}

// RenderJSON renders t's manifest as indented JSON.
func (t Topology) RenderJSON() ([]byte, error) {
	b, err := json.MarshalIndent(t.Manifest(), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Apply creates or updates everything in m on the server (what an operator
// does with the nats CLI from the JSON form).
func (m Manifest) Apply(ctx context.Context, js jetstream.JetStream) error {
	for _, sc := range m.Streams {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("stream %s: %w", sc.Name, err)
		}
	}
	for _, cs := range m.Consumers {
		if _, err := js.CreateOrUpdateConsumer(ctx, cs.Stream, cs.Config); err != nil {
			return fmt.Errorf("consumer %s on stream %s: %w", cs.Config.Durable, cs.Stream, err)
		}
	}
	for _, kc := range m.KeyValues {
		if _, err := js.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("key-value bucket %s: %w", kc.Bucket, err)
		}
	}
	return nil
}

// nack (NATS JetStream controller) custom resources, jetstream.nats.io/v1beta2.
type nackResource struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Metadata   nackMetadata `yaml:"metadata"`
	Spec       any          `yaml:"spec"`
}

type nackMetadata struct {
	Name string `yaml:"name"`
}

type nackStream struct {
	Name              string   `yaml:"name"`
	Description       string   `yaml:"description,omitempty"`
	Subjects          []string `yaml:"subjects"`
	Retention         string   `yaml:"retention"`
	Storage           string   `yaml:"storage"`
	Replicas          int      `yaml:"replicas"`
	Discard           string   `yaml:"discard"`
	MaxBytes          int64    `yaml:"maxBytes"`
	MaxMsgs           int64    `yaml:"maxMsgs"`
	MaxMsgSize        int32    `yaml:"maxMsgSize"`
	MaxConsumers      int      `yaml:"maxConsumers"`
	MaxMsgsPerSubject int64    `yaml:"maxMsgsPerSubject"`
	DuplicateWindow   string   `yaml:"duplicateWindow"`
	AllowDirect       bool     `yaml:"allowDirect"`
}

type nackConsumer struct {
	StreamName    string `yaml:"streamName"`
	DurableName   string `yaml:"durableName"`
	Description   string `yaml:"description,omitempty"`
	DeliverPolicy string `yaml:"deliverPolicy"`
	AckPolicy     string `yaml:"ackPolicy"`
	AckWait       string `yaml:"ackWait"`
	MaxDeliver    int    `yaml:"maxDeliver"`
	MaxAckPending int    `yaml:"maxAckPending"`
	ReplayPolicy  string `yaml:"replayPolicy"`
	Replicas      int    `yaml:"replicas"`
}

type nackKeyValue struct {
	Bucket      string `yaml:"bucket"`
	Description string `yaml:"description,omitempty"`
	History     int    `yaml:"history"`
	TTL         string `yaml:"ttl,omitempty"`
	Storage     string `yaml:"storage"`
	Replicas    int    `yaml:"replicas"`
}

// k8sName turns a JetStream name into a Kubernetes object name.
func k8sName(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "_", "-"))
}

// RenderNack renders t as multi-document YAML of nack resources.
func (t Topology) RenderNack() ([]byte, error) {
	const api = "jetstream.nats.io/v1beta2"
	var docs []nackResource
	for _, s := range t.Streams() {
		docs = append(docs, nackResource{APIVersion: api, Kind: "Stream", Metadata: nackMetadata{Name: k8sName(s.Name)}, Spec: nackStream{
			Name: s.Name, Description: s.Description, Subjects: s.Subjects, Retention: "limits", Storage: "file",
			Replicas: s.Replicas, Discard: "new", MaxBytes: s.MaxBytes, MaxMsgs: s.MaxMsgs, MaxMsgSize: s.MaxMsgSize,
			MaxConsumers: s.MaxConsumers, MaxMsgsPerSubject: s.MaxMsgsPerSubject, DuplicateWindow: s.Duplicates.String(),
			AllowDirect: s.AllowDirect,
		}})
	}
	for _, c := range t.Consumers() {
		docs = append(docs, nackResource{APIVersion: api, Kind: "Consumer", Metadata: nackMetadata{Name: k8sName(c.Stream + "-" + c.Config.Durable)}, Spec: nackConsumer{
			StreamName: c.Stream, DurableName: c.Config.Durable, Description: c.Config.Description,
			DeliverPolicy: "all", AckPolicy: "explicit", AckWait: c.Config.AckWait.String(),
			MaxDeliver: c.Config.MaxDeliver, MaxAckPending: c.Config.MaxAckPending, ReplayPolicy: "instant",
			Replicas: c.Config.Replicas,
		}})
	}
	for _, k := range t.KeyValues() {
		docs = append(docs, nackResource{APIVersion: api, Kind: "KeyValue", Metadata: nackMetadata{Name: k8sName(k.Bucket)}, Spec: nackKeyValue{
			Bucket: k.Bucket, Description: k.Description, History: int(k.History), TTL: ttlString(k.TTL), Storage: "file", Replicas: k.Replicas,
		}})
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func ttlString(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}
