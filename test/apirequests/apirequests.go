package apirequests

import (
	"bufio"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// Sample is one apiserver_request_total series and its count.
type Sample struct {
	Verb, Resource, Subresource, Group string
	// DryRun: checked by admission and validation, stored nowhere.
	DryRun bool
	Value  float64
}

// Write reports whether the sample's verb changes something.
func (s Sample) Write() bool { return writeVerbs[strings.ToUpper(s.Verb)] }

var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true, "CREATE": true, "UPDATE": true, "DELETECOLLECTION": true}

// Read returns every apiserver_request_total sample the API server at cfg
// reports now.
func Read(cfg *rest.Config) ([]Sample, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []Sample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		l := promLabels(line)
		fs := strings.Fields(line)
		v, _ := strconv.ParseFloat(fs[len(fs)-1], 64)
		out = append(out, Sample{Verb: l["verb"], Resource: l["resource"], Subresource: l["subresource"], Group: l["group"], DryRun: l["dry_run"] != "", Value: v})
	}
	return out, sc.Err()
}

// promLabels parses the labels of one Prometheus text-format sample.
func promLabels(line string) map[string]string {
	m := map[string]string{}
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if open < 0 || end < open {
		return m
	}
	for _, kv := range strings.Split(line[open+1:end], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = strings.Trim(v, `"`)
		}
	}
	return m
}
