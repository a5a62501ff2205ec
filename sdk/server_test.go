package sdk_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func newServer(t testing.TB, h http.Handler) string {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}
