package settings

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// tenantsDir is the sub-directory of the settings directory that holds one entry per tenant.
const tenantsDir = "tenants"

// sharedPipesDir is the sub-directory of the settings directory whose pipes every tenant has.
const sharedPipesDir = "pipes"

// file is one file read from the settings directory.
type file struct {
	rel  string // slash-separated, relative to the settings directory
	data []byte
}

// readTree reads every file that belongs to the settings directory layout, sorted by path, and
// returns findings for entries that do not fit it. Entries starting with "." are skipped.
func readTree(dir string) ([]file, []Finding, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, err
	}
	if !st.IsDir() {
		return nil, nil, &fs.PathError{Op: "open", Path: dir, Err: errors.New("not a directory")}
	}
	files, findings := readPipes(filepath.Join(dir, sharedPipesDir), sharedPipesDir)
	root := filepath.Join(dir, tenantsDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
		return files, findings, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		full := filepath.Join(root, name)
		info, err := os.Stat(full) // follows symlinks (ConfigMap mounts)
		if err != nil {
			findings = append(findings, Finding{File: path.Join(tenantsDir, name), Message: "cannot read: " + err.Error()})
			continue
		}
		switch {
		case info.IsDir():
			f, fnd := readTenantFolder(root, name)
			files, findings = append(files, f...), append(findings, fnd...)
		case strings.HasSuffix(name, ".yaml"):
			data, err := os.ReadFile(full)
			if err != nil {
				findings = append(findings, Finding{File: path.Join(tenantsDir, name), Message: "cannot read: " + err.Error()})
				continue
			}
			files = append(files, file{rel: path.Join(tenantsDir, name), data: data})
		default:
			findings = append(findings, Finding{File: path.Join(tenantsDir, name),
				Message: "not a tenant file: want tenants/<tenant>.yaml or tenants/<tenant>/tenant.yaml"})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, findings, nil
}

func readTenantFolder(root, name string) ([]file, []Finding) {
	var files []file
	var findings []Finding
	rel := path.Join(tenantsDir, name, "tenant.yaml")
	data, err := os.ReadFile(filepath.Join(root, name, "tenant.yaml"))
	if err != nil {
		findings = append(findings, Finding{File: rel, Message: "cannot read tenant file: " + err.Error()})
	} else {
		files = append(files, file{rel: rel, data: data})
	}
	pf, pfnd := readPipes(filepath.Join(root, name, "pipes"), path.Join(tenantsDir, name, "pipes"))
	return append(files, pf...), append(findings, pfnd...)
}

// readPipes reads the *.sql files of the pipes directory dir, named rel relative to the settings
// directory; a missing directory has no pipes.
func readPipes(dir, rel string) ([]file, []Finding) {
	var files []file
	var findings []Finding
	pipes, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		findings = append(findings, Finding{File: rel, Message: "cannot read: " + err.Error()})
	}
	for _, p := range pipes {
		pn := p.Name()
		prel := path.Join(rel, pn)
		if strings.HasPrefix(pn, ".") {
			continue
		}
		if !strings.HasSuffix(pn, ".sql") || p.IsDir() {
			findings = append(findings, Finding{File: prel, Message: "not a pipe file: want pipes/<pipe>.sql"})
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, pn))
		if err != nil {
			findings = append(findings, Finding{File: prel, Message: "cannot read: " + err.Error()})
			continue
		}
		files = append(files, file{rel: prel, data: data})
	}
	return files, findings
}

// fingerprint hashes the paths and contents of files, so any edit, addition or removal changes it.
func fingerprint(files []file) string {
	h := sha256.New()
	var n [8]byte
	for _, f := range files {
		binary.BigEndian.PutUint64(n[:], uint64(len(f.rel)))
		h.Write(n[:])
		h.Write([]byte(f.rel))
		binary.BigEndian.PutUint64(n[:], uint64(len(f.data)))
		h.Write(n[:])
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))
}
