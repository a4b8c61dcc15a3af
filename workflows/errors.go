package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"
)

// errorMessage is the innermost useful message of a workflow or activity
// error: the application error's own message, not the wrapping.
func errorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "the run was cancelled"
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "timed out: " + timeout.Error()
	}
	return err.Error()
}

// errorCode is the application error type, when there is one.
func errorCode(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}
