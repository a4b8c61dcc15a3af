package account

import (
	"context"
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
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// The users' own credentials: the MCP servers they connect with their own
// accounts (OAuth, the MCP authorization spec) and the secrets their HTTP
// tools send (${user.secret:NAME}). Tokens and secret values are sealed in
// the store and never answered, logged or handed to a workflow.

func (h *Handlers) credentials() (*usercreds.Service, error) {
	if h.Credentials == nil {
		return nil, web.NotFound("users' own credentials are off on this server (LONGHAUL_TOKEN_KEY is not set)")
	}
	return h.Credentials, nil
}

// credentialsError translates a credentials failure.
func (h *Handlers) credentialsError(err error) error {
	switch {
	case errors.Is(err, usercreds.ErrUnknownServer):
		return web.NotFound(err.Error())
	case errors.Is(err, usercreds.ErrBadSecretName), errors.Is(err, usercreds.ErrBadState):
		return web.BadRequest(err.Error())
	case errors.Is(err, usercreds.ErrOtherBrowser):
		return web.Forbidden(err.Error())
	}
	h.log().Error("users' credentials failed", "error", err)
	return web.Upstream("connecting the account failed: " + err.Error())
}

// ListConnections is GET /v1/connections: every MCP server the caller may
// connect with their own account, and whether they did.
func (h *Handlers) ListConnections(c *fiber.Ctx) error {
	svc, err := h.credentials()
	if err != nil {
		return err
	}
	list, err := svc.Connections(c.UserContext(), web.Principal(c).User.Key())
	if err != nil {
		return h.credentialsError(err)
	}
	out := wire.ConnectionList{Object: "list", Data: make([]wire.Connection, 0, len(list))}
	for _, cn := range list {
		out.Data = append(out.Data, wire.Connection{Server: cn.Server, Connected: cn.Connected, Scopes: cn.Scopes, ExpiresAt: cn.ExpiresAt, UpdatedAt: cn.UpdatedAt})
	}
	return c.JSON(out)
}

// AuthorizeConnection gives the caller a connect link for an MCP server
// (usercreds.Service.ConnectLink): a 302 to it, or with ?redirect=false
// the link as JSON. The link leads to the page that names the caller and
// asks to confirm; the authorization starts there.
func (h *Handlers) AuthorizeConnection(c *fiber.Ctx) error {
	svc, err := h.credentials()
	if err != nil {
		return err
	}
	server := c.Params("server")
	link, err := svc.ConnectLink(c.UserContext(), web.Principal(c).User.Key(), server, "")
	if err != nil {
		return h.credentialsError(err)
	}
	if c.Query("redirect") == "false" {
		return c.JSON(wire.AuthorizeLink{Server: server, URL: link})
	}
	return c.Redirect(link, fiber.StatusFound)
}

// DeleteConnection is DELETE /v1/connections/{server}: the caller's
// tokens for the server are revoked (where it allows) and deleted.
func (h *Handlers) DeleteConnection(c *fiber.Ctx) error {
	return h.deleteOwn(c, c.Params("server"), "connection.deleted", "no connection to ", (*usercreds.Service).Disconnect)
}

// deleteOwn answers the DELETE of one of the caller's own credentials,
// named id: del removes it and reports whether there was one. object is
// the answer's, and missing goes before the quoted id in the 404.
func (h *Handlers) deleteOwn(c *fiber.Ctx, id, object, missing string, del func(*usercreds.Service, context.Context, string, string) (bool, error)) error {
	svc, err := h.credentials()
	if err != nil {
		return err
	}
	ok, err := del(svc, c.UserContext(), web.Principal(c).User.Key(), id)
	if err != nil {
		return h.credentialsError(err)
	}
	if !ok {
		return web.NotFound(missing + strconv.Quote(id))
	}
	return c.JSON(wire.Deleted{ID: id, Object: object, Deleted: true})
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

// ConnectPage answers a connect link (usercreds.ConnectPath): a page that
// names the Longhaul user and the server the account would be connected
// to, with a button that POSTs the confirmation. Opening the link starts
// nothing: the authorization starts only on that POST, from this browser.
func (h *Handlers) ConnectPage(c *fiber.Ctx) error {
	svc, err := h.credentials()
	if err != nil {
		return err
	}
	id := c.Params("id")
	user, server, err := svc.Link(c.UserContext(), id)
	if err != nil {
		return h.credentialsError(err)
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

// ConfirmConnect is the connect page's POST: with the browser cookie and
// the same secret in the form (a request from another site carries
// neither), it spends the link, starts the authorization bound to this
// browser and sends it to the authorization server.
func (h *Handlers) ConfirmConnect(c *fiber.Ctx) error {
	svc, err := h.credentials()
	if err != nil {
		return err
	}
	secret := browserSecret(c)
	if secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(c.FormValue("confirm"))) != 1 {
		return web.Forbidden("confirm on the connect page: open the connect link in your browser and press its button")
	}
	link, err := svc.Confirm(c.UserContext(), c.Params("id"), secret)
	if err != nil {
		return h.credentialsError(err)
	}
	c.Set("Cache-Control", "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	return c.Redirect(link, fiber.StatusSeeOther)
}

// OAuthCallback is the redirect URI, LONGHAUL_PUBLIC_URL/oauth/callback:
// unauthenticated by nature (the user's browser brings it). It completes
// only with a state that is unguessable, single-use, expiring and bound to
// the principal the link was made for, in the browser that confirmed the
// link (its browser cookie): a flow started by one user cannot be
// finished by another's browser.
func (h *Handlers) OAuthCallback(c *fiber.Ctx) error {
	svc, err := h.credentials()
	if err != nil {
		return err
	}
	if e := c.Query("error"); e != "" {
		// The user declined, or the server refused: the state is spent
		// before the answer, so it can complete nothing later.
		if err := svc.Decline(c.UserContext(), c.Query("state")); err != nil {
			return h.credentialsError(err)
		}
		return web.BadRequest("the authorization server answered " + strconv.Quote(e) + "; nothing was connected")
	}
	done, err := svc.Complete(c.UserContext(), c.Query("state"), c.Query("code"), browserSecret(c))
	if err != nil {
		return h.credentialsError(err)
	}
	server := done.Server
	h.tellRun(c.UserContext(), done)
	pageHeaders(c)
	return c.SendString("<!doctype html><meta charset=utf-8><title>Connected</title><p>Your " + html.EscapeString(server) +
		" account is connected to Longhaul. You can close this tab and ask again in the chat.</p>")
}

// tellRun tells the run a completed connection's link was made for, if
// any, that its user connected the server, so that a run that waits for
// it (contract.WaitAuth) calls again. A run that does not wait (any more)
// refuses; the connection stands all the same.
func (h *Handlers) tellRun(ctx context.Context, done usercreds.Completed) {
	if done.Run == "" || h.Runs == nil {
		return
	}
	if _, err := h.Runs.Input(ctx, done.Run, "", contract.InputRequest{Connected: done.Server}); err != nil {
		h.log().InfoContext(ctx, "a connection's run was not waiting for it", "run", done.Run, "mcp_server", done.Server, "error", err)
		return
	}
	h.log().InfoContext(ctx, "a connection resumed the run that waited for it", "run", done.Run, "mcp_server", done.Server)
}

// ListSecrets is GET /v1/secrets: the names of the caller's secrets.
func (h *Handlers) ListSecrets(c *fiber.Ctx) error {
	svc, err := h.credentials()
	if err != nil {
		return err
	}
	list, err := svc.SecretNames(c.UserContext(), web.Principal(c).User.Key())
	if err != nil {
		return h.credentialsError(err)
	}
	out := wire.SecretList{Object: "list", Data: []wire.SecretObject{}}
	for _, cr := range list {
		out.Data = append(out.Data, secretObject(cr))
	}
	return c.JSON(out)
}

func secretObject(cr store.Credential) wire.SecretObject {
	return wire.SecretObject{Name: cr.Name, Object: "secret", UpdatedAt: cr.UpdatedAt.Unix()}
}

// PutSecret sets one of the caller's secrets: {"value": "..."}.
func (h *Handlers) PutSecret(c *fiber.Ctx) error {
	svc, err := h.credentials()
	if err != nil {
		return err
	}
	name := c.Params("name")
	if !usercreds.ValidSecretName(name) {
		return web.BadRequest(usercreds.ErrBadSecretName.Error())
	}
	if len(c.Body()) > 2*usercreds.MaxSecretSize {
		return web.PayloadTooLarge("a secret is at most " + strconv.Itoa(usercreds.MaxSecretSize) + " bytes")
	}
	var body struct {
		Value *string `json:"value"`
	}
	if err := json.Unmarshal(c.Body(), &body); err != nil || body.Value == nil {
		return web.BadRequest(`the body must be {"value": "<the secret>"}`)
	}
	if *body.Value == "" {
		return web.BadRequest("value: empty; DELETE the secret instead")
	}
	if len(*body.Value) > usercreds.MaxSecretSize {
		return web.PayloadTooLarge("a secret is at most " + strconv.Itoa(usercreds.MaxSecretSize) + " bytes")
	}
	if err := svc.SetSecret(c.UserContext(), web.Principal(c).User.Key(), name, *body.Value); err != nil {
		return h.credentialsError(err)
	}
	return c.JSON(wire.SecretObject{Name: name, Object: "secret", UpdatedAt: time.Now().Unix()})
}

// DeleteSecret is DELETE /v1/secrets/{name}.
func (h *Handlers) DeleteSecret(c *fiber.Ctx) error {
	return h.deleteOwn(c, c.Params("name"), "secret.deleted", "no secret ", (*usercreds.Service).DeleteSecret)
}
