package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/access"
	"github.com/longhaul-dev/longhaul/internal/strict"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"golang.org/x/net/http/httpguts"
)

// ErrInvalidConfig is wrapped by every configuration error.
var ErrInvalidConfig = errors.New("invalid MCP configuration")

// The transports a server can be reached by.
const (
	// TransportStdio runs Command and speaks MCP over its standard input
	// and output.
	TransportStdio = "stdio"
	// TransportHTTP is the streamable HTTP transport to URL.
	TransportHTTP = "http"
	// TransportSSE is the older HTTP+SSE transport to URL.
	TransportSSE = "sse"
)

// Config is the set of MCP servers to connect to.
type Config struct {
	// Servers maps a server's name, which prefixes its tools' names, to how
	// to reach it.
	Servers map[string]ServerConfig
}

// ServerConfig says how to reach one MCP server: either a command to run
// (Command, Args, Env, Cwd) or a URL (URL, Headers). Command, Args, Env
// values, Cwd, URL and Headers values may hold ${VAR} references, expanded
// from the environment each time the server is connected.
type ServerConfig struct {
	// Command is the program to run; it is looked up in PATH.
	Command string
	// Args are the command's arguments.
	Args []string
	// Env is added to the small environment the command inherits: only
	// HOME, LOGNAME, PATH, SHELL, TERM and USER are passed on from the
	// worker, so that its secrets do not leak into every server. Pass more
	// explicitly, e.g. {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}.
	Env map[string]string
	// Cwd is the command's working directory; empty means the worker's.
	Cwd string
	// URL is the endpoint of a remote server.
	URL string
	// Headers are sent with every HTTP request to URL.
	Headers map[string]string
	// Transport is TransportStdio, TransportHTTP or TransportSSE. Empty
	// means stdio for a command and streamable HTTP for a URL.
	Transport string
	// ApproveAll requires a person's approval of every call of the
	// server's tools ("approval": "required").
	ApproveAll bool
	// Approve lists the server's tools, by the server's own names, whose
	// every call a person must approve ("approval": ["delete_file"]).
	Approve []string
	// Auth is AuthOAuth when every user connects the server with their own
	// account ("auth": "oauth"); empty means the configuration's own
	// credentials (Headers, Env) for everyone.
	Auth string
	// ClientID and ClientSecret are an OAuth client the operator registered
	// with the server's authorization server ("client_id",
	// "client_secret"; ${VAR} references allowed). Empty means dynamic
	// client registration.
	ClientID, ClientSecret string
	// Scopes are the OAuth scopes to ask for ("scopes"); empty means the
	// ones the server's resource metadata lists.
	Scopes []string
	// Allow names who may use the server's tools ("allow"); nil is
	// everyone. ToolAllow narrows single tools, by the server's own names
	// ("tools": {"delete_file": {"allow": …}}). See Allows.
	Allow     *access.Rule
	ToolAllow map[string]*access.Rule
}

// AuthOAuth is the Auth of a server each user connects with their own
// account (the MCP authorization spec's authorization-code flow).
const AuthOAuth = "oauth"

// OAuth reports whether every user connects the server with their own account.
func (c ServerConfig) OAuth() bool { return c.Auth == AuthOAuth }

// RequiresApproval reports whether calls of the MCP tool named name (the
// engine's name, "<server>__<tool>") need a person's approval.
func (c Config) RequiresApproval(name string) bool {
	server, _, ok := strings.Cut(name, "__")
	sc, known := c.Servers[server]
	if !ok || !known {
		return false
	}
	if sc.ApproveAll {
		return true
	}
	return slices.ContainsFunc(sc.Approve, func(remote string) bool {
		n, _ := toolName(server, remote)
		return n == name
	})
}

// RequiresApproval reports whether calls of the server's tool remote (the
// server's own name for it) need a person's approval.
func (c ServerConfig) RequiresApproval(remote string) bool {
	return c.ApproveAll || slices.Contains(c.Approve, remote)
}

// transport returns the transport to use, filling in the default.
func (c ServerConfig) transport() string {
	switch {
	case c.Transport != "":
		return c.Transport
	case c.URL != "":
		return TransportHTTP
	default:
		return TransportStdio
	}
}

var serverNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// LoadConfig reads and validates the MCP configuration file at path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read mcp config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("mcp config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses and validates an MCP configuration in the widely used
// shape
//
//	{"mcpServers": {
//	  "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"]},
//	  "github": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}
//	}}
//
// A server entry has either "command" (with optional "args", "env" and
// "cwd") or "url" (with optional "headers"), an optional "type":
// "stdio", "http" or "streamable-http" (the default for a URL), or "sse",
// an optional "auth": "oauth" (each user connects their own account, with
// optional "client_id", "client_secret" and "scopes"),
// an optional "approval": "required" (every call of the server's tools
// waits for a person's approval) or a list of the tools that do, an
// optional "allow": {"roles": [...], "groups": [...], "users": [...]} (who
// may use the server's tools) and optional "tools": {"<tool>": {"allow":
// {...}}} (who may use one of them; see ServerConfig.Allows).
// Unknown keys are errors, so that a typo is not silently ignored, and all
// problems are reported at once.
func ParseConfig(data []byte) (Config, error) {
	top, err := objectFields(data)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	var problems []error
	cfg := Config{Servers: map[string]ServerConfig{}}
	for _, f := range top {
		if f.key != "mcpServers" {
			problems = append(problems, fmt.Errorf("unknown key %q (want \"mcpServers\")", f.key))
			continue
		}
		if isNull(f.value) {
			continue
		}
		servers, err := objectFields(f.value)
		if err != nil {
			problems = append(problems, fmt.Errorf("mcpServers: %w", err))
			continue
		}
		for _, s := range servers {
			sc, errs := parseServer(s.value)
			if len(errs) == 0 {
				errs = validateServer(s.key, sc)
			} else {
				errs = append(validateName(s.key), errs...)
			}
			for _, err := range errs {
				problems = append(problems, fmt.Errorf("mcp server %q: %w", s.key, err))
			}
			cfg.Servers[s.key] = sc
		}
	}
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("%w:\n%w", ErrInvalidConfig, errors.Join(problems...))
	}
	return cfg, nil
}

// parseServer decodes one server entry, checking keys and value types.
func parseServer(raw json.RawMessage) (ServerConfig, []error) {
	fields, err := objectFields(raw)
	if err != nil {
		return ServerConfig{}, []error{err}
	}
	var sc ServerConfig
	var errs []error
	for _, f := range fields {
		var err error
		switch f.key {
		case "command":
			err = decodeString(f.value, &sc.Command)
		case "args":
			err = json.Unmarshal(f.value, &sc.Args)
			if err != nil || isNull(f.value) {
				err = errors.New("must be an array of strings")
			}
		case "env":
			sc.Env, err = decodeStringMap(f.value)
		case "cwd":
			err = decodeString(f.value, &sc.Cwd)
		case "url":
			err = decodeString(f.value, &sc.URL)
		case "headers":
			sc.Headers, err = decodeStringMap(f.value)
		case "type":
			var typ string
			if err = decodeString(f.value, &typ); err == nil {
				switch typ {
				case "stdio":
					sc.Transport = TransportStdio
				case "http", "streamable-http":
					sc.Transport = TransportHTTP
				case "sse":
					sc.Transport = TransportSSE
				default:
					err = fmt.Errorf(`%q is not a transport: use "stdio", "http", "streamable-http" or "sse"`, typ)
				}
			}
		case "approval":
			sc.ApproveAll, sc.Approve, err = decodeApproval(f.value)
		case "auth":
			if err = decodeString(f.value, &sc.Auth); err == nil && sc.Auth != AuthOAuth {
				err = fmt.Errorf(`%q is not an auth: use "oauth" (each user connects their own account) or leave it out`, sc.Auth)
			}
		case "client_id":
			err = decodeString(f.value, &sc.ClientID)
		case "client_secret":
			err = decodeString(f.value, &sc.ClientSecret)
		case "scopes":
			if err = json.Unmarshal(f.value, &sc.Scopes); err != nil || isNull(f.value) {
				err = errors.New("must be an array of strings")
			}
		case "allow":
			sc.Allow, err = decodeAllow(f.value)
		case "tools":
			sc.ToolAllow, err = decodeToolRules(f.value)
		default:
			err = errors.New("unknown key (known keys: command, args, env, cwd, url, headers, type, approval, auth, client_id, client_secret, scopes, allow, tools)")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", f.key, err))
		}
	}
	return sc, errs
}

// decodeApproval reads a server's "approval": "required" for all of its
// tools, or a list of the tools (by the server's names) that require it.
func decodeApproval(raw json.RawMessage) (all bool, names []string, err error) {
	var word string
	if json.Unmarshal(raw, &word) == nil {
		if word != "required" {
			return false, nil, fmt.Errorf(`must be "required" or a list of the server's tool names, got %q`, word)
		}
		return true, nil, nil
	}
	if isNull(raw) || json.Unmarshal(raw, &names) != nil {
		return false, nil, errors.New(`must be "required" or a list of the server's tool names`)
	}
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return false, nil, errors.New("names an empty tool")
		}
	}
	return false, names, nil
}

