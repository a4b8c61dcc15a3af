package api

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"html"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
)

// The users' own credentials: the MCP servers they connect with their own
// accounts (OAuth, the MCP authorization spec) and the secrets their HTTP
// tools send (${user.secret:NAME}). Tokens and secret values are sealed in
// the store and never answered, logged or handed to a workflow.

// ConnectionList is GET /v1/connections.
type ConnectionList struct {
	Object string                 `json:"object"`
	Data   []usercreds.Connection `json:"data"`
}

// AuthorizeLink is GET /v1/connections/{server}/authorize?redirect=false.
type AuthorizeLink struct {
	Server string `json:"server"`
	URL    string `json:"url"`
}

// Deleted answers a DELETE of a connection or a secret.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// SecretObject is one of the user's secrets: its name, never its value.
type SecretObject struct {
	Name      string `json:"name"`
	Object    string `json:"object"`
	UpdatedAt int64  `json:"updated_at"`
}

// SecretList is GET /v1/secrets.
type SecretList struct {
	Object string         `json:"object"`
	Data   []SecretObject `json:"data"`
}

func (s *Server) credentials() (*usercreds.Service, error) {
	if s.cfg.Credentials == nil {
		return nil, errNotFound("users' own credentials are off on this server (LONGHAUL_TOKEN_KEY is not set)")
	}
	return s.cfg.Credentials, nil
}

// credentialsError translates a credentials failure.
func (s *Server) credentialsError(err error) error {
	switch {
	case errors.Is(err, usercreds.ErrUnknownServer):
		return errNotFound(err.Error())
	case errors.Is(err, usercreds.ErrBadSecretName), errors.Is(err, usercreds.ErrBadState):
		return errBadRequest(err.Error())
	case errors.Is(err, usercreds.ErrOtherBrowser):
		return errForbidden(err.Error())
	}
	s.log.Error("users' credentials failed", "error", err)
	return errUpstream("connecting the account failed: " + err.Error())
}

func (s *Server) listConnections(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	list, err := svc.Connections(c.UserContext(), principal(c).User.Key())
	if err != nil {
		return s.credentialsError(err)
	}
	return c.JSON(ConnectionList{Object: "list", Data: list})
}

// authorizeConnection gives the caller a connect link for an MCP server
// (usercreds.Service.ConnectLink): a 302 to it, or with ?redirect=false
// the link as JSON. The link leads to the page that names the caller and
// asks to confirm; the authorization starts there.
func (s *Server) authorizeConnection(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	server := c.Params("server")
	link, err := svc.ConnectLink(c.UserContext(), principal(c).User.Key(), server)
	if err != nil {
		return s.credentialsError(err)
	}
	if c.Query("redirect") == "false" {
		return c.JSON(AuthorizeLink{Server: server, URL: link})
	}
	return c.Redirect(link, fiber.StatusFound)
}

func (s *Server) deleteConnection(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	server := c.Params("server")
	ok, err := svc.Disconnect(c.UserContext(), principal(c).User.Key(), server)
	if err != nil {
		return s.credentialsError(err)
	}
	if !ok {
		return errNotFound("no connection to " + strconv.Quote(server))
	}
	return c.JSON(Deleted{ID: server, Object: "connection.deleted", Deleted: true})
}

// browserCookie names the cookie that binds an authorization to the
// browser that confirmed its connect link: a random secret the connect
// page sets (HttpOnly, SameSite=Lax: sent on the authorization server's
// redirect back, a top-level GET, and never on another site's POST) and
// the confirming form repeats. The state is kept with the secret's hash,
// and the callback completes only with the same secret.
const browserCookie = "longhaul_oauth"

// browserCookieAge is how long the browser secret is kept, renewed by each
// connect page.
const browserCookieAge = time.Hour

// browserSecret returns the request's browser secret, or "".
func browserSecret(c *fiber.Ctx) string {
	v := c.Cookies(browserCookie)
	if len(v) < 20 || len(v) > 64 {
		return ""
	}
	return v
}

// setBrowserSecret (re)sets the browser cookie, scoped to the OAuth
// routes under LONGHAUL_PUBLIC_URL, and returns its value.
func setBrowserSecret(c *fiber.Ctx, publicURL string) string {
	v := browserSecret(c)
	if v == "" {
		v = rand.Text()
	}
	path, secure := "/oauth", false
	if u, err := url.Parse(publicURL); err == nil {
		path = strings.TrimRight(u.Path, "/") + "/oauth"
		secure = u.Scheme == "https"
	}
	c.Cookie(&fiber.Cookie{Name: browserCookie, Value: v, Path: path, MaxAge: int(browserCookieAge / time.Second),
		Secure: secure, HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode})
	return v
}

// pageHeaders are the headers of the OAuth pages: never cached, never
// framed (a framed confirm button could be clicked blind), no referrer
// (the path holds the link).
func pageHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set("Cache-Control", "no-store")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	c.Set("Referrer-Policy", "no-referrer")
}

