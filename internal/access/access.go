// Package access decides who may see and use an agent, a skill or a tool:
// the allow: rules of agent and skill files, of a skill's http_tools
// entries and of MCP servers and their single tools. A rule names roles,
// groups and users; a user that matches any one of them is allowed, and no
// rule at all allows everyone.
//
// The package exists so that the API (which hides agents) and the worker
// (which filters the tools offered to the model and refuses the others in
// CallTool) judge a user by the same code, from the same user: the one the
// API resolved from the request's credential (internal/identity) and put in
// the workflow's input.
package access

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/longhaul-dev/longhaul"
)

// Rule is one allow: rule. A nil *Rule allows everyone.
type Rule struct {
	// Roles are user roles, as Open WebUI's signed token (claim "role"),
	// its X-OpenWebUI-User-Role header or an API key's own role give them
	// ("admin", "user").
	Roles []string `json:"roles,omitempty"`
	// Groups are group names, as the operator's groups header gives them.
	Groups []string `json:"groups,omitempty"`
	// Users are users by e-mail address (compared without regard to case),
	// Open WebUI user id, or principal name (an API key's name).
	Users []string `json:"users,omitempty"`
}

// Allows reports whether r admits u: every user when r is nil, else a user
// whose role is one of Roles, who belongs to one of Groups or who is one
// of Users.
func (r *Rule) Allows(u longhaul.User) bool {
	if r == nil {
		return true
	}
	if u.Role != "" && slices.Contains(r.Roles, u.Role) {
		return true
	}
	for _, g := range u.Groups {
		if g != "" && slices.Contains(r.Groups, g) {
			return true
		}
	}
	for _, name := range r.Users {
		switch {
		case u.Principal != "" && name == u.Principal,
			u.ID != "" && name == u.ID,
			u.Email != "" && strings.EqualFold(name, u.Email):
			return true
		}
	}
	return false
}

// AllowsAll reports whether every rule of rules admits u (nil rules admit
// everyone): an MCP tool is usable when its server's rule and its own both
// admit the user.
func AllowsAll(u longhaul.User, rules ...*Rule) bool {
	for _, r := range rules {
		if !r.Allows(u) {
			return false
		}
	}
	return true
}

// Check returns the problems of a rule as written in a file: a rule that
// names no one (omit it to allow everyone), an empty list, or an empty or
// blank entry. A nil rule has none.
func (r *Rule) Check() []error {
	if r == nil {
		return nil
	}
	var problems []error
	if r.Roles == nil && r.Groups == nil && r.Users == nil {
		problems = append(problems, errors.New("allow names no roles, groups or users: omit allow to let everyone in"))
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{"roles", r.Roles}, {"groups", r.Groups}, {"users", r.Users}} {
		if l.list != nil && len(l.list) == 0 {
			problems = append(problems, fmt.Errorf("allow.%s is an empty list: name at least one, or leave the key out", l.key))
		}
		for i, v := range l.list {
			if strings.TrimSpace(v) == "" || v != strings.TrimSpace(v) {
				problems = append(problems, fmt.Errorf("allow.%s[%d] %q is empty or has surrounding spaces", l.key, i, v))
			}
		}
	}
	return problems
}

// String describes r for errors and the Temporal UI, e.g.
// "roles=[admin] groups=[media]"; "everyone" for nil.
func (r *Rule) String() string {
	if r == nil {
		return "everyone"
	}
	var parts []string
	if r.Roles != nil {
		parts = append(parts, fmt.Sprintf("roles=%v", r.Roles))
	}
	if r.Groups != nil {
		parts = append(parts, fmt.Sprintf("groups=%v", r.Groups))
	}
	if r.Users != nil {
		parts = append(parts, fmt.Sprintf("users=%v", r.Users))
	}
	return strings.Join(parts, " ")
}

// Describe names what rules judge of u, for the Temporal UI and logs:
// "role=user groups=[media]". It holds no e-mail address or secret.
func Describe(u longhaul.User) string {
	role := u.Role
	if role == "" {
		role = "none"
	}
	return fmt.Sprintf("role=%s groups=%v", role, u.Groups)
}

// Restricted is implemented by tools that only some users may call: an
// HTTP tool with its own allow:, an MCP tool whose server (or whose entry
// in the server's tools) has one.
type Restricted interface {
	// Allows reports whether u may be offered and may call the tool.
	Allows(u longhaul.User) bool
}

// ToolAllows reports whether u may use t: true unless t is Restricted and
// refuses u.
func ToolAllows(t any, u longhaul.User) bool {
	r, ok := t.(Restricted)
	return !ok || r.Allows(u)
}
