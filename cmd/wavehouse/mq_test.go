package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"gopkg.in/yaml.v3"

	"github.com/wavehouse/wavehouse/internal/app"
	"github.com/wavehouse/wavehouse/internal/config"
	"github.com/wavehouse/wavehouse/internal/mq/jsmq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

func runMQT(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMQ(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// manifestCleanup connects to url and deletes m's streams and buckets at cleanup.
func manifestCleanup(t *testing.T, url string, m jsmq.Manifest) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range m.Streams {
			_ = js.DeleteStream(context.Background(), s.Name)
		}
		for _, k := range m.KeyValues {
			_ = js.DeleteKeyValue(context.Background(), k.Bucket)
		}
	})
	return js
}

func TestMQManifestsNackIsMultiDocYAML(t *testing.T) {
	code, out, stderr := runMQT(t, "manifests", "--partitions", "3", "--prefix", "whx", "--replicas", "3", "--max-bytes", "1048576", "--format", "nack")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	dec := yaml.NewDecoder(strings.NewReader(out))
	kinds := map[string]int{}
	for {
		var doc struct {
			APIVersion string         `yaml:"apiVersion"`
			Kind       string         `yaml:"kind"`
			Spec       map[string]any `yaml:"spec"`
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("yaml: %v\n%s", err, out)
		}
		if doc.APIVersion != "jetstream.nats.io/v1beta2" {
			t.Fatalf("apiVersion %q", doc.APIVersion)
		}
		kinds[doc.Kind]++
		if doc.Kind == "Stream" && (doc.Spec["replicas"] != 3 || (doc.Spec["name"] != "whx_dlq" && doc.Spec["maxBytes"] != 1048576)) {
			t.Fatalf("stream spec %v", doc.Spec)
		}
	}
	if kinds["Stream"] != 4 || kinds["Consumer"] != 3 || kinds["KeyValue"] != 3 {
		t.Fatalf("kinds %v, want 4 streams (3 partitions + DLQ), 3 consumers, 3 key-value buckets (leases, batch journal, schemas)", kinds)
	}
}

func TestMQUsage(t *testing.T) {
	if code, _, _ := runMQT(t); code != 2 {
		t.Fatalf("no command: exit %d, want 2", code)
	}
	if code, _, _ := runMQT(t, "manifests", "--format", "toml"); code != 2 {
		t.Fatalf("bad format: exit %d, want 2", code)
	}
	if code, _, _ := runMQT(t, "verify"); code != 2 {
		t.Fatalf("verify without --url: exit %d, want 2", code)
	}
}

// TestMQManifestsJSONAppliedPassesVerify applies the JSON form to a real
// nats-server, checks that verify passes, then deletes one stream and checks
// that verify fails naming it.
func TestMQManifestsJSONAppliedPassesVerify(t *testing.T) {
	srv := testsvc.NATSServer(t)
	prefix := testsvc.UniqueName(t, "mqcli")
	flags := []string{"--partitions", "2", "--prefix", prefix, "--replicas", "1", "--max-bytes", "8388608"}
	code, out, stderr := runMQT(t, append([]string{"manifests", "--format", "json"}, flags...)...)
	if code != 0 {
		t.Fatalf("manifests exit %d: %s", code, stderr)
	}
	var m jsmq.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("json: %v", err)
	}
	js := manifestCleanup(t, srv.URL, m)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// Before applying, verify names what is missing.
	if code, out, _ := runMQT(t, append([]string{"verify", "--url", srv.URL}, flags...)...); code != 1 || !strings.Contains(out, prefix+"_in_0 is missing") {
		t.Fatalf("verify on an empty server: exit %d\n%s", code, out)
	}
	if err := m.Apply(ctx, js); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if code, out, stderr := runMQT(t, append([]string{"verify", "--url", srv.URL}, flags...)...); code != 0 {
		t.Fatalf("verify after apply: exit %d\n%s%s", code, out, stderr)
	}
	// Different flags (another max-bytes) are reported as a difference.
	if code, out, _ := runMQT(t, "verify", "--url", srv.URL, "--partitions", "2", "--prefix", prefix, "--replicas", "1", "--max-bytes", "1024"); code != 1 || !strings.Contains(out, "max_bytes") {
		t.Fatalf("verify with other max-bytes: exit %d\n%s", code, out)
	}
	missing := prefix + "_in_1"
	if err := js.DeleteStream(ctx, missing); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runMQT(t, append([]string{"verify", "--url", srv.URL}, flags...)...)
	if code != 1 || !strings.Contains(out, "stream "+missing+" is missing") {
		t.Fatalf("verify with %s deleted: exit %d\n%s", missing, code, out)
	}
	if strings.Contains(out, prefix+"_in_0 is missing") {
		t.Fatalf("verify reported a present stream missing:\n%s", out)
	}
}

