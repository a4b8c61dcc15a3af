package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/access"
)

// Allows reports whether u may be offered and call the server's tool
// remote (the server's own name for it): the server's "allow" and the
// tool's own ("tools": {remote: {"allow": …}}) must both admit u; an
// absent rule admits everyone.
func (c ServerConfig) Allows(remote string, u longhaul.User) bool {
	return access.AllowsAll(u, c.Allow, c.ToolAllow[remote])
}

// decodeAllow reads an "allow" rule: {"roles": [...], "groups": [...],
// "users": [...]}, each key optional, none empty, no other key.
func decodeAllow(raw json.RawMessage) (*access.Rule, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return nil, errors.New(`must be an object such as {"roles": ["admin"]}`)
	}
	r := &access.Rule{}
	for _, f := range fields {
		var list *[]string
		switch f.key {
		case "roles":
			list = &r.Roles
		case "groups":
			list = &r.Groups
		case "users":
			list = &r.Users
		default:
			return nil, fmt.Errorf("%q: unknown key (known keys: roles, groups, users)", f.key)
		}
		if isNull(f.value) || json.Unmarshal(f.value, list) != nil {
			return nil, fmt.Errorf("%q: must be an array of strings", f.key)
		}
		if *list == nil {
			*list = []string{}
		}
	}
	if errs := r.Check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// decodeToolRules reads a server's "tools": {"<tool>": {"allow": {…}}},
// the rules of single tools by the server's names for them.
func decodeToolRules(raw json.RawMessage) (map[string]*access.Rule, error) {
	tools, err := objectFields(raw)
	if err != nil {
		return nil, errors.New(`must be an object of the server's tool names, such as {"delete_file": {"allow": {"roles": ["admin"]}}}`)
	}
	out := make(map[string]*access.Rule, len(tools))
	for _, t := range tools {
		if strings.TrimSpace(t.key) == "" {
			return nil, errors.New("names an empty tool")
		}
		fields, err := objectFields(t.value)
		if err != nil {
			return nil, fmt.Errorf("%q: must be an object such as {\"allow\": {\"roles\": [\"admin\"]}}", t.key)
		}
		for _, f := range fields {
			if f.key != "allow" {
				return nil, fmt.Errorf("%q: %q: unknown key (known keys: allow)", t.key, f.key)
			}
			r, err := decodeAllow(f.value)
			if err != nil {
				return nil, fmt.Errorf("%q: \"allow\": %w", t.key, err)
			}
			out[t.key] = r
		}
	}
	return out, nil
}
