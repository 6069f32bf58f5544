package config

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/wavehouse/wavehouse/internal/limits"
)

// keyRef matches a dotted name under a top-level section of the boot config: a candidate config
// key such as mq.embedded.sync or store.clickhouse.tls.ca_file.
var keyRef = regexp.MustCompile(`(server|ops|log|auth|limits|idempotency|ingest|stream|sweeper|store|mq|cache|dedupe|coord)((?:\.[a-z0-9_]+)+)`)

var configType = reflect.TypeOf(Config{})

// fileExt lists the final segments that make a dotted name a file name (ingest.yaml), not a key.
var fileExt = map[string]bool{"yaml": true, "yml": true, "md": true, "json": true, "go": true, "so": true, "txt": true}

// keyRefs returns the candidate keys in text: names not glued to a Go selector or a path
// (c.mq.partitions, stream.withDefaults, internal/mq.x) and not file names.
func keyRefs(text string) []string {
	var out []string
	for _, m := range keyRef.FindAllStringIndex(text, -1) {
		if m[0] > 0 && strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-", rune(text[m[0]-1])) {
			continue
		}
		if m[1] < len(text) && strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_(", rune(text[m[1]])) {
			continue
		}
		k := text[m[0]:m[1]]
		if fileExt[k[strings.LastIndexByte(k, '.')+1:]] {
			continue
		}
		out = append(out, k)
	}
	return out
}

// accepted reports whether `config check` accepts key in a config file, as a leaf or a block: it
// resolves every segment with the field lookup Load's unknown-key check uses.
func accepted(key string) bool {
	t := configType
	for _, seg := range strings.Split(key, ".") {
		if t.Kind() != reflect.Struct {
			return false
		}
		f, ok := fieldByYAML(t, seg)
		if !ok {
			return false
		}
		t = f.Type
	}
	return true
}

// codeIdentifiers returns the two-segment names the Go source uses as a whole string literal:
// the HTTP error codes (ingest.body_too_large, store.unavailable) share the sections' names.
func codeIdentifiers(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	// The limiter builds its codes at run time: limits.<kind>.
	for _, k := range []limits.Kind{limits.KindRequests, limits.KindRows, limits.KindQueries} {
		out["limits."+string(k)] = true
	}
	walkGo(t, func(_ string, tok token.Token, lit string) {
		if tok != token.STRING {
			return
		}
		s := strings.Trim(lit, "\"`")
		if refs := keyRefs(s); len(refs) == 1 && refs[0] == s && strings.Count(s, ".") == 1 {
			out[s] = true
		}
	})
	return out
}

// walkGo calls fn for every string literal and comment of the non-test Go files under internal/
// and cmd/.
func walkGo(t *testing.T, fn func(path string, tok token.Token, lit string)) {
	t.Helper()
	for _, root := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fset := token.NewFileSet()
			var s scanner.Scanner
			s.Init(fset.AddFile(path, -1, len(src)), src, nil, scanner.ScanComments)
			for {
				_, tok, lit := s.Scan()
				if tok == token.EOF {
					return nil
				}
				if tok == token.STRING || tok == token.COMMENT {
					fn(path, tok, lit)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func reportUnknown(t *testing.T, what string, bad map[string][]string) {
	t.Helper()
	keys := make([]string, 0, len(bad))
	for k := range bad {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Errorf("%s names %s, which config check refuses (see docs/configuration.md)", strings.Join(bad[k], ", "), k)
	}
	if len(keys) > 0 {
		t.Logf("%d unknown key(s) in %s", len(keys), what)
	}
}

// TestDocumentedKeysExist: every config key a page under docs/ names in backticks is accepted by
// `config check`, so no page documents a key the binary refuses. Two-segment names the code uses
// as error codes are not keys.
func TestDocumentedKeysExist(t *testing.T) {
	codes := codeIdentifiers(t)
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs pages: %v", err)
	}
	inline := regexp.MustCompile("`([^`\n]+)`")
	bad := map[string][]string{}
	for _, p := range pages {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range inline.FindAllStringSubmatch(string(raw), -1) {
			for _, k := range keyRefs(m[1]) {
				if !accepted(k) && !codes[k] {
					bad[k] = append(bad[k], filepath.Base(p))
				}
			}
		}
	}
	reportUnknown(t, "docs/*.md", bad)
}

// TestSourceNamesRealKeys: comments and messages in the Go source (an error naming the key to
// change, a doc comment saying which key sets a field) name only keys config check accepts.
func TestSourceNamesRealKeys(t *testing.T) {
	codes := codeIdentifiers(t)
	bad := map[string][]string{}
	walkGo(t, func(path string, _ token.Token, lit string) {
		for _, k := range keyRefs(lit) {
			if !accepted(k) && !codes[k] {
				rel, _ := filepath.Rel("../..", path)
				bad[k] = append(bad[k], rel)
			}
		}
	})
	reportUnknown(t, "the Go source", bad)
}

// TestEveryKeyDocumented: every key config check accepts has its row in docs/configuration.md.
func TestEveryKeyDocumented(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Fields() {
		if !strings.Contains(string(raw), "| `"+f.Key+"` | `"+f.Env+"` |") {
			t.Errorf("docs/configuration.md has no row for %s", f.Key)
		}
	}
}

// TestKeyChecker proves the checker refuses what it should: a key under a backend block that
// does not exist, a leaf used as a block, and accepts leaves and blocks.
func TestKeyChecker(t *testing.T) {
	for key, want := range map[string]bool{
		"mq.embedded.sync": true, "mq.nats.tls": true, "mq.nats.tls.insecure_skip_verify": true, "store": true,
		"mq.embedded.max_record_bytes": false, "mq.embedded.duplicate_window": false, "mq.partitions.x": false, "store.clickhouse.addr": false,
	} {
		if got := accepted(key); got != want {
			t.Errorf("accepted(%s) = %v, want %v", key, got, want)
		}
	}
	got := keyRefs("`mq.nats.urls`, c.mq.prefix, stream.withDefaults, ingest.yaml, (mq.embedded in config.yaml)")
	if want := []string{"mq.nats.urls", "mq.embedded"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("keyRefs = %v, want %v", got, want)
	}
}
