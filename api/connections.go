package api

import (
	"encoding/json"
	"errors"
	"html"
	"strconv"
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

// authorizeConnection starts the caller's authorization of an MCP server:
// a 302 to the server's authorization endpoint (PKCE, a single-use state
// bound to the caller), or with ?redirect=false the link as JSON.
func (s *Server) authorizeConnection(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	server := c.Params("server")
	link, err := svc.AuthorizeURL(c.UserContext(), principal(c).User.Key(), server)
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

// oauthCallback is the redirect URI, LONGHAUL_PUBLIC_URL/oauth/callback:
// unauthenticated by nature (the user's browser brings it), so it trusts
// nothing but the state, which is unguessable, single-use, expiring and
// bound to the principal that started the flow.
func (s *Server) oauthCallback(c *fiber.Ctx) error {
	svc, err := s.credentials()
	if err != nil {
		return err
	}
	if e := c.Query("error"); e != "" {
		// The user declined, or the server refused: the state is spent.
		_, _, _ = svc.Callback(c.UserContext(), c.Query("state"), "")
		return errBadRequest("the authorization server answered " + strconv.Quote(e) + "; nothing was connected")
	}
	_, server, err := svc.Callback(c.UserContext(), c.Query("state"), c.Query("code"))
	if err != nil {
		return s.credentialsError(err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set("Cache-Control", "no-store")
	return c.SendString("<!doctype html><title>Connected</title><p>Your " + html.EscapeString(server) +
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
