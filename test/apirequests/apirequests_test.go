package apirequests

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPromLabels(t *testing.T) {
	got := promLabels(`apiserver_request_total{code="201",dry_run="All",group="",resource="pods",subresource="binding",verb="POST"} 12`)
	want := map[string]string{"code": "201", "dry_run": "All", "group": "", "resource": "pods", "subresource": "binding", "verb": "POST"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if !(Sample{Verb: "patch"}).Write() || (Sample{Verb: "LIST"}).Write() {
		t.Error("PATCH is a write, LIST is not")
	}
}
