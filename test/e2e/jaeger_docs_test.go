//go:build e2e

package e2e

import (
	"net"
	"strconv"
	"testing"
)

// TestJaegerDocs runs docs/tracing.md's "Getting a Jaeger" block verbatim
// and waits for Jaeger's query API on the port the block names. It skips
// when one of the block's fixed ports is taken (another Jaeger on this
// machine); the suite's own processes never draw them (docPorts).
func TestJaegerDocs(t *testing.T) {
	for _, port := range docPorts() {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("%s is in use: %v", addr, err)
		}
		_ = l.Close()
	}
	b := blockAfter(t, "docs/tracing.md", "<!-- jaeger -->")
	runScript(t, b, b.script+`pid=$!
trap 'kill $pid' EXIT
for _ in $(seq 120); do
  curl -sf http://127.0.0.1:16686/api/services && exit 0
  sleep 0.5
done
echo "Jaeger's query API did not answer" >&2
exit 1
`)
}
