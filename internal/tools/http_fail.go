// How an HTTP tool's failures read: transport errors, statuses and the
// excerpt of the body a model sees, never a secret.

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/internal/textcut"
)

// transportError describes an error of client.Do or of reading the body
// without the request URL, which may hold secrets, and tells the caller's
// cancellation (ctx) from the call's own timeout (callCtx).
func (t *HTTPTool) transportError(ctx, callCtx context.Context, err error) error {
	if errors.Is(err, errRedirect) {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%v (%w)", err, ErrPermanent)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if callCtx.Err() != nil {
		return fmt.Errorf("timed out after %s", t.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return errors.New(ue.Err.Error())
	}
	return errors.New(err.Error())
}

// fail prefixes err with the tool name and target and scrubs secrets from
// its message. Of err's chain only the sentinels ErrPermanent,
// ErrHTTPStatus, ErrInvalidArguments and the context errors remain visible
// (to errors.Is), since the messages of the causes could hold secrets.
func (t *HTTPTool) fail(st *callState, target string, err error) error {
	return &callError{
		msg: st.scrub.Hide(fmt.Sprintf("%s: %s: %v", t.name, target, err)),
		err: err,
	}
}

// callError is an HTTP tool's error with secrets scrubbed from its message.
type callError struct {
	msg string
	err error
}

func (e *callError) Error() string { return e.msg }

// Is matches the sentinels err wraps without exposing err itself, whose
// message may hold secrets.
func (e *callError) Is(target error) bool {
	switch target {
	case ErrPermanent, ErrHTTPStatus, ErrInvalidArguments, context.Canceled, context.DeadlineExceeded:
		return errors.Is(e.err, target)
	}
	return false
}

// statusErr is the error for a non-2xx response with the given excerpt of
// its body.
func statusErr(resp *http.Response, excerpt string) error {
	msg := "HTTP " + resp.Status
	if excerpt != "" {
		msg += ": " + excerpt
	}
	switch c := resp.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusTooEarly, c == http.StatusTooManyRequests, c >= 500:
		return fmt.Errorf("%s (%w)", msg, ErrHTTPStatus)
	}
	// Other 4xx, and 3xx that were not followed, will come back the same.
	return fmt.Errorf("%s (%w, %w)", msg, ErrHTTPStatus, ErrPermanent)
}

// excerpt returns the start of a non-2xx body for an error message, on one
// line, with secrets scrubbed before it is cut.
func (t *HTTPTool) excerpt(st *callState, mediaType string, data []byte, cut bool) string {
	if len(data) == 0 {
		return ""
	}
	text := formatBody(mediaType, data, cut, true)
	text = strings.Join(strings.Fields(st.scrub.Hide(text)), " ")
	if cut {
		text = st.scrub.HideCut(text)
	}
	if cut := textcut.Runes(text, httpErrorExcerpt); len(cut) < len(text) {
		text = st.scrub.HideCut(cut) + "…"
	}
	return text
}

// formatBody turns a response body into text: JSON indented (compact when
// oneLine), text as text, other types as "[<type>, N bytes]".
func formatBody(mediaType string, data []byte, cut, oneLine bool) string {
	isJSON := mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")
	if (isJSON || mediaType == "") && json.Valid(data) {
		var buf bytes.Buffer
		var err error
		if oneLine {
			err = json.Compact(&buf, data)
		} else {
			err = json.Indent(&buf, data, "", " ")
		}
		if err == nil {
			return buf.String()
		}
	}
	if isJSON || textType(mediaType) || mediaType == "" && utf8.Valid(data) {
		return strings.ToValidUTF8(string(data), "\uFFFD")
	}
	if mediaType == "" {
		mediaType = "unknown type"
	}
	if cut {
		return fmt.Sprintf("[%s, more than %d bytes]", mediaType, len(data))
	}
	return fmt.Sprintf("[%s, %d bytes]", mediaType, len(data))
}

// textType reports whether a media type is text a model can read.
func textType(mediaType string) bool {
	switch {
	case strings.HasPrefix(mediaType, "text/"),
		mediaType == "application/xml", strings.HasSuffix(mediaType, "+xml"),
		mediaType == "application/javascript", mediaType == "application/x-www-form-urlencoded",
		mediaType == "application/yaml", mediaType == "application/x-yaml":
		return true
	}
	return false
}
