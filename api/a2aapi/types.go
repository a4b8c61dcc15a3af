package a2aapi

import (
	"encoding/json"
	"time"
)

// The A2A v1.0 objects as their ProtoJSON encoding writes them: the
// messages of specification/a2a.proto (A2A v1.0.0, package lf.a2a.v1),
// fields in lowerCamelCase, enums by their names (TASK_STATE_WORKING,
// ROLE_AGENT), a oneof as the one field that is set (spec §5.5). The
// @a2a-js/sdk 1.3.0 client reads them with its generated fromJSON
// (dist/client/index.js, taskStateFromJSON at :40).

// Task states (a2a.proto enum TaskState).
const (
	StateSubmitted     = "TASK_STATE_SUBMITTED"
	StateWorking       = "TASK_STATE_WORKING"
	StateCompleted     = "TASK_STATE_COMPLETED"
	StateFailed        = "TASK_STATE_FAILED"
	StateCanceled      = "TASK_STATE_CANCELED"
	StateInputRequired = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      = "TASK_STATE_REJECTED"
	StateAuthRequired  = "TASK_STATE_AUTH_REQUIRED"
)

// Roles (a2a.proto enum Role).
const (
	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// ProtocolVersion is the A2A version served (the A2A-Version header,
// AgentInterface.protocolVersion).
const ProtocolVersion = "1.0"

// Task is a2a.proto's Task: a Longhaul run.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId,omitempty"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatus is a2a.proto's TaskStatus.
type TaskStatus struct {
	State     string     `json:"state"`
	Message   *Message   `json:"message,omitempty"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
}

// Part is a2a.proto's Part: text, or data (a JSON value); raw and url
// parts are refused (ContentTypeNotSupported).
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       *string         `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// Message is a2a.proto's Message.
type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []Part         `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// Artifact is a2a.proto's Artifact.
type Artifact struct {
	ArtifactID  string `json:"artifactId"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Parts       []Part `json:"parts"`
}

// StatusUpdate is a2a.proto's TaskStatusUpdateEvent.
type StatusUpdate struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
}

// ArtifactUpdate is a2a.proto's TaskArtifactUpdateEvent.
type ArtifactUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// StreamResponse is a2a.proto's StreamResponse (and, with Task only,
// SendMessageResponse): one of its fields is set.
type StreamResponse struct {
	Task           *Task           `json:"task,omitempty"`
	Message        *Message        `json:"message,omitempty"`
	StatusUpdate   *StatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *ArtifactUpdate `json:"artifactUpdate,omitempty"`
}

// SendMessageConfiguration is a2a.proto's.
type SendMessageConfiguration struct {
	AcceptedOutputModes []string                    `json:"acceptedOutputModes,omitempty"`
	PushConfig          *TaskPushNotificationConfig `json:"taskPushNotificationConfig,omitempty"`
	HistoryLength       *int32                      `json:"historyLength,omitempty"`
	ReturnImmediately   bool                        `json:"returnImmediately,omitempty"`
}

// SendMessageRequest is a2a.proto's (SendMessage, SendStreamingMessage).
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any            `json:"metadata,omitempty"`
}

// TaskRequest is a2a.proto's GetTaskRequest, CancelTaskRequest and
// SubscribeToTaskRequest, which share their fields.
type TaskRequest struct {
	Tenant        string         `json:"tenant,omitempty"`
	ID            string         `json:"id"`
	HistoryLength *int32         `json:"historyLength,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// ListTasksRequest is a2a.proto's.
type ListTasksRequest struct {
	Tenant               string `json:"tenant,omitempty"`
	ContextID            string `json:"contextId,omitempty"`
	Status               string `json:"status,omitempty"`
	PageSize             *int32 `json:"pageSize,omitempty"`
	PageToken            string `json:"pageToken,omitempty"`
	HistoryLength        *int32 `json:"historyLength,omitempty"`
	StatusTimestampAfter string `json:"statusTimestampAfter,omitempty"`
	IncludeArtifacts     *bool  `json:"includeArtifacts,omitempty"`
}

// ListTasksResponse is a2a.proto's: nextPageToken is always there, ""
// on the last page (spec §3.1.4).
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int32  `json:"pageSize"`
	TotalSize     int32  `json:"totalSize"`
}

// TaskPushNotificationConfig is a2a.proto's.
type TaskPushNotificationConfig struct {
	Tenant         string              `json:"tenant,omitempty"`
	ID             string              `json:"id,omitempty"`
	TaskID         string              `json:"taskId,omitempty"`
	URL            string              `json:"url"`
	Token          string              `json:"token,omitempty"`
	Authentication *AuthenticationInfo `json:"authentication,omitempty"`
}

// AuthenticationInfo is a2a.proto's.
type AuthenticationInfo struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials,omitempty"`
}

// PushConfigRequest is a2a.proto's Get-, Delete- and
// ListTaskPushNotificationConfig(s)Request.
type PushConfigRequest struct {
	Tenant    string `json:"tenant,omitempty"`
	TaskID    string `json:"taskId"`
	ID        string `json:"id,omitempty"`
	PageSize  int32  `json:"pageSize,omitempty"`
	PageToken string `json:"pageToken,omitempty"`
}

// ListPushConfigsResponse is a2a.proto's
// ListTaskPushNotificationConfigsResponse.
type ListPushConfigsResponse struct {
	Configs       []TaskPushNotificationConfig `json:"configs"`
	NextPageToken string                       `json:"nextPageToken,omitempty"`
}

// AgentCard is a2a.proto's AgentCard.
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []AgentInterface          `json:"supportedInterfaces"`
	Provider             *AgentProvider            `json:"provider,omitempty"`
	Version              string                    `json:"version"`
	Capabilities         AgentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []AgentSkill              `json:"skills"`
}

// AgentInterface is a2a.proto's: where a binding is served.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentProvider is a2a.proto's.
type AgentProvider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

// AgentCapabilities is a2a.proto's.
type AgentCapabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
	ExtendedAgentCard bool `json:"extendedAgentCard"`
}

// SecurityScheme is a2a.proto's oneof; Longhaul's keys are bearer tokens.
type SecurityScheme struct {
	HTTPAuth *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`
}

// HTTPAuthSecurityScheme is a2a.proto's.
type HTTPAuthSecurityScheme struct {
	Description string `json:"description,omitempty"`
	Scheme      string `json:"scheme"`
}

// SecurityRequirement is a2a.proto's: scheme name to scopes.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is a2a.proto's.
type StringList struct {
	List []string `json:"list"`
}

// AgentSkill is a2a.proto's.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}
