package web_test

import (
	"net/http"
	"testing"

	"github.com/longhaul-dev/longhaul/api/web"
)

// TestKindsTable: every kind of error is in the one table, with a status,
// a type and a code; the constructors write what the table says, and a
// 503 says when to retry.
func TestKindsTable(t *testing.T) {
	codes := map[string]web.Kind{}
	for k := web.KindBadRequest; k <= web.KindMethodNotAllowed; k++ {
		sh, ok := web.Kinds[k]
		if !ok || sh.Status < 400 || sh.Type == "" || sh.Code == "" {
			t.Errorf("kind %d: %+v, %v; want a status, a type and a code", k, sh, ok)
		}
		if other, dup := codes[sh.Code]; dup {
			t.Errorf("kinds %d and %d share the code %q", other, k, sh.Code)
		}
		codes[sh.Code] = k
	}
	if e := web.New(web.KindUnavailable, "x"); e.Status != http.StatusServiceUnavailable || e.RetryAfter != web.RetryUnavailable {
		t.Errorf("a 503: %+v", e)
	}
	e, _ := web.ModelNotFound("no agent").(*web.Error)
	if want := web.Kinds[web.KindModelNotFound]; e == nil || e.Status != want.Status || e.Code != want.Code || e.Message != "no agent" {
		t.Errorf("ModelNotFound = %+v, want the table's %+v", e, want)
	}
	if e := web.New(web.Kind(999), "?"); e.Status != http.StatusInternalServerError {
		t.Errorf("an unknown kind is written as %d, want 500", e.Status)
	}
}
