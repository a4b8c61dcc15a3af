package mcp

import (
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
)

func TestConfigAllow(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
		"files": {"command": "files-server", "allow": {"roles": ["admin"], "groups": ["ops"]},
		          "tools": {"write_file": {"allow": {"roles": ["admin"]}}}},
		"open": {"command": "open-server"}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	admin := longhaul.User{Role: "admin"}
	op := longhaul.User{Role: "user", Groups: []string{"ops"}}
	user := longhaul.User{Role: "user"}
	files := cfg.Servers["files"]
	for _, c := range []struct {
		u      longhaul.User
		remote string
		want   bool
	}{
		{admin, "read_file", true}, {admin, "write_file", true},
		{op, "read_file", true}, {op, "write_file", false},
		{user, "read_file", false}, {user, "write_file", false},
	} {
		if got := files.Allows(c.remote, c.u); got != c.want {
			t.Errorf("files.Allows(%s, %+v) = %v, want %v", c.remote, c.u, got, c.want)
		}
	}
	if !cfg.Servers["open"].Allows("anything", user) {
		t.Error("a server without allow refused a user")
	}

	for _, bad := range []struct{ json, want string }{
		{`{"mcpServers": {"s": {"command": "x", "allow": {}}}}`, "names no roles, groups or users"},
		{`{"mcpServers": {"s": {"command": "x", "allow": {"roles": []}}}}`, "allow.roles is an empty list"},
		{`{"mcpServers": {"s": {"command": "x", "allow": {"role": ["admin"]}}}}`, `"role": unknown key`},
		{`{"mcpServers": {"s": {"command": "x", "allow": ["admin"]}}}`, "must be an object"},
		{`{"mcpServers": {"s": {"command": "x", "tools": {"t": {"approve": true}}}}}`, `"approve": unknown key (known keys: allow)`},
		{`{"mcpServers": {"s": {"command": "x", "tools": {"t": {"allow": {"users": [""]}}}}}}`, "allow.users[0]"},
	} {
		_, err := ParseConfig([]byte(bad.json))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want %q", bad.json, err, bad.want)
		}
	}
}