// Validate reports every problem of c at once, each naming its server. A
// Config from ParseConfig is already valid.
func (c Config) Validate() error {
	var problems []error
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		for _, err := range validateServer(name, c.Servers[name]) {
			problems = append(problems, fmt.Errorf("mcp server %q: %w", name, err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w:\n%w", ErrInvalidConfig, errors.Join(problems...))
	}
	return nil
}

// validateServer returns the problems of one server's configuration.
func validateServer(name string, sc ServerConfig) []error {
	errs := validateName(name)
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case sc.Command == "" && sc.URL == "":
		bad(`set either "command" or "url"`)
	case sc.Command != "" && sc.URL != "":
		bad(`set either "command" or "url", not both`)
	}
	if sc.URL == "" {
		if len(sc.Headers) > 0 {
			bad(`"headers" needs a "url"`)
		}
	} else {
		if len(sc.Args) > 0 || len(sc.Env) > 0 || sc.Cwd != "" {
			bad(`"args", "env" and "cwd" need a "command", not a "url"`)
		}
	}
	if sc.OAuth() {
		if sc.URL == "" || sc.transport() != TransportHTTP {
			bad(`"auth": "oauth" needs a "url" served over streamable HTTP`)
		}
	} else if sc.ClientID != "" || sc.ClientSecret != "" || len(sc.Scopes) > 0 {
		bad(`"client_id", "client_secret" and "scopes" need "auth": "oauth"`)
	}
	if sc.ClientSecret != "" && sc.ClientID == "" {
		bad(`"client_secret" needs a "client_id"`)
	}
	switch sc.Transport {
	case "":
	case TransportStdio:
		if sc.URL != "" {
			bad(`type "stdio" needs a "command", not a "url"`)
		}
	case TransportHTTP, TransportSSE:
		if sc.Command != "" {
			bad(`type %q needs a "url", not a "command"`, sc.Transport)
		}
	default:
		bad("transport %q is unknown", sc.Transport)
	}
	template := func(field, s string) {
		if _, err := tools.ExpandEnv(s, func(string) (string, bool) { return "", true }); err != nil {
			bad("%s: %w", field, err)
		}
	}
	template("command", sc.Command)
	for i, a := range sc.Args {
		template(fmt.Sprintf("args[%d]", i), a)
	}
	template("cwd", sc.Cwd)
	template("client_id", sc.ClientID)
	template("client_secret", sc.ClientSecret)
	for _, k := range slices.Sorted(maps.Keys(sc.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad("env: %q is not a valid variable name", k)
		}
		template(fmt.Sprintf("env[%q]", k), sc.Env[k])
	}
	if sc.URL != "" {
		template("url", sc.URL)
		if !strings.Contains(sc.URL, "${") {
			if err := checkURL(sc.URL); err != nil {
				bad("url: %w", err)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sc.Headers)) {
		if !httpguts.ValidHeaderFieldName(k) {
			bad("headers: %q is not a valid header name", k)
		}
		if !httpguts.ValidHeaderFieldValue(sc.Headers[k]) {
			bad("headers[%q]: the value holds characters a header cannot", k)
		}
		template(fmt.Sprintf("headers[%q]", k), sc.Headers[k])
	}
	return errs
}

// validateName returns the problem with a server's name, if any.
func validateName(name string) []error {
	switch {
	case !serverNameRE.MatchString(name):
		return []error{errors.New("the name must match ^[a-zA-Z0-9_-]+$")}
	case strings.Contains(name, "__"):
		return []error{errors.New(`the name must not contain "__", which separates it from the tool names`)}
	}
	return nil
}

// checkURL reports whether u is an absolute http or https URL.
func checkURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		// url.Error repeats the URL, which may hold an expanded secret.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("not a valid URL: %w", err)
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return errors.New("the scheme must be http or https")
	}
	if p.Host == "" {
		return errors.New("the URL has no host")
	}
	return nil
}

// field is one member of a JSON object, in document order.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields splits a JSON object into its members, in order, and
// rejects anything else, including a key given twice.
func objectFields(data []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("must be a JSON object, not %s", describe(tok))
	}
	var fields []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		key := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		if seen[key] {
			return nil, fmt.Errorf("key %q is given twice", key)
		}
		seen[key] = true
		fields = append(fields, field{key: key, value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if err := strict.JSONEnd(dec); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	return fields, nil
}

// describe names the JSON type of a decoder token for error messages.
func describe(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

func decodeString(raw json.RawMessage, dst *string) error {
	if isNull(raw) || json.Unmarshal(raw, dst) != nil {
		return errors.New("must be a string")
	}
	return nil
}

func decodeStringMap(raw json.RawMessage) (map[string]string, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return nil, errors.New("must be an object of strings")
	}
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		var s string
		if err := decodeString(f.value, &s); err != nil {
			return nil, fmt.Errorf("%q: %w", f.key, err)
		}
		m[f.key] = s
	}
	return m, nil
}
