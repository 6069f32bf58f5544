package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"

	"github.com/wavehouse/wavehouse/internal/settings"
)

// jwksMaxBytes bounds a fetched key set.
const jwksMaxBytes = 1 << 20

// jwksCache holds each tenant's key set, fetched on first use, again once older than
// jwt.jwks_refresh, and again for a token whose kid it lacks, never more often than
// jwt.jwks_min_interval. A failed fetch keeps the previous keys.
type jwksCache struct {
	client *http.Client
	now    func() time.Time
	log    *slog.Logger

	mu   sync.Mutex
	sets map[string]*jwksEntry // by tenant and source
}

type jwksEntry struct {
	mu      sync.Mutex
	byKID   map[string]any
	all     []any
	fetched time.Time // last successful fetch
	tried   time.Time // last attempt
}

func newJWKSCache(client *http.Client, now func() time.Time, log *slog.Logger) *jwksCache {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return &jwksCache{client: client, now: now, log: log, sets: map[string]*jwksEntry{}}
}

// keys returns the public keys to try for kid (all keys when kid is empty).
func (c *jwksCache) keys(ctx context.Context, tenant string, cfg *settings.JWT, kid string) []any {
	src := cfg.JWKSURL + cfg.JWKSFile
	c.mu.Lock()
	e, ok := c.sets[tenant+"\x00"+src]
	if !ok {
		e = &jwksEntry{}
		c.sets[tenant+"\x00"+src] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.now()
	_, known := e.byKID[kid]
	stale := e.fetched.IsZero() || now.Sub(e.fetched) >= cfg.JWKSRefresh
	if (stale || (kid != "" && !known)) && (e.tried.IsZero() || now.Sub(e.tried) >= cfg.JWKSMinInterval) {
		e.tried = now
		byKID, all, err := c.fetch(ctx, cfg)
		if err != nil {
			c.log.WarnContext(ctx, "jwks fetch failed; previous keys stay in force", "tenant", tenant, "source", src, "error", err.Error())
		} else {
			e.byKID, e.all, e.fetched = byKID, all, now
		}
	}
	if kid == "" {
		return e.all
	}
	if k, ok := e.byKID[kid]; ok {
		return []any{k}
	}
	return nil
}

func (c *jwksCache) fetch(ctx context.Context, cfg *settings.JWT) (map[string]any, []any, error) {
	var body []byte
	if cfg.JWKSFile != "" {
		b, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			return nil, nil, err
		}
		body = b
	} else {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.JWKSURL, nil)
		if err != nil {
			return nil, nil, err
		}
		resp, err := c.client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("status %s", resp.Status)
		}
		if body, err = io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes)); err != nil {
			return nil, nil, err
		}
	}
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, nil, fmt.Errorf("parse key set: %w", err)
	}
	byKID, all := map[string]any{}, []any{}
	for _, m := range set.Keys {
		if m.USE != "" && m.USE != jwkset.UseSig {
			continue
		}
		j, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			continue // one unusable key (another algorithm, a private part) does not spoil the set
		}
		switch j.Key().(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
		default:
			continue
		}
		all = append(all, j.Key())
		if m.KID != "" {
			byKID[m.KID] = j.Key()
		}
	}
	return byKID, all, nil
}
