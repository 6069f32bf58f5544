package sqlscan

import (
	"fmt"
)

// hostFunctions are table functions, table engines and dictionary sources that read or write
// the server's files, reach the network, or run programs on the server. Matched on the
// lower-cased name followed by '('.
var hostFunctions = map[string]bool{
	"file": true, "filecluster": true, "filelog": true, "url": true, "urlcluster": true,
	"remote": true, "remotesecure": true, "executable": true, "executablepool": true,
	"mysql": true, "postgresql": true, "materializedpostgresql": true, "jdbc": true, "odbc": true,
	"mongodb": true, "redis": true, "sqlite": true, "kafka": true, "rabbitmq": true, "nats": true,
	"http": true,
}

// hostPrefixes extend hostFunctions to families of names (s3Cluster, hdfsCluster, azureBlobStorage, …).
var hostPrefixes = []string{"s3", "gcs", "oss", "cosn", "azure", "hdfs", "iceberg", "deltalake", "hudi", "paimon"}

// HostAccess reports whether sql uses a table function, table engine or dictionary source that
// touches the server's host or the network (file, url, s3, remote, executable, mysql, …), or
// INTO OUTFILE / FROM INFILE. Operator SQL runs anything else; these are refused unless the
// operator allowed them. The error wraps [ErrRejected] and names what was found.
func HostAccess(sql string) error {
	toks, err := tokenize(sql)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	for i, t := range toks {
		if t.is("OUTFILE") || t.is("INFILE") {
			return fmt.Errorf("%w: INTO OUTFILE and FROM INFILE touch the server's files", ErrRejected)
		}
		name := t.text
		if t.kind == tokQuoted {
			name = t.value // `file`(…) is the same table function
		}
		if (t.kind == tokWord || t.kind == tokQuoted) && i+1 < len(toks) && toks[i+1].isPunct("(") && touchesHost(name) {
			return fmt.Errorf("%w: %s(…) touches the server's files or the network", ErrRejected, name)
		}
	}
	return nil
}

// touchesHost reports whether a function, engine or source name touches the host or the network.
func touchesHost(name string) bool { return named(name, hostFunctions, hostPrefixes) }
