// Package skills loads Longhaul's agents and skills from Markdown files with
// strict YAML frontmatter.
//
// The package exists so that what an agent is — its base prompt, its mode, the
// skills it combines, the tools those skills may call and the HTTP
// integrations they declare — lives in small, reviewable data files instead of
// code. Built-in files are embedded in the binary (see Builtin); an operator
// adds or replaces files in a directory of their own (LONGHAUL_SKILLS_DIR)
// without rebuilding. Because those files are written by hand, every mistake
// in them is reported when the server starts, all at once and naming the file,
// rather than surfacing in the middle of a conversation.
//
// An agent file has an "agent:" key and becomes a model id in /v1/models:
//
//	---
//	agent: researcher
//	description: Plans, researches the web, checks its own work
//	mode: agentic
//	skills: [clock, web_reading]
//	max_turns: 12
//	---
//	You are a careful research assistant…
//
// A skill file has a "skill:" key; its body is a prompt fragment appended to
// the system prompt of every agent that uses the skill:
//
//	---
//	skill: media_requests
//	description: Request movies and shows from the media server
//	command: /request
//	tools: [media_request]
//	http_tools:
//	  - name: media_request
//	    description: Request a movie or show by its TMDB id
//	    method: POST
//	    url: ${MEDIA_SERVER_URL}/api/v1/request
//	    headers: {X-Api-Key: "${MEDIA_SERVER_KEY}"}
//	---
//	When the user asks for a title…
//
// Templates such as ${MEDIA_SERVER_KEY} are kept exactly as written: secrets
// are never expanded into the catalog, which may be logged. The HTTP tool
// (internal/tools, which owns the template language) expands them at call
// time.
package skills

