package skills_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/skills"
)

func TestAllowRules(t *testing.T) {
	good := fstest.MapFS{
		"ops.md":  {Data: []byte("---\nagent: ops\ndescription: Ops\nskills: [staff, open]\nallow: {roles: [admin], groups: [ops]}\n---\nOps.\n")},
		"desk.md": {Data: []byte("---\nagent: desk\ndescription: Desk\nskills: [staff, open]\n---\nDesk.\n")},
		"staff.md": {Data: []byte("---\nskill: staff\ndescription: Staff\ntools: [report]\nallow:\n  users: [ann@example.com]\n" +
			"http_tools:\n  - name: report\n    description: Report\n    url: http://reports.example/today\n    allow: {roles: [admin]}\n---\nStaff fragment.\n")},
		"open.md": {Data: []byte("---\nskill: open\ndescription: Open\ntools: [current_time]\n---\nOpen fragment.\n")},
	}
	cat, err := skills.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	ann := longhaul.User{Email: "ann@example.com", Role: "user"}
	admin := longhaul.User{Role: "admin"}
	var ids []string
	for _, a := range cat.AgentsFor(ann) {
		ids = append(ids, a.ID)
	}
	if strings.Join(ids, ",") != "desk" {
		t.Errorf("Ann's agents = %v, want [desk]", ids)
	}
	if _, ok := cat.AgentFor("ops", ann); ok {
		t.Error("Ann found ops")
	}
	desk, _ := cat.AgentFor("desk", admin)
	if got := cat.AgentToolsFor(desk, admin); strings.Join(got, ",") != "current_time" {
		t.Errorf("the admin's desk tools = %v: the staff skill is Ann's alone", got)
	}
	if got := cat.AgentToolsFor(desk, ann); strings.Join(got, ",") != "current_time,report" {
		t.Errorf("Ann's desk tools = %v", got)
	}
	if p := cat.SystemPromptFor(desk, admin); strings.Contains(p, "Staff fragment") || !strings.Contains(p, "Open fragment") {
		t.Errorf("the admin's prompt = %q: want the open fragment only", p)
	}
	if h := cat.HTTPTools()[0]; h.Allow == nil || h.Allow.Allows(ann) || !h.Allow.Allows(admin) {
		t.Errorf("report's rule = %v", h.Allow)
	}

	for name, tt := range map[string]struct {
		file string
		want error
		text string
	}{
		"empty rule":    {"---\nagent: a\ndescription: A\nallow: {}\n---\nA.\n", skills.ErrBadAllow, "names no roles, groups or users"},
		"empty list":    {"---\nagent: a\ndescription: A\nallow: {roles: []}\n---\nA.\n", skills.ErrBadAllow, "allow.roles is an empty list"},
		"empty entry":   {"---\nskill: s\ndescription: S\nallow: {groups: [\"\"]}\n---\nS.\n", skills.ErrBadAllow, "allow.groups[0]"},
		"unknown key":   {"---\nagent: a\ndescription: A\nallow: {role: [admin]}\n---\nA.\n", skills.ErrUnknownKey, `unknown key "role" in allow`},
		"not a mapping": {"---\nagent: a\ndescription: A\nallow: [admin]\n---\nA.\n", skills.ErrInvalid, "allow: bad value"},
		"http tool": {"---\nskill: s\ndescription: S\ntools: [t]\nhttp_tools:\n  - name: t\n    description: T\n    url: http://x.example/\n    allow: {users: []}\n---\nS.\n",
			skills.ErrBadAllow, `http tool "t": allow.users is an empty list`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := skills.Load(fstest.MapFS{"f.md": {Data: []byte(tt.file)}})
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) || !strings.Contains(err.Error(), "f.md") {
				t.Errorf("err = %v, want %v naming f.md and %q", err, tt.want, tt.text)
			}
		})
	}
}
