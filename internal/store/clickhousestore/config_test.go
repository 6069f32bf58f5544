package clickhousestore

import (
	"strings"
	"testing"
	"time"
)

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := Config{
		Endpoint:     Endpoint{Addr: []string{"no-port"}, TLS: TLSConfig{CertFile: "c.pem"}},
		Tenants:      map[string]Endpoint{"acme": {Addr: []string{"x"}}},
		DialTimeout:  -time.Second,
		MaxOpenConns: 2, MaxIdleConns: 3,
		Compression: "brotli",
	}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, key := range []string{"store.clickhouse.addrs", "store.clickhouse.tls", `Tenants["acme"].Addr`,
		"store.clickhouse.dial_timeout", "MaxIdleConns", "Compression"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error does not name %s:\n%v", key, err)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config (all defaults) refused: %v", err)
	}
}

func TestTenantEndpointInheritsDefaults(t *testing.T) {
	s, err := New(Config{
		Endpoint: Endpoint{Addr: []string{"ch:9000"}, Username: "svc"},
		Tenants:  map[string]Endpoint{"acme": {PasswordFile: "/run/acme"}, "big": {Addr: []string{"ch-big:9000"}, Username: "big"}},
	}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if e := s.endpoint("acme"); e.Addr[0] != "ch:9000" || e.Username != "svc" || e.PasswordFile != "/run/acme" {
		t.Errorf("acme endpoint %+v", e)
	}
	if e := s.endpoint("big"); e.Addr[0] != "ch-big:9000" || e.Username != "big" {
		t.Errorf("big endpoint %+v", e)
	}
	if e := s.endpoint("other"); e.Addr[0] != "ch:9000" {
		t.Errorf("default endpoint %+v", e)
	}
}
