package testsvc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ZooKeeperProcess is a private standalone ZooKeeper server (Debian's zookeeper package, 3.8)
// owned by one test.
type ZooKeeperProcess struct {
	// Addr is the host:port clients connect to.
	Addr string
	// Dir holds the server's config, data and log.
	Dir string
	server
}

// zooKeeperJars are the jars of /usr/share/java a standalone server needs: the server, its wire
// format, logging, metrics and netty. A short class path starts the JVM in about a second.
var zooKeeperJars = []string{
	"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar", "metrics-core.jar",
	"netty-handler.jar", "netty-common.jar", "netty-buffer.jar", "netty-transport.jar", "netty-codec.jar",
	"netty-resolver.jar", "netty-transport-native-epoll.jar", "netty-transport-native-unix-common.jar",
}

// zooKeeperCommand returns the java binary and the class path of the packaged server:
// WH_ZOOKEEPER_JARS names the jar directory (default /usr/share/java), WH_JAVA_BIN the JVM.
func zooKeeperCommand() (java, classPath string, err error) {
	java, err = findBinary("WH_JAVA_BIN", "java", "/usr/bin/java")
	if err != nil {
		return "", "", err
	}
	dir := "/usr/share/java"
	if v := os.Getenv("WH_ZOOKEEPER_JARS"); v != "" {
		dir = v
	}
	paths := make([]string, len(zooKeeperJars))
	for i, j := range zooKeeperJars {
		paths[i] = filepath.Join(dir, j)
		if _, err := os.Stat(paths[i]); err != nil {
			return "", "", fmt.Errorf("zookeeper: %w", err)
		}
	}
	return java, strings.Join(paths, ":"), nil
}

// StartZooKeeper starts a fresh standalone ZooKeeper on a free loopback port with its data in a
// temporary directory, waits until it answers "ruok" with "imok", and stops it in t.Cleanup. The
// JVM is kept small (96 MiB heap, serial GC).
func StartZooKeeper(t testing.TB) *ZooKeeperProcess {
	t.Helper()
	java, cp, err := zooKeeperCommand()
	if err != nil {
		Missing(t, "ZooKeeper not installed: run tests/deps/install.sh zookeeper (%v)", err)
	}
	dir := t.TempDir()
	zp := &ZooKeeperProcess{Dir: dir}
	zp.p = launch(t, "zookeeper", 1, func(ports []int) (*process, error) {
		zp.Addr = hostPort(ports[0])
		cfg := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(cfg, []byte(zooKeeperConfig(filepath.Join(dir, "data"), ports[0])), 0o644); err != nil {
			return nil, err
		}
		return &process{
			name:    "zookeeper",
			bin:     java,
			args:    append(zooKeeperJVMArgs(cp), cfg),
			dir:     dir,
			logPath: filepath.Join(dir, "zookeeper.log"),
			ready:   probeZooKeeper(zp.Addr),
		}, nil
	})
	zp.register(t)
	return zp
}

// zooKeeperJVMArgs are the java arguments before the config file.
func zooKeeperJVMArgs(classPath string) []string {
	return []string{
		"-Xmx96m", "-Xms16m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", classPath, "org.apache.zookeeper.server.ZooKeeperServerMain",
	}
}

// zooKeeperConfig renders a standalone zoo.cfg: loopback only, no admin server, the ruok
// command allowed for the readiness probe.
func zooKeeperConfig(dataDir string, port int) string {
	return fmt.Sprintf(`tickTime=2000
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,mntr
maxClientCnxns=0
`, dataDir, port)
}

// Stop stops the server gracefully: SIGTERM, then SIGKILL after ten seconds.
func (z *ZooKeeperProcess) Stop(t testing.TB) { t.Helper(); z.stopT(t) }

// Kill kills the server with SIGKILL and waits until it has exited.
func (z *ZooKeeperProcess) Kill(t testing.TB) { t.Helper(); z.killT(t) }

// Start starts the server again on the same data directory and port and waits until it is
// ready. It does nothing when the server is running.
func (z *ZooKeeperProcess) Start(t testing.TB) { t.Helper(); z.startT(t) }

// probeZooKeeper returns a probe that sends the four-letter command ruok and wants imok.
func probeZooKeeper(addr string) readyFunc {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.WriteString(c, "ruok"); err != nil {
			return err
		}
		b, err := io.ReadAll(c)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if string(b) != "imok" {
			return fmt.Errorf("zookeeper at %s answered %q to ruok", addr, b)
		}
		return nil
	}
}
