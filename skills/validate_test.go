package skills

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// agentMD returns an agent file with the given frontmatter lines and body.
func agentMD(front, body string) string { return "---\n" + front + "---\n" + body }

// okSkill is a valid skill used by the rows below.
const okSkill = "---\nskill: ok\ndescription: OK\ntools: [web_fetch]\n---\nOK.\n"

// httpSkill returns a skill file declaring one HTTP tool with the given
// extra entry lines (indented under the list item).
func httpSkill(id, entry string) string {
	return fmt.Sprintf("---\nskill: %s\ndescription: HTTP\ntools: [web_fetch]\nhttp_tools:\n  - name: fetch_x\n    description: X\n    url: https://x.example/${X_KEY}\n%s---\nUse it.\n", id, entry)
}

func TestProblems(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		wantErr  error
		wantFile string // the file the problem must name
		wantMsg  string // a substring of the message
		wantLine int    // when not 0, the line the problem must report
		count    int    // number of problems; 1 when 0
	}{
		// Frontmatter and file kind.
		{name: "missing frontmatter", files: map[string]string{"a.md": "# Just markdown\n"},
			wantErr: ErrFrontmatter, wantFile: "a.md", wantMsg: `missing frontmatter: the first line must be "---"`},
		{name: "frontmatter not on the first line", files: map[string]string{"a.md": "\n---\nagent: a\ndescription: A\n---\n"},
			wantErr: ErrFrontmatter, wantFile: "a.md", wantMsg: "missing frontmatter"},
		{name: "unclosed frontmatter", files: map[string]string{"a.md": "---\nagent: a\ndescription: A\nHello\n"},
			wantErr: ErrFrontmatter, wantFile: "a.md", wantMsg: "unclosed frontmatter"},
		{name: "only an opening line", files: map[string]string{"a.md": "---"},
			wantErr: ErrFrontmatter, wantFile: "a.md", wantMsg: "unclosed frontmatter"},
		{name: "invalid yaml", files: map[string]string{"a.md": "---\nagent: a\ndescription: [unclosed\n---\n"},
			wantErr: ErrFrontmatter, wantFile: "a.md", wantMsg: "invalid YAML"},
		{name: "a second yaml document", files: map[string]string{"a.md": "---\nagent: a\ndescription: A\n--- more\n---\n"},
			wantErr: ErrFrontmatter, wantFile: "a.md", wantMsg: "invalid YAML: data after the document"},
		{name: "frontmatter not a mapping", files: map[string]string{"a.md": "---\n- agent\n- skill\n---\n"},
			wantErr: ErrFrontmatter, wantFile: "a.md", wantMsg: "must be a mapping"},
		{name: "empty frontmatter", files: map[string]string{"a.md": "---\n---\nHello\n"},
			wantErr: ErrFileKind, wantFile: "a.md", wantMsg: "frontmatter is empty"},
		{name: "comments-only frontmatter", files: map[string]string{"a.md": "---\n# nothing here\n---\nHello\n"},
			wantErr: ErrFileKind, wantFile: "a.md", wantMsg: "frontmatter is empty"},
		{name: "duplicate key", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\ndescription: B\n", "")},
			wantErr: ErrInvalid, wantFile: "a.md", wantMsg: `key "description" appears twice (first on line 3)`, wantLine: 4},
		{name: "both agent and skill", files: map[string]string{"a.md": "---\nagent: a\nskill: a\ndescription: A\n---\nX\n"},
			wantErr: ErrFileKind, wantFile: "a.md", wantMsg: `both "agent:" and "skill:"`},
		{name: "neither agent nor skill", files: map[string]string{"a.md": "---\ndescription: A\n---\nX\n"},
			wantErr: ErrFileKind, wantFile: "a.md", wantMsg: `neither "agent:" nor "skill:"`},

		// Keys and values.
		{name: "unknown role in models", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nmodels: {plan: x, compose: y}\n", "")},
			wantErr: ErrUnknownKey, wantFile: "a.md", wantMsg: `unknown key "compose" in models`},
		{name: "language other than auto", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nlanguage: sv\n", "")},
			wantErr: ErrBadLanguage, wantFile: "a.md", wantMsg: `has language "sv": use auto`},
		{name: "reason_in without language", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nreason_in: en\n", "")},
			wantErr: ErrBadLanguage, wantFile: "a.md", wantMsg: "reason_in without language: auto"},
		{name: "reason_in not a code", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nlanguage: auto\nreason_in: English\n", "")},
			wantErr: ErrBadLanguage, wantFile: "a.md", wantMsg: `reason_in "English"`},
		{name: "unknown agent key", files: map[string]string{"agents/bad.md": agentMD("agent: bad\ndescription: B\ncolour: red\n", "")},
			wantErr: ErrUnknownKey, wantFile: "agents/bad.md", wantMsg: `skills: agents/bad.md: unknown key "colour"`, wantLine: 4},
		{name: "skill key in an agent", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\ntools: [web_fetch]\n", "")},
			wantErr: ErrUnknownKey, wantFile: "a.md", wantMsg: `unknown key "tools"`, wantLine: 4},
		{name: "agent key in a skill", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nmode: chat\n---\nS.\n"},
			wantErr: ErrUnknownKey, wantFile: "s.md", wantMsg: `unknown key "mode"`, wantLine: 4},
		{name: "unknown http tool key", files: map[string]string{"s.md": httpSkill("s", "    verb: GET\n")},
			wantErr: ErrUnknownKey, wantFile: "s.md", wantMsg: `unknown key "verb" in http_tools[0]`, wantLine: 9},
		{name: "value of the wrong type", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nmax_turns: lots\n", "")},
			wantErr: ErrInvalid, wantFile: "a.md", wantMsg: `max_turns: bad value: got "lots", want an integer`, wantLine: 4},
		{name: "mapping where a duration is wanted", files: map[string]string{"s.md": httpSkill("s", "    timeout: {a: 1}\n")},
			wantErr: ErrInvalid, wantFile: "s.md", wantMsg: "http_tools[0].timeout: bad value: got a mapping, want a string", wantLine: 9},
		{name: "list where a string is wanted", files: map[string]string{"a.md": agentMD("agent: a\ndescription:\n  - A\n", "")},
			wantErr: ErrInvalid, wantFile: "a.md", wantMsg: "bad value: got a list, want a string"},

		// Ids.
		{name: "bad agent id", files: map[string]string{"a.md": agentMD("agent: Research Bot\ndescription: A\n", "")},
			wantErr: ErrBadID, wantFile: "a.md", wantMsg: `agent id "Research Bot" is invalid`},
		{name: "empty agent id", files: map[string]string{"a.md": agentMD("agent:\ndescription: A\n", "")},
			wantErr: ErrBadID, wantFile: "a.md", wantMsg: `"agent:" is empty`},
		{name: "bad skill id", files: map[string]string{"s.md": "---\nskill: web.reading\ndescription: S\n---\nS.\n"},
			wantErr: ErrBadID, wantFile: "s.md", wantMsg: `skill id "web.reading" is invalid`},
		{name: "empty skill id", files: map[string]string{"s.md": "---\nskill: \"\"\ndescription: S\n---\nS.\n"},
			wantErr: ErrBadID, wantFile: "s.md", wantMsg: `"skill:" is empty`},
		{name: "duplicate agent id in a layer", files: map[string]string{
			"a1.md": agentMD("agent: a\ndescription: A\n", ""),
			"a2.md": agentMD("agent: a\ndescription: A again\n", ""),
		}, wantErr: ErrDuplicateID, wantFile: "a2.md", wantMsg: `agent "a" is also defined in a1.md`},
		{name: "duplicate skill id in a layer", files: map[string]string{
			"x/s.md": okSkill,
			"y/s.md": okSkill,
		}, wantErr: ErrDuplicateID, wantFile: "y/s.md", wantMsg: `skill "ok" is also defined in x/s.md`},

		// Descriptions and prompts.
		{name: "agent without description", files: map[string]string{"a.md": agentMD("agent: a\n", "Prompt.\n")},
			wantErr: ErrMissingDescription, wantFile: "a.md", wantMsg: `agent "a" has no description`},
		{name: "skill without description", files: map[string]string{"s.md": "---\nskill: s\ndescription: \"  \"\n---\nS.\n"},
			wantErr: ErrMissingDescription, wantFile: "s.md", wantMsg: `skill "s" has no description`},
		{name: "agent with skills but no prompt", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nskills: [ok]\n", "\n  \n"), "s.md": okSkill},
			wantErr: ErrMissingPrompt, wantFile: "a.md", wantMsg: `agent "a" has skills but no prompt`},
		{name: "skill without prompt", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\n---\n\n"},
			wantErr: ErrMissingPrompt, wantFile: "s.md", wantMsg: `skill "s" has no prompt`},

		// Mode and ranges.
		{name: "bad mode", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nmode: Agentic\n", "")},
			wantErr: ErrBadMode, wantFile: "a.md", wantMsg: `mode "Agentic": use chat, agentic or auto`},
		{name: "max_turns zero", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nmax_turns: 0\n", "")},
			wantErr: ErrOutOfRange, wantFile: "a.md", wantMsg: "max_turns must be between 1 and 1000, got 0"},
		{name: "max_turns too large", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nmax_turns: 1001\n", "")},
			wantErr: ErrOutOfRange, wantFile: "a.md", wantMsg: "max_turns must be between 1 and 1000, got 1001"},
		{name: "max_turns negative", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nmax_turns: -1\n", "")},
			wantErr: ErrOutOfRange, wantFile: "a.md", wantMsg: "got -1"},
		{name: "skill max_turns out of range", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nmax_turns: 5000\n---\nS.\n"},
			wantErr: ErrOutOfRange, wantFile: "s.md", wantMsg: "max_turns must be between 1 and 1000, got 5000"},
		{name: "max_replans too large", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nmax_replans: 11\n", "")},
			wantErr: ErrOutOfRange, wantFile: "a.md", wantMsg: "max_replans must be between 0 and 10, got 11"},
		{name: "parallel zero", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nparallel: 0\n", "")},
			wantErr: ErrOutOfRange, wantFile: "a.md", wantMsg: "parallel must be between 1 and 8, got 0"},
		{name: "parallel too large", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nparallel: 9\n", "")},
			wantErr: ErrOutOfRange, wantFile: "a.md", wantMsg: "parallel must be between 1 and 8, got 9"},
		{name: "max_replans negative", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nmax_replans: -1\n", "")},
			wantErr: ErrOutOfRange, wantFile: "a.md", wantMsg: "max_replans must be between 0 and 10, got -1"},
		{name: "temperature out of range", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\ntemperature: 2.5\n", "")},
			wantErr: ErrOutOfRange, wantFile: "a.md", wantMsg: "temperature must be between 0 and 2, got 2.5"},

		// Commands.
		{name: "command without slash", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\ncommand: request\n---\nS.\n"},
			wantErr: ErrBadCommand, wantFile: "s.md", wantMsg: `command "request" must start with "/"`},
		{name: "command with a space", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\ncommand: /my request\n---\nS.\n"},
			wantErr: ErrBadCommand, wantFile: "s.md", wantMsg: `command "/my request" must not contain spaces`},
		{name: "bare slash command", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\ncommand: /\n---\nS.\n"},
			wantErr: ErrBadCommand, wantFile: "s.md", wantMsg: `needs a name after the "/"`},
		{name: "two skills with one command", files: map[string]string{
			"s1.md": "---\nskill: s1\ndescription: S\ncommand: /go\n---\nS.\n",
			"s2.md": "---\nskill: s2\ndescription: S\ncommand: /go\n---\nS.\n",
		}, wantErr: ErrDuplicateCommand, wantFile: "s2.md", wantMsg: `command "/go" is also the command of skill "s1" in s1.md`},

		// References.
		{name: "agent naming an unknown skill", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nskills: [ok, web_research]\n", "P.\n"), "s.md": okSkill},
			wantErr: ErrUnknownSkill, wantFile: "a.md", wantMsg: `agent "a" uses skill "web_research", which does not exist`},
		{name: "agent listing a skill twice", files: map[string]string{"a.md": agentMD("agent: a\ndescription: A\nskills: [ok, ok]\n", "P.\n"), "s.md": okSkill},
			wantErr: ErrInvalid, wantFile: "a.md", wantMsg: `lists skill "ok" twice`},
		{name: "skill naming an unknown tool", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\ntools: [web_fetch, media_request]\n---\nS.\n"},
			wantErr: ErrUnknownTool, wantFile: "s.md", wantMsg: `skill "s" uses tool "media_request", which is neither a registered tool nor declared`},

		// HTTP tools.
		{name: "http tool with a bad method", files: map[string]string{"s.md": httpSkill("s", "    method: FETCH\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `http tool "fetch_x": method "FETCH" is not one of GET, POST, PUT, PATCH, DELETE`},
		{name: "http tool with an empty url", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: ''}]\n---\nS.\n"},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `http tool "t": url is empty`},
		{name: "http tool with a bad name", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: media request, description: T, url: 'http://m'}]\n---\nS.\n"},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `name "media request" is not a valid function name`},
		{name: "http tool without a name", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{description: T, url: 'http://m'}]\n---\nS.\n"},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `http_tools[0]: name "" is not a valid function name`},
		{name: "http tool name too long", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: " + strings.Repeat("x", 65) + ", description: T, url: 'http://m'}]\n---\nS.\n"},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: "is not a valid function name"},
		{name: "http tool without a description", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, url: 'http://m'}]\n---\nS.\n"},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `http tool "t": description is required`},
		{name: "http tool named like a registered tool", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: web_fetch, description: T, url: 'http://m'}]\n---\nS.\n"},
			wantErr: ErrToolConflict, wantFile: "s.md", wantMsg: `http tool "web_fetch" has the name of a registered tool`},
		{name: "http tool named like another skill's", files: map[string]string{
			"s1.md": httpSkill("s1", ""),
			"s2.md": httpSkill("s2", ""),
		}, wantErr: ErrToolConflict, wantFile: "s2.md", wantMsg: `http tool "fetch_x" is also declared by skill "s1" in s1.md`},
		{name: "http tool declared twice in one skill", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: 'http://m'}, {name: t, description: T, url: 'http://n'}]\n---\nS.\n"},
			wantErr: ErrToolConflict, wantFile: "s.md", wantMsg: `http tool "t" is also declared by skill "s" in s.md`},
		{name: "parameters not an object schema", files: map[string]string{"s.md": httpSkill("s", "    parameters: {type: string}\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: "parameters must be an object schema with type: object, got type: string"},
		{name: "parameters without a type", files: map[string]string{"s.md": httpSkill("s", "    parameters: {properties: {}}\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: "must be an object schema"},
		{name: "parameters not a mapping", files: map[string]string{"s.md": httpSkill("s", "    parameters: [type, object]\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: "parameters must be a JSON schema object"},
		{name: "parameters with bad properties", files: map[string]string{"s.md": httpSkill("s", "    parameters: {type: object, properties: [a]}\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: "properties must be a mapping"},
		{name: "parameters requiring an unknown property", files: map[string]string{"s.md": httpSkill("s", "    parameters: {type: object, properties: {a: {type: string}}, required: [b]}\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `required names "b", which is not in properties`},
		{name: "timeout not a duration", files: map[string]string{"s.md": httpSkill("s", "    timeout: 30\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `timeout "30" is not a Go duration`},
		{name: "timeout not positive", files: map[string]string{"s.md": httpSkill("s", "    timeout: 0s\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: "timeout must be positive"},
		{name: "max_response_bytes not positive", files: map[string]string{"s.md": httpSkill("s", "    max_response_bytes: 0\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: "max_response_bytes must be positive, got 0"},
		{name: "bad approval", files: map[string]string{"s.md": httpSkill("s", "    approval: maybe\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `approval must be "required" or omitted, got "maybe"`},
		{name: "result not a template", files: map[string]string{"s.md": httpSkill("s", "    result: \"{{range .items}}\"\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: "result is not a valid Go text/template"},
		{name: "requires_env not a variable", files: map[string]string{"s.md": httpSkill("s", "    requires_env: [SEERR-URL]\n")},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `requires_env: "SEERR-URL" is not an environment variable name`},
		{name: "unterminated url template", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: '${BASE/x'}]\n---\nS.\n"},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: `url: unterminated "${"`},
		{name: "bad header template", files: map[string]string{"s.md": httpSkill("s", "    headers: {Authorization: \"Bearer ${}\"}\n")},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: "headers.Authorization:"},
		{name: "bad body template", files: map[string]string{"s.md": httpSkill("s", "    method: POST\n    body: {items: [\"${9}\"]}\n")},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: "body.items[0]:"},
		{name: "placeholder naming no property", files: map[string]string{"s.md": httpSkill("s", "    parameters: {type: object, properties: {id: {type: integer}, q: {}}}\n    query: {q: \"{qq}\"}\n")},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: `http tool "fetch_x": query.q: placeholder {qq} names no property in parameters (it declares {id}, {q}); write {{ for a literal {`},
		{name: "placeholder without parameters", files: map[string]string{"s.md": httpSkill("s", "    method: POST\n    body: {id: \"{id}\"}\n")},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: `body.id: placeholder {id} names no property in parameters (it declares none)`},
		{name: "placeholder named twice is reported once", files: map[string]string{"s.md": httpSkill("s", "    headers: {X-A: \"{a}-{a}\"}\n")},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: `headers.X-A: placeholder {a} names no property`},
		{name: "placeholder in the host", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: 'https://{host}/x', parameters: {type: object, properties: {host: {}}}}]\n---\nS.\n"},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: `http tool "t": url: placeholder {host} is in the scheme, host or port of "https://{host}/x": arguments may only fill the path and the query`},
		{name: "placeholder in the port", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: 'http://h:{port}', parameters: {type: object, properties: {port: {}}}}]\n---\nS.\n"},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: `placeholder {port} is in the scheme, host or port`},
		{name: "placeholder in the scheme", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: '{scheme}://h/', parameters: {type: object, properties: {scheme: {}}}}]\n---\nS.\n"},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: `placeholder {scheme} is in the scheme, host or port`},
		{name: "placeholder right after a variable", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: '${BASE}{path}', parameters: {type: object, properties: {path: {}}}}]\n---\nS.\n"},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: `placeholder {path} is in the scheme, host or port of "${BASE}{path}"`},
		{name: "placeholder in the host naming no property", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: 'https://{host}/'}]\n---\nS.\n"},
			wantErr: ErrBadTemplate, wantFile: "s.md", wantMsg: `url: placeholder {host} names no property`, count: 2},
		{name: "url without an http scheme", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: 'ftp://h/x'}]\n---\nS.\n"},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `url "ftp://h/x" must start with http:// or https://, or with a ${NAME} holding such a URL`},
		{name: "url without a scheme", files: map[string]string{"s.md": "---\nskill: s\ndescription: S\nhttp_tools: [{name: t, description: T, url: '/api/x'}]\n---\nS.\n"},
			wantErr: ErrBadHTTPTool, wantFile: "s.md", wantMsg: `must start with http:// or https://`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadAndValidate(t, known(builtinTools...), mapFS(tt.files))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("errors.Is(err, %v) = false; err:\n%v", tt.wantErr, err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false; err:\n%v", err)
			}
			problems := fileErrors(t, err)
			want := tt.count
			if want == 0 {
				want = 1
			}
			if len(problems) != want {
				t.Fatalf("got %d problems, want %d:\n%v", len(problems), want, err)
			}
			p := problems[0]
			if p.Path != tt.wantFile {
				t.Errorf("problem names file %q, want %q", p.Path, tt.wantFile)
			}
			if msg := p.Error(); !strings.HasPrefix(msg, "skills: "+tt.wantFile+": ") || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message %q: want prefix %q and to contain %q", msg, "skills: "+tt.wantFile+": ", tt.wantMsg)
			}
			if tt.wantLine != 0 && p.Line != tt.wantLine {
				t.Errorf("line = %d, want %d (%v)", p.Line, tt.wantLine, p)
			}
		})
	}
}

func TestUnknownKeyMessage(t *testing.T) {
	_, err := Load(mapFS(map[string]string{"agents/bad.md": "---\nagent: bad\ndescription: Bad\ncolour: red\n---\n"}))
	want := `skills: agents/bad.md: unknown key "colour" (line 4)`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestProblemsAreAllReported(t *testing.T) {
	files := map[string]string{
		"b.md": agentMD("agent: b\ncolour: red\nmode: fast\nskills: [nope]\n", "Prompt.\n"),
		"a.md": "no frontmatter\n",
		"s.md": "---\nskill: s\ndescription: S\ncommand: go\ntools: [missing_tool]\nhttp_tools: [{name: t, method: FETCH, url: ''}]\nextra: 1\n---\n",
	}
	_, err := Load(mapFS(files))
	type row struct {
		Path string
		Err  error
	}
	var got []row
	for _, p := range fileErrors(t, err) {
		got = append(got, row{p.Path, p.Err})
	}
	// Load leaves the unknown tool to Validate; everything else is reported
	// at once, grouped by file.
	want := []row{
		{"a.md", ErrFrontmatter},
		{"b.md", ErrUnknownKey},
		{"b.md", ErrMissingDescription},
		{"b.md", ErrBadMode},
		{"b.md", ErrUnknownSkill},
		{"s.md", ErrUnknownKey},
		{"s.md", ErrMissingPrompt},
		{"s.md", ErrBadCommand},
		{"s.md", ErrBadHTTPTool}, // description
		{"s.md", ErrBadHTTPTool}, // method
		{"s.md", ErrBadHTTPTool}, // url
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("problems (-want +got):\n%s\nerror:\n%v", diff, err)
	}
}

func TestLoadLeavesToolChecksToValidate(t *testing.T) {
	files := map[string]string{
		"s.md": "---\nskill: s\ndescription: S\ntools: [current_time, custom]\nhttp_tools: [{name: web_fetch, description: W, url: 'http://w'}]\n---\nS.\n",
	}
	c, err := Load(mapFS(files))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var got []error
	for _, p := range fileErrors(t, c.Validate(known(builtinTools...))) {
		got = append(got, p.Err)
	}
	want := []error{ErrToolConflict, ErrUnknownTool}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("Validate problems (-want +got):\n%s", diff)
	}
	if err := c.Validate(known("current_time", "custom")); err != nil {
		t.Errorf("Validate with every tool registered: %v", err)
	}
}

func TestNakedAgentMayHaveNoPrompt(t *testing.T) {
	c := mustLoad(t, nil, mapFS(map[string]string{"n.md": agentMD("agent: bare\ndescription: The model alone\n", "")}))
	if a, _ := c.Agent("bare"); a.Prompt != "" {
		t.Errorf("prompt = %q, want empty", a.Prompt)
	}
}

func TestValidIDs(t *testing.T) {
	c := mustLoad(t, nil, mapFS(map[string]string{
		"a.md": agentMD("agent: llama3.1:8b-q4_k\ndescription: A\n", ""),
		"s.md": "---\nskill: Web-Reading_2\ndescription: S\ncommand: /web-2\n---\nS.\n",
	}))
	if _, ok := c.Agent("llama3.1:8b-q4_k"); !ok {
		t.Error("agent with dots and colon missing")
	}
	if _, ok := c.Skill("Web-Reading_2"); !ok {
		t.Error("skill with upper case and dash missing")
	}
}

func TestHTTPToolPlaceholdersAccepted(t *testing.T) {
	const skill = `---
skill: api
description: API
http_tools:
  - name: call_api
    description: Calls the API
    method: POST
    url: ${BASE}/v1/items/{id}/notes?lang={lang}
    headers: {X-Tenant: "t-{tenant}", X-Api-Key: "${API_KEY}"}
    query: {q: "{q}", page: "p{page}"}
    body: {id: "{id}", query: "{ viewer { login } }", literal: "{{id}", price: "$${PRICE}"}
    parameters: {type: object, properties: {id: {}, lang: {}, tenant: {}, q: {}, page: {}}}
  - name: status
    description: Status
    url: https://api.example.com:8443/status/{id}
    parameters: {type: object, properties: {id: {}}}
---
Use it.
`
	mustLoad(t, known(builtinTools...), mapFS(map[string]string{"api.md": skill}))
}

func TestModelsAndLanguage(t *testing.T) {
	c := mustLoad(t, nil, fstest.MapFS{
		"a.md": {Data: []byte(agentMD("agent: a\ndescription: A\nmodel: llama3.1:8b\nmodels: {plan: \"qwen2.5:7b\", answer: \"remote:big\"}\nlanguage: auto\n", ""))},
		"s.md": {Data: []byte("---\nskill: s\ndescription: S\nmodel: \"other:x\"\n---\nS.\n")},
	})
	a, _ := c.Agent("a")
	if a.Models != (RoleModels{Plan: "qwen2.5:7b", Answer: "remote:big"}) || a.Language != LanguageAuto || a.ReasonIn != DefaultReasonIn {
		t.Errorf("agent = %+v", a)
	}
	known := map[string]bool{"llama3.1:8b": true, "qwen2.5:7b": true}
	err := c.CheckModels(func(ref string) error {
		if known[ref] {
			return nil
		}
		return errors.New("no such endpoint")
	})
	var got []string
	for _, e := range fileErrors(t, err) {
		got = append(got, e.Error())
	}
	want := []string{
		`skills: a.md: models.answer "remote:big": no such endpoint`,
		`skills: s.md: model "other:x": no such endpoint`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CheckModels (-want +got):\n%s", diff)
	}
	if !errors.Is(err, ErrUnknownEndpoint) {
		t.Errorf("CheckModels error is not ErrUnknownEndpoint: %v", err)
	}
}