// connectPage answers a connect link (usercreds.ConnectPath): a page that
// names the Longhaul user and the server the account would be connected
// to, with a button that POSTs the confirmation. Opening the link starts
// nothing: the authorization starts only on that POST, from this browser.
func (s *Server) connectPage(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	id := c.Params("id")
	user, server, err := svc.Link(c.UserContext(), id)
	if err != nil {
		return s.credentialsError(err)
	}
	secret := setBrowserSecret(c, svc.PublicURL)
	pageHeaders(c)
	return c.SendString("<!doctype html><meta charset=utf-8><title>Connect " + html.EscapeString(server) + "</title>" +
		"<h1>Connect your " + html.EscapeString(server) + " account</h1>" +
		"<p>This connects <strong>your " + html.EscapeString(server) + " account</strong> to the Longhaul user <strong>" + html.EscapeString(user) + "</strong>. " +
		"That user's agents will then act with your account.</p>" +
		"<p>Continue only if you are that user and asked for this link yourself. If someone sent it to you, close this page.</p>" +
		"<form method=post><input type=hidden name=confirm value=\"" + html.EscapeString(secret) + "\">" +
		"<button type=submit>Connect my " + html.EscapeString(server) + " account to " + html.EscapeString(user) + "</button></form>")
}

// confirmConnect is the connect page's POST: with the browser cookie and
// the same secret in the form (a request from another site carries
// neither), it spends the link, starts the authorization bound to this
// browser and sends it to the authorization server.
func (s *Server) confirmConnect(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	secret := browserSecret(c)
	if secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(c.FormValue("confirm"))) != 1 {
		return errForbidden("confirm on the connect page: open the connect link in your browser and press its button")
	}
	link, err := svc.Confirm(c.UserContext(), c.Params("id"), secret)
	if err != nil {
		return s.credentialsError(err)
	}
	c.Set("Cache-Control", "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	return c.Redirect(link, fiber.StatusSeeOther)
}

// oauthCallback is the redirect URI, LONGHAUL_PUBLIC_URL/oauth/callback:
// unauthenticated by nature (the user's browser brings it). It completes
// only with a state that is unguessable, single-use, expiring and bound to
// the principal the link was made for, in the browser that confirmed the
// link (its browser cookie): a flow started by one user cannot be
// finished by another's browser.
func (s *Server) oauthCallback(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	if e := c.Query("error"); e != "" {
		// The user declined, or the server refused: the state is spent.
		_, _, _ = svc.Callback(c.UserContext(), c.Query("state"), "", "")
		return errBadRequest("the authorization server answered " + strconv.Quote(e) + "; nothing was connected")
	}
	_, server, err := svc.Callback(c.UserContext(), c.Query("state"), c.Query("code"), browserSecret(c))
	if err != nil {
		return s.credentialsError(err)
	}
	pageHeaders(c)
	return c.SendString("<!doctype html><meta charset=utf-8><title>Connected</title><p>Your " + html.EscapeString(server) +
		" account is connected to Longhaul. You can close this tab and ask again in the chat.</p>")
}

func (s *Server) listSecrets(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	list, err := svc.SecretNames(c.UserContext(), principal(c).User.Key())
	if err != nil {
		return s.credentialsError(err)
	}
	out := SecretList{Object: "list", Data: []SecretObject{}}
	for _, cr := range list {
		out.Data = append(out.Data, secretObject(cr))
	}
	return c.JSON(out)
}

func secretObject(cr store.Credential) SecretObject {
	return SecretObject{Name: cr.Name, Object: "secret", UpdatedAt: cr.UpdatedAt.Unix()}
}

// putSecret sets one of the caller's secrets: {"value": "..."}.
func (s *Server) putSecret(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	name := c.Params("name")
	if !usercreds.ValidSecretName(name) {
		return errBadRequest(usercreds.ErrBadSecretName.Error())
	}
	if len(c.Body()) > 2*usercreds.MaxSecretSize {
		return errPayloadTooLarge("a secret is at most " + strconv.Itoa(usercreds.MaxSecretSize) + " bytes")
	}
	var body struct {
		Value *string `json:"value"`
	}
	if err := json.Unmarshal(c.Body(), &body); err != nil || body.Value == nil {
		return errBadRequest(`the body must be {"value": "<the secret>"}`)
	}
	if *body.Value == "" {
		return errBadRequest("value: empty; DELETE the secret instead")
	}
	if len(*body.Value) > usercreds.MaxSecretSize {
		return errPayloadTooLarge("a secret is at most " + strconv.Itoa(usercreds.MaxSecretSize) + " bytes")
	}
	if err := svc.SetSecret(c.UserContext(), principal(c).User.Key(), name, *body.Value); err != nil {
		return s.credentialsError(err)
	}
	return c.JSON(SecretObject{Name: name, Object: "secret", UpdatedAt: time.Now().Unix()})
}

func (s *Server) deleteSecret(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	name := c.Params("name")
	ok, err := svc.DeleteSecret(c.UserContext(), principal(c).User.Key(), name)
	if err != nil {
		return s.credentialsError(err)
	}
	if !ok {
		return errNotFound("no secret " + strconv.Quote(name))
	}
	return c.JSON(Deleted{ID: name, Object: "secret.deleted", Deleted: true})
}
