// Package pagedcachetest shows how to prove, in a Go test, that a setup
// catches the 2026 incident: the test in this directory starts the bundled
// paged-cache server with the incident's preset (scaled down) and checks,
// from the server's own ground truth, that an over-capacity prompt is
// answered with another tenant's data, and that the guard refuses to send
// it. Run it with:
//
//	go test ./examples/pagedcache-test
package pagedcachetest
