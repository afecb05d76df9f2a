// Command coredns is CoreDNS v1.15 with only the plugins the real node of
// test/cluster needs: kubernetes (cluster.local from the API server),
// template (NXDOMAIN for every other name, so no query leaves the machine:
// there is no forward plugin at all), and bind, ready, health, errors, log.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

// The order is the order a query passes the plugins (CoreDNS's plugin.cfg);
// a plugin not listed here is not compiled in.
func init() {
	dnsserver.Directives = []string{
		"bind", "ready", "health", "errors", "log", "template", "kubernetes",
	}
}

func main() { coremain.Run() }
