// Package redact hides the credentials URLs carry, so that the URLs of
// Longhaul's settings — the database, the model endpoint, the search
// endpoint, NATS, MCP servers — and the error messages quoting them can be
// printed at start-up and logged. Every package that prints such a URL uses
// this one function, so all of them hide the same things the same way. It
// imports nothing of Longhaul's, so any package may import it.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask is what a hidden credential is replaced with.
const Mask = "xxxxx"

// scheme finds where a URL starts: a scheme and "://".
var scheme = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://`)

// URLs returns s with the credentials of every URL in it hidden. s may be
// one URL, a comma-separated list of them (LONGHAUL_NATS_URL), or any text
// quoting URLs (an error message). It hides
//
//   - the password of user:password@ (the user stays): user:xxxxx@
//   - a user without a password, which for NATS and many HTTP services is
//     itself a token: xxxxx@
//   - the value of a query parameter whose name speaks of a secret
//     (password, token, key, secret, auth, credential, signature …):
//     ?password=xxxxx
//
// A credential that is a ${NAME} reference (as Longhaul's skill and MCP
// files write them, and as their error messages show them) names a secret
// rather than holds one, and stays. It works on the text, not on what
// url.Parse makes of it, so a URL that url.Parse rejects is hidden too, and
// the rest of s is left as it is.
func URLs(s string) string {
	starts := scheme.FindAllStringIndex(s, -1)
	if len(starts) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	done := 0
	for i, loc := range starts {
		end := len(s)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		rest := s[loc[1]:end]
		if j := strings.IndexAny(rest, " \t\r\n\"'`<>"); j >= 0 {
			rest = rest[:j]
		}
		b.WriteString(s[done:loc[1]])
		b.WriteString(afterScheme(rest))
		done = loc[1] + len(rest)
	}
	b.WriteString(s[done:])
	return b.String()
}

// afterScheme hides the credentials of a URL from after its "://" on.
func afterScheme(rest string) string {
	authority, tail := rest, ""
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		authority, tail = rest[:j], rest[j:]
	}
	// The userinfo ends at the authority's last @: an unescaped @ in a
	// password stays hidden.
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, password, hasPassword := strings.Cut(authority[:at], ":")
		switch {
		case hasPassword && !reference(password):
			authority = user + ":" + Mask + authority[at:]
		case !hasPassword && !reference(user):
			authority = Mask + authority[at:]
		}
	}
	return authority + query(tail)
}

// query hides the values of secret-sounding parameters in the query of
// tail (a URL's path, query and fragment).
func query(tail string) string {
	q := strings.IndexByte(tail, '?')
	if q < 0 {
		return tail
	}
	path, raw := tail[:q+1], tail[q+1:]
	fragment := ""
	if h := strings.IndexByte(raw, '#'); h >= 0 {
		raw, fragment = raw[:h], raw[h:]
	}
	params := strings.Split(raw, "&")
	for i, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if ok && secretName(k) && !reference(v) {
			params[i] = k + "=" + Mask
		}
	}
	return path + strings.Join(params, "&") + fragment
}

// ref matches a whole ${NAME} reference.
var ref = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*\}$`)

// reference reports whether s is a ${NAME} reference, not a value.
func reference(s string) bool { return ref.MatchString(s) }

// secretWords are the parts of a query parameter name that mark its value
// as a secret.
var secretWords = []string{"pass", "pwd", "secret", "token", "key", "auth", "credential", "signature"}

func secretName(k string) bool {
	if u, err := url.QueryUnescape(k); err == nil {
		k = u
	}
	k = strings.ToLower(k)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return k == "sig"
}
