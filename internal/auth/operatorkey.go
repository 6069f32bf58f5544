package auth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// GeneratedOperatorKeyName is the file under data_dir that holds the operator key the gateway
// generates when auth.operator_key_file is empty.
const GeneratedOperatorKeyName = "operator.key"

// operatorKeyBytes is the randomness of a generated operator key: 256 bits, 43 characters once
// encoded.
const operatorKeyBytes = 32

// GeneratedOperatorKeyFile returns the path of the operator key generated under dataDir.
func GeneratedOperatorKeyFile(dataDir string) string {
	return filepath.Join(dataDir, GeneratedOperatorKeyName)
}

// EnsureOperatorKeyFile creates path holding a fresh random operator key, mode 0600 (its
// directory 0700 when missing), unless path already exists, which is left as it is (New
// validates it). It reports whether it created the file. The key is written to a temporary file
// and linked into place, so that a concurrent reader sees the whole key or no file, and of two
// processes racing on one path one key wins.
func EnsureOperatorKeyFile(path string) (created bool, err error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("auth: operator key %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("auth: generating the operator key in %s: %w", path, err)
	}
	raw := make([]byte, operatorKeyBytes)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails (it crashes the program instead)
	tmp, err := os.CreateTemp(dir, "."+GeneratedOperatorKeyName+".*")
	if err != nil {
		return false, fmt.Errorf("auth: generating the operator key in %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(base64.RawURLEncoding.EncodeToString(raw) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path) // CreateTemp made it 0600
	}
	switch {
	case errors.Is(err, os.ErrExist):
		return false, nil // another process generated it first
	case err != nil:
		return false, fmt.Errorf("auth: generating the operator key in %s: %w", path, err)
	}
	return true, nil
}
