package access_test

import (
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/access"
)

func TestAllows(t *testing.T) {
	admin := longhaul.User{Principal: "owui/u1", ID: "u1", Email: "Root@Example.com", Role: "admin"}
	member := longhaul.User{Principal: "owui/u2", ID: "u2", Role: "user", Groups: []string{"film", "media"}}
	key := longhaul.User{Principal: "ci"}
	nobody := longhaul.User{}
	tests := []struct {
		name string
		rule *access.Rule
		want map[string]bool
	}{
		{"no rule", nil, map[string]bool{"admin": true, "member": true, "key": true, "nobody": true}},
		{"roles", &access.Rule{Roles: []string{"admin"}}, map[string]bool{"admin": true}},
		{"groups", &access.Rule{Groups: []string{"media"}}, map[string]bool{"member": true}},
		{"users by e-mail, any case", &access.Rule{Users: []string{"root@example.com"}}, map[string]bool{"admin": true}},
		{"users by id", &access.Rule{Users: []string{"u2"}}, map[string]bool{"member": true}},
		{"users by key name", &access.Rule{Users: []string{"ci"}}, map[string]bool{"key": true}},
		{"any match", &access.Rule{Roles: []string{"admin"}, Groups: []string{"film"}}, map[string]bool{"admin": true, "member": true}},
		{"an empty role matches nothing", &access.Rule{Roles: []string{""}}, map[string]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, u := range map[string]longhaul.User{"admin": admin, "member": member, "key": key, "nobody": nobody} {
				if got := tt.rule.Allows(u); got != tt.want[name] {
					t.Errorf("%s: Allows = %v, want %v", name, got, tt.want[name])
				}
			}
		})
	}
	if access.AllowsAll(admin, &access.Rule{Roles: []string{"admin"}}, &access.Rule{Groups: []string{"media"}}) {
		t.Error("AllowsAll admitted a user one rule refuses")
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		rule *access.Rule
		want string // "" = valid
	}{
		{nil, ""},
		{&access.Rule{Roles: []string{"admin"}}, ""},
		{&access.Rule{}, "names no roles, groups or users"},
		{&access.Rule{Roles: []string{}}, "allow.roles is an empty list"},
		{&access.Rule{Groups: []string{" media"}}, "allow.groups[0]"},
		{&access.Rule{Users: []string{""}}, "allow.users[0]"},
	}
	for _, tt := range tests {
		errs := tt.rule.Check()
		switch {
		case tt.want == "" && len(errs) > 0:
			t.Errorf("%v: unexpected problems %v", tt.rule, errs)
		case tt.want != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.want)):
			t.Errorf("%v: problems %v, want one containing %q", tt.rule, errs, tt.want)
		}
	}
}
