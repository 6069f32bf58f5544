package natsmq_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/mq"
	"github.com/wavehouse/wavehouse/internal/mq/natsmq"
	"github.com/wavehouse/wavehouse/internal/testutil/testsvc"
)

// writeCert writes a self-signed certificate for 127.0.0.1 (its own CA) and its key as PEM files.
func writeCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wavehouse test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestTLSSettingsReachTheConnection runs against a nats-server that only speaks TLS: each of
// mq.nats.tls.enabled, ca_file and insecure_skip_verify changes what the connection does.
func TestTLSSettingsReachTheConnection(t *testing.T) {
	cert, key := writeCert(t)
	srv := testsvc.StartNATS(t, testsvc.WithNATSArgs("--tls", "--tlscert", cert, "--tlskey", key))
	base := natsmq.Config{URLs: []string{srv.URL}, Prefix: testsvc.UniqueName(t, "tls"), Partitions: 1, Replicas: 1, ManageTopology: true}
	start := func(tls natsmq.TLS) error {
		cfg := base
		cfg.TLS = tls
		q, err := natsmq.New(cfg, natsmq.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = q.Close(t.Context()) }()
		return q.Start(t.Context())
	}
	if err := start(natsmq.TLS{}); err == nil {
		t.Fatal("plain connection to a TLS-only server succeeded")
	}
	// enabled alone verifies against the system roots, which do not hold the test CA.
	if err := start(natsmq.TLS{Enabled: true}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("tls.enabled with system roots: %v, want a certificate verification error", err)
	}
	if err := start(natsmq.TLS{Enabled: true, InsecureSkipVerify: true}); err != nil {
		t.Fatalf("tls.insecure_skip_verify: %v", err)
	}
	if err := start(natsmq.TLS{CAFile: cert}); err != nil {
		t.Fatalf("tls.ca_file: %v", err)
	}
	q, err := natsmq.New(func() natsmq.Config { c := base; c.TLS = natsmq.TLS{Enabled: true, CAFile: cert}; return c }(), natsmq.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(t.Context()) })
	if _, err := q.Publish(t.Context(), mq.Record{Tenant: "t", Table: "x", Payload: []byte("over tls")}); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
}