import (
	"errors"
	"fmt"

	"github.com/longhaul-dev/longhaul/internal/access"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// DirEnv is the environment variable naming the operator's directory of agent
// and skill files, layered over the built-ins by LoadDefault.
const DirEnv = "LONGHAUL_SKILLS_DIR"

// Defaults and limits applied to agent, skill and HTTP tool files.
const (
	// DefaultMaxReplans is an agent's re-plan budget when max_replans is omitted.
	DefaultMaxReplans = 2
	// MaxTurnsLimit is the largest allowed max_turns. A long run's history
	// stays bounded (it continues as new), so the limit is about cost.
	MaxTurnsLimit = 1000
	// MaxReplansLimit is the largest allowed max_replans.
	MaxReplansLimit = 10
	// MaxParallel is the largest allowed parallel: a plan has at most
	// contract.DefaultMaxPlanSteps steps to run.
	MaxParallel = 8
	// MaxTemperature is the largest allowed temperature.
	MaxTemperature = 2
)

// Mode says how an agent runs a request.
type Mode string

// The modes an agent file may declare.
const (
	// ModeChat answers within a single conversation loop, calling tools as needed.
	ModeChat Mode = "chat"
	// ModeAgentic plans first, then executes and re-plans durably.
	ModeAgentic Mode = "agentic"
	// ModeAuto lets the dispatcher choose chat or agentic for each request.
	ModeAuto Mode = "auto"
)

// Valid reports whether m is one of ModeChat, ModeAgentic or ModeAuto.
func (m Mode) Valid() bool {
	return m == ModeChat || m == ModeAgentic || m == ModeAuto
}

// MemoryMode says what an agent does with the user's long-term memory.
type MemoryMode string

// The memory modes an agent file may declare.
const (
	// MemoryOff is the default: no memory tools, no recall.
	MemoryOff MemoryMode = "off"
	// MemoryTools gives the agent the memory skill's tools
	// (memory_search, memory_save, memory_forget).
	MemoryTools MemoryMode = "tools"
	// MemoryRecall is MemoryTools, and before the turn's first model call
	// the memories closest to the user's message are recalled into it.
	MemoryRecall MemoryMode = "recall"
)

// Valid reports whether m is one of the memory modes.
func (m MemoryMode) Valid() bool {
	return m == MemoryOff || m == MemoryTools || m == MemoryRecall
}

// MemorySkill is the id of the built-in memory skill, which memory: tools
// and memory: recall add to an agent.
const MemorySkill = "memory"

// DocumentsSkill is the id of the built-in documents skill (the
// document_search tool and the prompt to search and cite), which
// vector_stores: adds to an agent.
const DocumentsSkill = "documents"

// Agent is one agent file: a model id served by the OpenAI-compatible API.
type Agent struct {
	// ID is the model id clients select, e.g. "researcher".
	ID string
	// Description is the one-line summary shown in /v1/models.
	Description string
	// Mode is how requests to the agent run; ModeChat when the file omits it.
	Mode Mode
	// Skills are the ids of the skills the agent combines, in file order.
	Skills []string
	// Model is the backing model, or empty for the engine's default. A
	// fallback list (model: [a, b]) is its models joined by commas
	// (longhaul.ModelList).
	Model string
	// MaxTurns bounds the model turns of one request; 0 means the engine default.
	MaxTurns int
	// MaxReplans is the re-plan budget for agentic runs (DefaultMaxReplans when omitted).
	MaxReplans int
	// Parallel bounds the plan steps of one run that run at once
	// (parallel:); 0 when omitted: the worker's LONGHAUL_PLAN_PARALLEL.
	Parallel int
	// ReviewPlan asks the model to review its plans as well as its results.
	ReviewPlan bool
	// Temperature is the sampling temperature, or nil for the model's default.
	Temperature *float32
	// Memory is the agent's memory mode; MemoryOff when the file omits it.
	Memory MemoryMode
	// Remember asks for an extraction call after each turn whose facts
	// about the user are saved to long-term memory.
	Remember bool
	// Models names the agent's model for each role; an empty one falls
	// back to Model, then to the engine's default.
	Models RoleModels
	// Language is LanguageAuto to answer in the user's language, or empty.
	Language string
	// ReasonIn is the language the agent plans and works in when Language
	// is LanguageAuto (DefaultReasonIn when the file names none).
	ReasonIn string
	// Allow names who may see and use the agent (allow: in the file); nil
	// is everyone.
	Allow *access.Rule
	// VectorStores are the vector stores (vector_stores: in the file, ids
	// "vs_…") every run of the agent searches with document_search, beside
	// the request's. They are searched as the run's principal: a store is
	// found only by the principal that owns it.
	VectorStores []string
	// Context is the agent's own context window in tokens (context: in
	// the file), which stands over what the endpoint reports but not over
	// the operator's LONGHAUL_LLM_CONTEXT; 0 is the model's.
	Context int
	// Agents are the ids of the agents this one may ask (agents: in the
	// file), in file order: each is a tool AskToolPrefix+id whose call runs
	// that agent as a child run and returns its answer.
	Agents []string
	// Prompt is the base system prompt: the file's body, trimmed.
	Prompt string
	// Source names the file the agent came from, e.g. "builtin/researcher.md".
	Source string
}

// RoleModels is an agent's models: frontmatter, a model reference per
// role ("llama3.1:8b", or "endpoint:model" for a named endpoint of
// LONGHAUL_LLM_ENDPOINTS), or a fallback list of them joined by commas.
type RoleModels struct {
	// Plan writes the plans of agentic runs.
	Plan string `yaml:"plan" json:"plan,omitempty"`
	// Review is the plan and step supervisors.
	Review string `yaml:"review" json:"review,omitempty"`
	// Classify is the dispatcher of mode: auto.
	Classify string `yaml:"classify" json:"classify,omitempty"`
	// Answer writes the final answer of an agentic run.
	Answer string `yaml:"answer" json:"answer,omitempty"`
	// Translate detects the user's language and translates the request
	// (language: auto); empty is Answer.
	Translate string `yaml:"translate" json:"translate,omitempty"`
	// Compact summarizes older turns that no longer fit a model's
	// context window; empty is the agent's model.
	Compact string `yaml:"compact" json:"compact,omitempty"`
}

// Refs lists the roles and references set, in the order of the fields.
func (m RoleModels) Refs() [][2]string {
	var out [][2]string
	for _, r := range [][2]string{{"plan", m.Plan}, {"review", m.Review}, {"classify", m.Classify}, {"answer", m.Answer}, {"translate", m.Translate}, {"compact", m.Compact}} {
		if r[1] != "" {
			out = append(out, r)
		}
	}
	return out
}

// The bounds of an agent's context: (tokens): below MinContext no prompt
// and tools fit, and no model reads more than MaxContext.
const (
	MinContext = 512
	MaxContext = 10_000_000
)

// LanguageAuto is the language: value that answers in the user's language.
const LanguageAuto = "auto"

// DefaultReasonIn is the language an agent with language: auto works in
// when it names no reason_in.
const DefaultReasonIn = "en"

// Skill is one skill file: a prompt fragment plus the tools it grants.
type Skill struct {
	// ID identifies the skill in agents' skills lists.
	ID string
	// Description says what the skill is for.
	Description string
	// Command is an optional slash command, e.g. "/request", that invokes the skill directly.
	Command string
	// Tools are the names of the tools the skill may call, in file order.
	Tools []string
	// HTTPTools are the integrations the skill declares as data.
	HTTPTools []tools.HTTPToolDef
	// Model is the backing model when the skill is invoked by its command, or empty.
	Model string
	// MaxTurns bounds the model turns when invoked by its command; 0 means the default.
	MaxTurns int
	// Allow names who may use the skill: its tools, its slash command and
	// its plan steps (allow: in the file); nil is everyone.
	Allow *access.Rule
	// Prompt is the prompt fragment: the file's body, trimmed.
	Prompt string
	// Source names the file the skill came from.
	Source string
}

// Errors reported by Load and Validate. Every problem in a catalog is a
// *FileError wrapping one of these, and all of them wrap ErrInvalid, so
// errors.Is(err, ErrInvalid) asks "is the catalog broken?".
var (
	// ErrInvalid is wrapped by every catalog problem; on its own it marks a
	// value of the wrong type.
	ErrInvalid = errors.New("invalid agent or skill file")
	// ErrFrontmatter marks missing, unclosed or malformed YAML frontmatter.
	ErrFrontmatter = kind("bad frontmatter")
	// ErrFileKind marks a file with both or neither of the agent: and skill: keys.
	ErrFileKind = kind("neither an agent nor a skill")
	// ErrUnknownKey marks a frontmatter key the file kind does not allow.
	ErrUnknownKey = kind("unknown key")
	// ErrBadID marks an empty or malformed agent or skill id.
	ErrBadID = kind("bad id")
	// ErrDuplicateID marks two files of one layer defining the same id.
	ErrDuplicateID = kind("duplicate id")
	// ErrMissingDescription marks an agent or skill without a description.
	ErrMissingDescription = kind("missing description")
	// ErrMissingPrompt marks a file whose body is empty where a prompt is required.
	ErrMissingPrompt = kind("missing prompt")
	// ErrUnknownPrompt marks a file in prompts/ named after no prompt.
	ErrUnknownPrompt = kind("unknown prompt")
	// ErrBadMode marks a mode other than chat, agentic or auto.
	ErrBadMode = kind("bad mode")
	// ErrBadMemory marks a memory mode other than off, tools or recall.
	ErrBadMemory = kind("bad memory mode")
	// ErrOutOfRange marks max_turns, max_replans or temperature out of range.
	ErrOutOfRange = kind("value out of range")
	// ErrBadCommand marks a slash command that is malformed.
	ErrBadCommand = kind("bad command")
	// ErrDuplicateCommand marks two skills with the same slash command.
	ErrDuplicateCommand = kind("duplicate command")
	// ErrUnknownSkill marks an agent naming a skill that does not exist.
	ErrUnknownSkill = kind("unknown skill")
	// ErrBadAllow marks an allow: rule that names no one or holds an empty list or entry.
	ErrBadAllow = kind("bad allow rule")
	// ErrUnknownTool marks a skill naming a tool that is neither registered
	// nor declared in any skill's http_tools.
	ErrUnknownTool = kind("unknown tool")
	// ErrBadHTTPTool marks a malformed http_tools entry.
	ErrBadHTTPTool = kind("bad http tool")
	// ErrToolConflict marks an HTTP tool whose name is already taken by a
	// registered tool or by another HTTP tool.
	ErrToolConflict = kind("tool name conflict")
	// ErrBadLanguage marks a language: other than auto, or a reason_in
	// that is not a language code or comes without language: auto.
	ErrBadLanguage = kind("bad language")
	// ErrUnknownEndpoint marks a model reference naming an endpoint that
	// LONGHAUL_LLM_ENDPOINTS does not configure (see CheckModels).
	ErrUnknownEndpoint = kind("unknown model endpoint")
	// ErrBadTemplate marks a malformed ${NAME} template, or a {name}
	// placeholder that names no parameter or sits in a URL's host.
	ErrBadTemplate = kind("bad template")
	// ErrBadVectorStore marks a vector_stores: entry that is not a vector
	// store id, or is listed twice.
	ErrBadVectorStore = kind("bad vector store")
	// ErrUnknownAgent marks an agents: entry naming no agent, or listed
	// twice.
	ErrUnknownAgent = kind("unknown agent")
	// ErrAgentCycle marks agents that ask each other in a cycle (a asks
	// b asks a, directly or through others), itself included.
	ErrAgentCycle = kind("agent cycle")
)

// sentinel is an error kind that wraps a broader kind, so that errors.Is
// matches both without the broader kind's text appearing in messages.
type sentinel struct {
	msg    string
	parent error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.parent }

func kind(msg string) error { return &sentinel{msg: msg, parent: ErrInvalid} }

// FileError is one problem in one agent or skill file. Its message reads
// "skills: <file>: <detail>", with " (line N)" appended when the problem sits
// on one line, and it wraps Err so callers can use errors.Is.
type FileError struct {
	// Path names the file, as in Agent.Source and Skill.Source.
	Path string
	// Line is the 1-based line in the file, or 0 when no single line applies.
	Line int
	// Err is the kind of problem, one of the package's Err values, or the
	// underlying error when the file could not be read.
	Err error
	// Detail describes the problem for a person.
	Detail string
}

// Error returns the message "skills: <file>: <detail>".
func (e *FileError) Error() string {
	s := "skills: " + e.Path + ": " + e.Detail
	if e.Line > 0 {
		s += fmt.Sprintf(" (line %d)", e.Line)
	}
	return s
}

// Unwrap returns the kind of problem.
func (e *FileError) Unwrap() error { return e.Err }
