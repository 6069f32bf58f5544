package settings

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wavehouse/wavehouse/internal/policy"
)

// JWT defaults and bounds.
const (
	DefaultJWTLeeway       = 30 * time.Second
	MaxJWTLeeway           = 5 * time.Minute
	DefaultJWTRoleClaim    = "role"
	DefaultJWKSRefresh     = 5 * time.Minute
	DefaultJWKSMinInterval = 10 * time.Second
	minJWKSInterval        = 100 * time.Millisecond
	minJWTSecretLen        = 32
)

// JWT is how a tenant verifies the JSON Web Tokens its end users carry. The tenant of a token
// is the tenant whose key verified it; the issuer only selects which tenant's keys to try.
type JWT struct {
	// Issuer is the required iss claim; unique across tenants.
	Issuer string
	// Audience is the value the aud claim must hold.
	Audience string
	// Leeway is the clock skew allowed on exp, nbf and iat.
	Leeway time.Duration
	// RoleClaim names the claim holding the token's role.
	RoleClaim string
	// Secrets are the HS256 secrets, read from their files when the settings were loaded.
	Secrets [][]byte
	// JWKSURL and JWKSFile name the key set of RS256/ES256 tokens (at most one of them).
	JWKSURL, JWKSFile string
	// JWKSRefresh is how long a fetched key set is trusted before it is fetched again.
	JWKSRefresh time.Duration
	// JWKSMinInterval is the shortest time between two fetches (a token with an unknown kid
	// fetches the set again, at most this often).
	JWKSMinInterval time.Duration
	// Roles maps a role claim value to what the token may do.
	Roles map[string]Role
}

// Role is what a token with that role may do: the same scopes and tables as an API key, query
// limits lower than the tenant's, and row and column policies per table.
type Role struct {
	Scopes []Scope
	Tables []string
	// MaxRows and MaxExecutionTime lower the tenant's max_result_rows and max_execution_time
	// for the role's queries (0: the tenant's).
	MaxRows          uint64
	MaxExecutionTime time.Duration
	// Policies are the role's policies by table; every table of a policy is one of Tables.
	Policies map[string]*policy.Table
}

// CORS is the cross-origin policy of a tenant: which browser origins may call the API with the
// tenant's credentials.
type CORS struct {
	// Origins are exact origins (https://app.example.com) or wildcard subdomains
	// (https://*.example.com), lower case.
	Origins []string
	// Methods are the methods a preflight allows (default GET, POST).
	Methods []string
	// Headers are the request headers a preflight allows (default Authorization, Content-Type,
	// Idempotency-Key, Last-Event-ID).
	Headers []string
	// MaxAge is how long a browser may cache a preflight (default 10m).
	MaxAge time.Duration
}

// AllowsOrigin reports whether origin matches one of c's origins. A wildcard matches one or
// more subdomain labels, never the bare domain.
func (c *CORS) AllowsOrigin(origin string) bool {
	if c == nil {
		return false
	}
	origin = strings.ToLower(origin)
	for _, o := range c.Origins {
		if o == origin {
			return true
		}
		prefix, suffix, wild := strings.Cut(o, "*")
		if !wild || !strings.HasPrefix(origin, prefix) || !strings.HasSuffix(origin, suffix) || len(origin) <= len(prefix)+len(suffix) {
			continue
		}
		if host := origin[len(prefix) : len(origin)-len(suffix)]; hostLabels(host) {
			return true
		}
	}
	return false
}

// hostLabels reports whether s is made of DNS label characters only, so that a wildcard cannot
// match across a port, path or userinfo.
func hostLabels(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return s[0] != '.' && s[0] != '-'
}

// CORSFor returns the union of the CORS policies of every tenant allowing origin: a preflight
// carries no credential, so it is answered for any tenant that allows the origin, and the
// actual request is then checked against its own tenant's policy.
func (s *Snapshot) CORSFor(origin string) (CORS, bool) {
	var u CORS
	found := false
	for _, name := range s.TenantNames() {
		c := s.tenants[name].CORS
		if !c.AllowsOrigin(origin) {
			continue
		}
		for _, m := range c.Methods {
			if !slices.Contains(u.Methods, m) {
				u.Methods = append(u.Methods, m)
			}
		}
		for _, h := range c.Headers {
			if !slices.ContainsFunc(u.Headers, func(x string) bool { return strings.EqualFold(x, h) }) {
				u.Headers = append(u.Headers, h)
			}
		}
		if !found || c.MaxAge < u.MaxAge {
			u.MaxAge = c.MaxAge
		}
		found = true
	}
	return u, found
}

// TenantByIssuer returns the tenant whose jwt.issuer is iss.
func (s *Snapshot) TenantByIssuer(iss string) (*Tenant, bool) {
	t, ok := s.issuers[iss]
	return t, ok
}

// Credentials counts what can authenticate a request: API keys plus tenants accepting JWTs.
// Anonymous access ends as soon as it is non-zero.
func (s *Snapshot) Credentials() int { return len(s.keys) + len(s.issuers) }

