package config

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/ilyakaznacheev/cleanenv"
	"gopkg.in/yaml.v3"
)

// EnvConfigPath names the variable that gives the config file when --config is not set.
const EnvConfigPath = "WH_CONFIG"

// isToolingEnv reports WH_* variables read by the test and build scripts, not by the server
// (WH_TEST_*, WH_TESTSVC_*, WH_DEPS_*, WH_*_BIN, WH_ROOT, WH_CACHE_DIR, WH_CLICKHOUSE_USERS_XML),
// and WH_CONFIG. They are accepted so that a developer's shell does not refuse boot; no config key
// has these names, and no server code reads them (TestServerReadsNoToolingVariable): a fault
// hook is a dependency, see docs/architecture.md.
func isToolingEnv(name string) bool {
	switch name {
	case EnvConfigPath, "WH_ROOT", "WH_CACHE_DIR", "WH_CLICKHOUSE_USERS_XML":
		return true
	}
	for _, p := range []string{"WH_TEST_", "WH_TESTSVC_", "WH_DEPS_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return strings.HasSuffix(name, "_BIN")
}

// Load reads the config file at path (none when path is empty), overlays the WH_* environment
// variables and fills derived defaults. It refuses unknown YAML keys and unknown WH_* variables,
// naming every one of them. It does not validate: call Validate.
func Load(path string) (Config, error) {
	cfg := Default()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("read config: %w", err)
		}
		if err := decodeYAML(data, &cfg); err != nil {
			return Config{}, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err := checkEnv(os.Environ()); err != nil {
		return Config{}, err
	}
	if err := cleanenv.ReadEnv(&cfg); err != nil {
		return Config{}, fmt.Errorf("environment: %w", err)
	}
	if err := cfg.fill(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// decodeYAML decodes data over cfg after checking that every key names a field.
func decodeYAML(data []byte, cfg *Config) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return err
	}
	if len(root.Content) == 0 {
		return nil
	}
	if unknown := unknownKeys(root.Content[0], reflect.TypeOf(*cfg), ""); len(unknown) > 0 {
		errs := make([]error, len(unknown))
		for i, u := range unknown {
			errs[i] = errors.New(u)
		}
		return errors.Join(errs...)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(cfg)
}

// unknownKeys walks a YAML mapping against a struct type and describes every key that matches
// no field.
func unknownKeys(n *yaml.Node, t reflect.Type, path string) []string {
	if n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		full := joinKey(path, key.Value)
		f, ok := fieldByYAML(t, key.Value)
		if !ok {
			out = append(out, fmt.Sprintf("unknown key %s (line %d): remove it or check its spelling in docs/configuration.md", full, key.Line))
			continue
		}
		out = append(out, unknownKeys(val, f.Type, full)...)
	}
	return out
}

func fieldByYAML(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// checkEnv refuses WH_* variables that configure nothing.
func checkEnv(environ []string) error {
	known := map[string]bool{}
	for _, f := range Fields() {
		known[f.Env] = true
	}
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "WH_") || known[name] || isToolingEnv(name) {
			continue
		}
		errs = append(errs, fmt.Errorf("unknown environment variable %s: unset it or check its name in docs/configuration.md", name))
	}
	return errors.Join(errs...)
}

// fill sets the defaults that depend on other keys.
func (c *Config) fill() error {
	if c.InstanceID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "wavehouse"
		}
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("instance_id: %w", err)
		}
		c.InstanceID = host + "-" + hex.EncodeToString(b[:])
	}
	if c.Store.CHDB.Path == "" {
		c.Store.CHDB.Path = filepath.Join(c.DataDir, "chdb")
	}
	if c.MQ.Embedded.Dir == "" {
		c.MQ.Embedded.Dir = filepath.Join(c.DataDir, "mq")
	}
	if c.Dedupe.Local.Dir == "" {
		c.Dedupe.Local.Dir = filepath.Join(c.DataDir, "dedupe")
	}
	if c.Coord.NATS.Bucket == "" {
		c.Coord.NATS.Bucket = c.MQ.Prefix + "_leases"
	}
	return nil
}
