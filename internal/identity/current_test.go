package identity_test

import (
	"errors"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/identity"
)

// TestScheduleOwnerDemotedOrRemoved: a user stored when a schedule was
// made is re-resolved against the keys of now: a demoted key's principal
// has its new role, a removed key's principal is gone, a proxy user keeps
// what its proxy last said.
func TestScheduleOwnerDemotedOrRemoved(t *testing.T) {
	keys, err := identity.ParseKeys([]string{"ops:s1", "ann:s2:role=admin"}, []string{"owui:s3"})
	if err != nil {
		t.Fatal(err)
	}
	r := identity.Resolver{Keys: keys}
	stored := longhaul.User{Principal: "ops", Role: "admin"}
	if got, err := r.Current(stored); err != nil || got.Role != "" || got.Principal != "ops" {
		t.Errorf("a demoted admin = %+v, %v; want no role", got, err)
	}
	if got, err := r.Current(longhaul.User{Principal: "ann"}); err != nil || got.Role != "admin" {
		t.Errorf("a promoted key = %+v, %v", got, err)
	}
	for _, u := range []longhaul.User{{Principal: "gone", Role: "admin"}, {}, {Principal: "owui"}, {Principal: "ops/u1"}} {
		if _, err := r.Current(u); !errors.Is(err, identity.ErrOwnerGone) {
			t.Errorf("Current(%+v) = %v, want ErrOwnerGone", u, err)
		}
	}
	proxied := longhaul.User{Principal: "owui/u1", ID: "u1", Role: "user", Groups: []string{"g"}}
	if got, err := r.Current(proxied); err != nil || got.Role != "user" || len(got.Groups) != 1 {
		t.Errorf("a proxy user = %+v, %v", got, err)
	}
	if got, err := (&identity.Resolver{}).Current(stored); err != nil || got.Role != "admin" {
		t.Errorf("with no keys = %+v, %v", got, err)
	}
}