// TestMQVerifyReportsStreamsBeyondPartitions: after lowering --partitions, verify names every
// partition stream beyond the count with its unacknowledged frames (drained by the ingest role:
// not a difference), and fails for one that holds frames but has no ingest consumer.
func TestMQVerifyReportsStreamsBeyondPartitions(t *testing.T) {
	srv := testsvc.NATSServer(t)
	prefix := testsvc.UniqueName(t, "mqx")
	nc, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	wide := natsmq.Config{Prefix: prefix, Partitions: 3, Replicas: 1}.Topology()
	if err := wide.Ensure(t.Context(), js); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range wide.Streams() {
			_ = js.DeleteStream(context.Background(), s.Name)
		}
		for _, k := range wide.KeyValues() {
			_ = js.DeleteKeyValue(context.Background(), k.Bucket)
		}
	})
	for range 2 {
		if _, err := js.Publish(t.Context(), prefix+".in.2.t.x", []byte("frame")); err != nil {
			t.Fatal(err)
		}
	}
	flags := []string{"verify", "--url", srv.URL, "--partitions", "1", "--prefix", prefix, "--replicas", "1"}
	code, out, stderr := runMQT(t, flags...)
	if code != 0 || !strings.Contains(out, "draining: stream "+prefix+"_in_2 (partition 2, beyond the 1 partitions) holds 2 unacknowledged frames") ||
		!strings.Contains(out, "drained: stream "+prefix+"_in_1") {
		t.Fatalf("verify with 1 partition over 3 streams: exit %d\n%s%s", code, out, stderr)
	}
	if err := js.DeleteConsumer(t.Context(), prefix+"_in_2", jsmq.ConsumerName); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runMQT(t, flags...); code != 1 || !strings.Contains(out, "stranded: stream "+prefix+"_in_2") {
		t.Fatalf("verify with a stranded stream: exit %d\n%s", code, out)
	}
}

// TestMQConfigIsWhatServeVerifies: manifests and verify read the same config file as serve, and
// the nats backend built from it by serve's mapping (app.NATSQueueConfig) boots on the topology
// the manifests created, without manage_topology. A flag still overrides its key.
func TestMQConfigIsWhatServeVerifies(t *testing.T) {
	srv := testsvc.NATSServer(t)
	prefix := testsvc.UniqueName(t, "mqcfg")
	path := filepath.Join(t.TempDir(), "config.yaml")
	body := fmt.Sprintf("mq:\n  backend: nats\n  prefix: %s\n  partitions: 2\n  ack_wait: 45s\n  nats:\n    urls: [%s]\n    replicas: 1\n    max_bytes: 8388608\n    max_ack_pending: 500\n", prefix, srv.URL)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runMQT(t, "manifests", "--config", path, "--format", "json")
	if code != 0 {
		t.Fatalf("manifests exit %d: %s", code, stderr)
	}
	var m jsmq.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Streams) != 3 || m.Streams[0].Name != prefix+"_in_0" || m.Streams[0].MaxBytes != 8388608 || m.Consumers[0].Config.AckWait != 45*time.Second || m.Consumers[0].Config.MaxAckPending != 500 {
		t.Fatalf("manifests do not follow the config: %+v", m)
	}
	js := manifestCleanup(t, srv.URL, m)
	if err := m.Apply(t.Context(), js); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runMQT(t, "verify", "--config", path); code != 0 {
		t.Fatalf("verify --config: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := runMQT(t, "verify", "--config", path, "--ack-wait", "10s"); code != 1 || !strings.Contains(out, "ack_wait is 45s, want 10s") {
		t.Fatalf("verify with an overriding flag: exit %d\n%s", code, out)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	q, err := natsmq.New(app.NATSQueueConfig(cfg.MQ), natsmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = q.Close(context.Background()) }()
	if err := q.Start(t.Context()); err != nil {
		t.Fatalf("serve's queue on the manifests' topology: %v", err)
	}
}
