package testsvc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wavehouse/wavehouse/internal/testutil/poll"
)

// TestHelperHoldRedis is not a test on its own: run by
// TestChildDiesWithTestBinary in a separate test binary process, it starts a
// Redis server, writes its address to a file and waits to be killed.
func TestHelperHoldRedis(t *testing.T) {
	out := os.Getenv("WH_TESTSVC_HELPER_OUT")
	if out == "" {
		t.Skip("helper process for TestChildDiesWithTestBinary")
	}
	r := StartRedis(t)
	writeFile(t, out+".tmp", r.Addr)
	if err := os.Rename(out+".tmp", out); err != nil {
		t.Fatal(err)
	}
	<-t.Context().Done() // the parent kills this process with SIGKILL
}

func TestChildDiesWithTestBinary(t *testing.T) {
	t.Parallel()
	if _, err := findBinary("WH_REDIS_SERVER_BIN", "redis-server", "/usr/bin/redis-server"); err != nil {
		Missing(t, "redis-server not installed: run tests/deps/install.sh redis (%v)", err)
	}
	out := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldRedis$", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), "WH_TESTSVC_HELPER_OUT="+out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var addr string
	poll.Until(t, 60*time.Second, "the helper reporting its Redis address", func() bool {
		b, err := os.ReadFile(out)
		addr = string(b)
		return err == nil
	})
	if err := probeRedis(addr)(ctx); err != nil {
		t.Fatalf("helper's Redis not answering: %v", err)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs in the helper
		t.Fatal(err)
	}
	_ = cmd.Wait()
	poll.Until(t, 60*time.Second, "Redis at "+addr+" gone with its killed test binary", func() bool { return probeTCP(addr)(ctx) != nil })
}
