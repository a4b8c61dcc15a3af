package skills_test

import (
	"fmt"
	"strings"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul/skills"
)

// registered stands in for the tool registry.
func registered(name string) bool {
	return name == "current_time" || name == "web_fetch" || name == "web_search" || strings.HasPrefix(name, "memory_") || strings.HasPrefix(name, "backlog_") || name == "document_search"
}

func ExampleLoad() {
	operator := fstest.MapFS{
		"cook.md": {Data: []byte("---\nagent: cook\ndescription: Suggests recipes\nskills: [web_reading]\n---\nYou suggest recipes.\n")},
	}
	catalog, err := skills.Load(skills.Builtin(), skills.Named("/etc/longhaul/skills", operator))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := catalog.Validate(registered); err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range catalog.Agents() {
		fmt.Printf("%-10s %-8s %v %s\n", a.ID, a.Mode, catalog.AgentTools(a), a.Source)
	}
	// Output:
	// assistant  chat     [backlog_add backlog_close backlog_list backlog_update current_time document_search web_fetch web_search] builtin/assistant.md
	// cook       chat     [web_fetch] /etc/longhaul/skills/cook.md
	// media-agent chat     [seerr_details seerr_discover seerr_my_requests seerr_request_media seerr_search seerr_submit_issue seerr_trending] builtin/media-agent.md
	// naked      chat     [] builtin/naked.md
	// researcher agentic  [current_time document_search web_fetch web_search] builtin/researcher.md
}

func ExampleLoad_problems() {
	operator := fstest.MapFS{
		"agents/bad.md": {Data: []byte("---\nagent: bad\ndescription: Bad\ncolour: red\nmode: fast\nskills: [nope]\n---\nPrompt.\n")},
		"media.md":      {Data: []byte("---\nskill: media\ndescription: Media\ncommand: request\n---\nAsk for titles.\n")},
	}
	_, err := skills.Load(skills.Builtin(), operator)
	fmt.Println(err)
	// Output:
	// skills: agents/bad.md: unknown key "colour" (line 4)
	// skills: agents/bad.md: agent "bad" has mode "fast": use chat, agentic or auto
	// skills: agents/bad.md: agent "bad" uses skill "nope", which does not exist
	// skills: media.md: command "request" must start with "/"
}
