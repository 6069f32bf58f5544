package sqlscan

import (
	"errors"
	"strings"
	"testing"
)

// TestHostAccessRefuses lists operator statements that read the server's files, reach the
// network or run programs: each is refused and the error names what was found.
func TestHostAccessRefuses(t *testing.T) {
	for sql, names := range map[string]string{
		"SELECT * FROM file('/etc/passwd', 'LineAsString', 'x String')":                                                     "file",
		"select * from URL('http://169.254.169.254/latest/meta-data', CSV, 'x String')":                                     "URL",
		"SELECT * FROM s3('https://bucket.s3.amazonaws.com/k', 'CSV')":                                                      "s3",
		"SELECT * FROM s3Cluster('c', 'https://b/k', 'CSV')":                                                                "s3Cluster",
		"SELECT * FROM remoteSecure('10.0.0.1:9440', system.one)":                                                           "remoteSecure",
		"SELECT * FROM remote('10.0.0.1', default.t)":                                                                       "remote",
		"SELECT * FROM executable('x.sh', 'CSV', 'x String')":                                                               "executable",
		"SELECT * FROM mysql('db:3306', 'd', 't', 'u', 'p')":                                                                "mysql",
		"SELECT * FROM postgresql('db:5432', 'd', 't', 'u', 'p')":                                                           "postgresql",
		"SELECT * FROM hdfs('hdfs://nn/f', 'TSV', 'x String')":                                                              "hdfs",
		"SELECT * FROM jdbc('ds', 't')":                                                                                     "jdbc",
		"SELECT * FROM odbc('dsn', 't')":                                                                                    "odbc",
		"SELECT * FROM azureBlobStorage('conn', 'c', 'b')":                                                                  "azureBlobStorage",
		"INSERT INTO TABLE FUNCTION file('/tmp/x', 'CSV', 'x String') VALUES ('a')":                                         "file",
		"CREATE TABLE t (x String) ENGINE = URL('http://internal/x', CSV)":                                                  "URL",
		"CREATE TABLE t (x String) ENGINE=File(CSV, '/etc/passwd')":                                                         "File",
		"CREATE DICTIONARY d (k UInt64) PRIMARY KEY k SOURCE(HTTP(url 'http://x' format 'CSV')) LAYOUT(FLAT()) LIFETIME(0)": "HTTP",
		"SELECT * FROM `file`('/etc/passwd', 'LineAsString', 'x String')":                                                   "file",
		"SELECT 1 INTO OUTFILE '/tmp/x'":                                                                                    "OUTFILE",
		"INSERT INTO t FROM INFILE '/etc/passwd' FORMAT CSV":                                                                "INFILE",
		"SELECT * FROM (SELECT * FROM /* c */ file ('/etc/passwd', 'LineAsString', 'x String'))":                            "file",
	} {
		err := HostAccess(sql)
		if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), names) {
			t.Errorf("%s: %v, want a refusal naming %s", sql, err, names)
		}
	}
}

// TestHostAccessAccepts lists operator statements that stay inside the server's tables: names of
// host functions inside strings, comments, quoted identifiers or as plain columns count for
// nothing.
func TestHostAccessAccepts(t *testing.T) {
	for _, sql := range []string{
		"CREATE TABLE ev (id UInt64, file String, url String) ENGINE = MergeTree ORDER BY id",
		"SELECT file, url FROM ev WHERE url = 'file(/etc/passwd)'",
		"SELECT count() FROM numbers(10) -- file('/etc/passwd')",
		"SELECT domain(url), 'file'(1) FROM ev",
		"SELECT * FROM cluster('c', default.ev)",
		"ALTER TABLE ev DELETE WHERE id = 1",
		"SELECT * FROM system.tables",
	} {
		if err := HostAccess(sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
}
