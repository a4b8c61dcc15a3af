package main

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/evals"
	"github.com/longhaul-dev/longhaul/internal/redact"
)

// secretName matches the environment variables whose values an export
// hides: keys, tokens, secrets, passwords, credentials, DSNs and URLs
// (which may carry a password).
var secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|DSN|URL)`)

// environSecrets is what the secret scrubber (redact.Secrets) knows of
// this process's environment: the value of every variable secretName
// matches, hidden as ${NAME}. The export runs with the operator's
// settings, as the worker does: the values tools were given.
func environSecrets(environ []string) *redact.Secrets {
	values := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && secretName.MatchString(k) {
			values[k] = v
		}
	}
	return redact.NewSecrets(values)
}

// redactCase is c with what the secret scrubber knows hidden in every
// text of it (messages, tool arguments and results, answer): the
// environment's secret values, and the credentials of URLs
// (redact.URLs).
func redactCase(c evals.Case, secrets *redact.Secrets) (evals.Case, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return c, err
	}
	var out evals.Case
	if err := json.Unmarshal([]byte(redact.URLs(secrets.Hide(string(b)))), &out); err != nil {
		return c, err
	}
	return out, nil
}
