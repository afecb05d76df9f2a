// Package apirequests reads kube-apiserver's request counters
// (apiserver_request_total from its /metrics), the API writes and reads
// that test/scale and test/peers diff around a run to count what a
// system costs the API server.
package apirequests