type jwtFile struct {
	Issuer          string              `yaml:"issuer"`
	Audience        string              `yaml:"audience"`
	Leeway          string              `yaml:"leeway"`
	RoleClaim       string              `yaml:"role_claim"`
	SecretFiles     []string            `yaml:"secret_files"`
	JWKSURL         string              `yaml:"jwks_url"`
	JWKSFile        string              `yaml:"jwks_file"`
	JWKSRefresh     string              `yaml:"jwks_refresh"`
	JWKSMinInterval string              `yaml:"jwks_min_interval"`
	Roles           map[string]roleFile `yaml:"roles"`
}

type roleFile struct {
	Scopes           []string              `yaml:"scopes"`
	Tables           []string              `yaml:"tables"`
	MaxRows          int64                 `yaml:"max_rows"`
	MaxExecutionTime string                `yaml:"max_execution_time"`
	Policies         map[string]policyFile `yaml:"policies"`
}

type policyFile struct {
	Columns     []string          `yaml:"columns"`
	DenyColumns []string          `yaml:"deny_columns"`
	Filter      string            `yaml:"filter"`
	Set         map[string]string `yaml:"set"`
}

type corsFile struct {
	Origins []string `yaml:"origins"`
	Methods []string `yaml:"methods"`
	Headers []string `yaml:"headers"`
	MaxAge  string   `yaml:"max_age"`
}

// blockFindings returns a function adding a finding on field of the tenant file's block to fs.
func blockFindings(fs *[]Finding, at findingAt, block string) func(field, format string, args ...any) {
	return func(field, format string, args ...any) {
		f := at(block+"."+field, block, field)
		f.Message = fmt.Sprintf(format, args...)
		*fs = append(*fs, f)
	}
}

func validateJWT(jf *jwtFile, at findingAt) (*JWT, []Finding) {
	var fs []Finding
	add := blockFindings(&fs, at, "jwt")
	j := &JWT{Issuer: jf.Issuer, Audience: jf.Audience, RoleClaim: jf.RoleClaim, JWKSURL: jf.JWKSURL, JWKSFile: jf.JWKSFile,
		Leeway: DefaultJWTLeeway, JWKSRefresh: DefaultJWKSRefresh, JWKSMinInterval: DefaultJWKSMinInterval, Roles: map[string]Role{}}
	if j.RoleClaim == "" {
		j.RoleClaim = DefaultJWTRoleClaim
	}
	if j.Issuer == "" {
		add("issuer", "missing: the iss claim your identity provider writes")
	}
	if j.Audience == "" {
		add("audience", "missing: the aud claim tokens for this tenant carry")
	}
	dur := func(field, v string, d *time.Duration, lo, hi time.Duration) {
		if v == "" {
			return
		}
		x, err := parseDuration(v)
		if err != nil || x < lo || x > hi {
			add(field, "%q: want a duration between %s and %s", v, lo, hi)
			return
		}
		*d = x
	}
	dur("leeway", jf.Leeway, &j.Leeway, 0, MaxJWTLeeway)
	dur("jwks_refresh", jf.JWKSRefresh, &j.JWKSRefresh, minJWKSInterval, 24*time.Hour)
	dur("jwks_min_interval", jf.JWKSMinInterval, &j.JWKSMinInterval, minJWKSInterval, time.Hour)
	if len(jf.SecretFiles) == 0 && j.JWKSURL == "" && j.JWKSFile == "" {
		add("secret_files", "missing: give secret_files (HS256), jwks_url or jwks_file (RS256, ES256)")
	}
	if j.JWKSURL != "" && j.JWKSFile != "" {
		add("jwks_file", "give jwks_url or jwks_file, not both")
	}
	if u, err := url.Parse(j.JWKSURL); j.JWKSURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		add("jwks_url", "%q: want an http(s) URL", j.JWKSURL)
	}
	if j.JWKSFile != "" {
		if st, err := os.Stat(j.JWKSFile); err != nil || st.IsDir() {
			add("jwks_file", "%q is not a readable file", j.JWKSFile)
		}
	}
	for i, p := range jf.SecretFiles {
		b, err := os.ReadFile(p)
		s := strings.TrimSpace(string(b))
		switch {
		case err != nil:
			add("secret_files", "secret_files[%d] %q is not a readable file", i, p)
		case len(s) < minJWTSecretLen:
			// Never quote the content.
			add("secret_files", "secret_files[%d] %q: the secret must be at least %d characters", i, p, minJWTSecretLen)
		default:
			j.Secrets = append(j.Secrets, []byte(s))
		}
	}
	if len(jf.Roles) == 0 {
		add("roles", "missing: map at least one role claim value to scopes")
	}
	for _, name := range slices.Sorted(maps.Keys(jf.Roles)) {
		rf := jf.Roles[name]
		r := Role{Tables: rf.Tables}
		if len(rf.Scopes) == 0 {
			add("roles", "roles.%s.scopes: missing: list ingest, query or stream", name)
		}
		for _, s := range rf.Scopes {
			sc := Scope(s)
			switch {
			case sc == ScopeAdmin:
				add("roles", "roles.%s.scopes: admin is for API keys, a token cannot hold it", name)
			case !sc.Valid():
				add("roles", "roles.%s.scopes: unknown scope %q: want ingest, query or stream", name, s)
			case !slices.Contains(r.Scopes, sc):
				r.Scopes = append(r.Scopes, sc)
			}
		}
		for _, tb := range rf.Tables {
			if !tableRE.MatchString(tb) {
				add("roles", "roles.%s.tables: %q is not a table name", name, tb)
			}
		}
		validateRoleLimits(&r, rf, name, add)
		r.Policies = validatePolicies(rf, name, add)
		j.Roles[name] = r
	}
	return j, fs
}

