package config

import (
	"bytes"
	"net/url"
	"reflect"

	"gopkg.in/yaml.v3"
)

// Redacted returns a copy safe to print: credentials embedded in URLs are masked. Secrets are
// given as files, so only their paths appear in a Config; their content is never read here.
func (c Config) Redacted() Config {
	out := c
	out.MQ.NATS.URLs = make([]string, len(c.MQ.NATS.URLs))
	for i, u := range c.MQ.NATS.URLs {
		out.MQ.NATS.URLs[i] = redactURL(u)
	}
	return out
}

// YAML renders the redacted effective configuration.
func (c Config) YAML() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c.Redacted()); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if err != nil {
			return "<unparseable url>"
		}
		return raw
	}
	u.User = url.User("REDACTED")
	return u.String()
}

func equalValues(a, b any) bool { return reflect.DeepEqual(a, b) }
