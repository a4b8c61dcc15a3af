package a2aapi

import (
	"errors"
	"net/http"

	"github.com/longhaul-dev/longhaul/api/web"
)

// Error is an A2A error: its JSON-RPC code, its google.rpc.ErrorInfo
// reason and its HTTP status, from the spec's table (§5.4 "Error Code
// Mappings"; reasons §9.5 and §11.6: the type's name in UPPER_SNAKE_CASE
// without "Error", the SDK's A2A_ERROR_SPECS, dist/client/index.js:1570-
// 1630).
type Error struct {
	Code    int
	Reason  string
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// The A2A errors Longhaul answers with, and JSON-RPC's own.
var (
	errTaskNotFound       = Error{-32001, "TASK_NOT_FOUND", http.StatusNotFound, ""}
	errTaskNotCancelable  = Error{-32002, "TASK_NOT_CANCELABLE", http.StatusConflict, ""}
	errPushNotSupported   = Error{-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", http.StatusBadRequest, ""}
	errUnsupported        = Error{-32004, "UNSUPPORTED_OPERATION", http.StatusBadRequest, ""}
	errContentType        = Error{-32005, "CONTENT_TYPE_NOT_SUPPORTED", http.StatusUnsupportedMediaType, ""}
	errVersionUnsupported = Error{-32009, "VERSION_NOT_SUPPORTED", http.StatusBadRequest, ""}
	errParse              = Error{-32700, "", http.StatusBadRequest, ""}
	errInvalidRequest     = Error{-32600, "", http.StatusBadRequest, ""}
	errMethodNotFound     = Error{-32601, "", http.StatusNotFound, ""}
	errInvalidParams      = Error{-32602, "INVALID_PARAMS", http.StatusBadRequest, ""}
	errInternal           = Error{-32603, "", http.StatusInternalServerError, ""}
)

// with is e saying msg.
func (e Error) with(msg string) *Error {
	e.Message = msg
	return &e
}

// Op names what was asked, for the errors whose A2A kind depends on it (a
// conflict is TaskNotCancelable to a cancel, UnsupportedOperation to a
// message for a finished task).
type Op int

// The operations whose conflicts differ.
const (
	OpOther Op = iota
	OpCancel
)

// AsA2A is err as an A2A error: an A2A error as it is; Longhaul's API
// errors (api/web's, which runweb and the runs gate return) by their
// HTTP status: 404 is TaskNotFound (runweb.ReadRun hides another
// principal's run so), 409 TaskNotCancelable to a cancel and
// UnsupportedOperation otherwise, another 4xx InvalidParams (a limit or
// a budget reached says so in its message), 5xx InternalError.
func AsA2A(err error, op Op) *Error {
	var a *Error
	if errors.As(err, &a) {
		return a
	}
	var w *web.Error
	if !errors.As(err, &w) {
		return errInternal.with(err.Error())
	}
	switch {
	case w.Status == http.StatusNotFound:
		return errTaskNotFound.with(w.Message)
	case w.Status == http.StatusConflict && op == OpCancel:
		return errTaskNotCancelable.with(w.Message)
	case w.Status == http.StatusConflict:
		return errUnsupported.with(w.Message)
	case w.Status < 500:
		e := errInvalidParams.with(w.Message)
		e.Status = w.Status
		return e
	}
	e := errInternal.with(w.Message)
	e.Status = w.Status
	return e
}

// errorInfo is google.rpc.ErrorInfo, which an A2A error carries (§9.5:
// in a JSON-RPC error's data array; §11.6: in an HTTP error's details).
type errorInfo struct {
	Type   string `json:"@type"`
	Reason string `json:"reason"`
	Domain string `json:"domain"`
}

// details is e's ErrorInfo list; none for JSON-RPC's own errors.
func (e *Error) details() []errorInfo {
	if e.Reason == "" {
		return nil
	}
	return []errorInfo{{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: e.Reason, Domain: "a2a-protocol.org"}}
}

// rpcError is a JSON-RPC 2.0 error object.
type rpcError struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Data    []errorInfo `json:"data,omitempty"`
}

// rpc is e as a JSON-RPC error object.
func (e *Error) rpc() rpcError { return rpcError{Code: e.Code, Message: e.Message, Data: e.details()} }

// restError is AIP-193's error body (§11.6), as the SDK's
// fromRestErrorBody reads it (dist/client/index.js:1777).
type restError struct {
	Error restStatus `json:"error"`
}

type restStatus struct {
	Code    int         `json:"code"`
	Status  string      `json:"status"`
	Message string      `json:"message"`
	Details []errorInfo `json:"details,omitempty"`
}

// rest is e as the HTTP+JSON binding's error body.
func (e *Error) rest() restError {
	return restError{restStatus{Code: e.Status, Status: grpcStatus(e.Status), Message: e.Message, Details: e.details()}}
}

// grpcStatus names an HTTP status as google.rpc.Code does (AIP-193).
func grpcStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "FAILED_PRECONDITION"
	case http.StatusTooManyRequests, http.StatusPaymentRequired:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}