func validateRoleLimits(r *Role, rf roleFile, name string, add func(field, format string, args ...any)) {
	if rf.MaxRows < 0 {
		add("roles", "roles.%s.max_rows: %d: want a positive number of rows", name, rf.MaxRows)
	}
	r.MaxRows = uint64(max(rf.MaxRows, 0))
	if rf.MaxExecutionTime != "" {
		d, err := parseDuration(rf.MaxExecutionTime)
		if err != nil || d <= 0 {
			add("roles", "roles.%s.max_execution_time: %q: want a duration such as 5s", name, rf.MaxExecutionTime)
		}
		r.MaxExecutionTime = d
	}
}

// validatePolicies checks a role's policies: each names a table of the role's tables (a role
// with policies lists its tables, so that no view or other table reads around a policy),
// column names, a filter that parses and set values of the form {claim:name}.
func validatePolicies(rf roleFile, name string, add func(field, format string, args ...any)) map[string]*policy.Table {
	if len(rf.Policies) == 0 {
		return nil
	}
	out := map[string]*policy.Table{}
	for _, tb := range slices.Sorted(maps.Keys(rf.Policies)) {
		pf := rf.Policies[tb]
		at := fmt.Sprintf("roles.%s.policies.%s", name, tb)
		if !slices.Contains(rf.Tables, tb) {
			add("roles", "%s: %s is not one of roles.%s.tables; a role with policies lists every table it reads", at, tb, name)
		}
		p := &policy.Table{Columns: pf.Columns, DenyColumns: pf.DenyColumns, Set: map[string]string{}}
		if len(pf.Columns) > 0 && len(pf.DenyColumns) > 0 {
			add("roles", "%s: give columns (allowed) or deny_columns, not both", at)
		}
		for _, c := range slices.Concat(pf.Columns, pf.DenyColumns, slices.Collect(maps.Keys(pf.Set))) {
			if !tableRE.MatchString(c) {
				add("roles", "%s: %q is not a column name", at, c)
			}
		}
		if pf.Filter != "" {
			f, err := policy.ParseFilter(pf.Filter)
			if err != nil {
				add("roles", "%s.filter: %v", at, err)
			}
			p.Filter = f
		}
		for _, col := range slices.Sorted(maps.Keys(pf.Set)) {
			v := strings.TrimSpace(pf.Set[col])
			claim, ok := strings.CutPrefix(v, "{claim:")
			claim, ok2 := strings.CutSuffix(claim, "}")
			if !ok || !ok2 || strings.TrimSpace(claim) == "" {
				add("roles", "%s.set.%s: %q: want {claim:name}", at, col, v)
				continue
			}
			p.Set[col] = strings.TrimSpace(claim)
		}
		out[tb] = p
	}
	return out
}

func validateCORS(cf *corsFile, at findingAt) (*CORS, []Finding) {
	var fs []Finding
	add := blockFindings(&fs, at, "cors")
	c := &CORS{Methods: cf.Methods, Headers: cf.Headers, MaxAge: 10 * time.Minute}
	if len(c.Methods) == 0 {
		c.Methods = []string{http.MethodGet, http.MethodPost}
	}
	if len(c.Headers) == 0 {
		c.Headers = []string{"Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID"}
	}
	if len(cf.Origins) == 0 {
		add("origins", "missing: list the origins (https://app.example.com or https://*.example.com) allowed to call the API")
	}
	for _, o := range cf.Origins {
		o = strings.ToLower(o)
		u, err := url.Parse(strings.Replace(o, "*.", "x.", 1))
		switch {
		case o == "*" || strings.Count(o, "*") > 1 || (strings.Contains(o, "*") && !strings.Contains(o, "://*.")):
			add("origins", "%q: a wildcard must be a whole subdomain (https://*.example.com); * alone is not allowed", o)
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil:
			add("origins", "%q: want scheme://host[:port], no path", o)
		default:
			c.Origins = append(c.Origins, o)
		}
	}
	for i, m := range c.Methods {
		c.Methods[i] = strings.ToUpper(m)
	}
	if cf.MaxAge != "" {
		d, err := parseDuration(cf.MaxAge)
		if err != nil || d < 0 || d > 24*time.Hour {
			add("max_age", "%q: want a duration up to 24h", cf.MaxAge)
		}
		c.MaxAge = d
	}
	return c, fs
}
