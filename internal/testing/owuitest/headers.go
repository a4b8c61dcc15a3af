package owuitest

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// This file is what identifies the user on each request: the forwarded
// user headers and the signed user token.

// headers are the request headers of get_headers_and_cookies
// (routers/openai.py:156-219) for user, chat and message.
func (c *Connection) headers(u User, chatID, messageID string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if c.ForwardUserInfo {
		for k, v := range c.userHeaders(u) {
			h.Set(k, v)
		}
		if chatID != "" {
			h.Set(HeaderChatID, chatID)
		}
	}
	if c.Key != "" {
		h.Set("Authorization", "Bearer "+c.Key)
	}
	// Custom headers last (openai.py:215-217); a placeholder without a
	// value becomes empty (utils/headers.py:115-139).
	var names, ids []string
	for _, g := range u.Groups {
		names = append(names, strings.TrimSpace(g.Name))
		ids = append(ids, g.ID)
	}
	for k, v := range c.Headers {
		v = strings.ReplaceAll(v, "{{CHAT_ID}}", chatID)
		v = strings.ReplaceAll(v, "{{MESSAGE_ID}}", messageID)
		v = strings.ReplaceAll(v, "{{USER_ID}}", u.ID)
		v = strings.ReplaceAll(v, "{{USER_NAME}}", strings.TrimSpace(u.Name))
		v = strings.ReplaceAll(v, "{{USER_EMAIL}}", strings.TrimSpace(u.Email))
		v = strings.ReplaceAll(v, "{{USER_ROLE}}", u.Role)
		v = strings.ReplaceAll(v, "{{USER_GROUPS}}", strings.Join(names, ","))
		v = strings.ReplaceAll(v, "{{USER_GROUP_IDS}}", strings.Join(ids, ","))
		h.Set(k, v)
	}
	return h
}

// userHeaders are include_user_info_headers (utils/headers.py:37-62).
func (c *Connection) userHeaders(u User) map[string]string {
	if c.JWTSecret != "" {
		return map[string]string{HeaderUserJWT: c.Token(u)}
	}
	return map[string]string{
		HeaderUserName:  pyQuote(strings.TrimSpace(u.Name)),
		HeaderUserID:    u.ID,
		HeaderUserEmail: strings.TrimSpace(u.Email),
		HeaderUserRole:  u.Role,
	}
}

// Token is the user's token as _mint_forward_user_jwt mints it
// (utils/headers.py:23-34): HS256 over sub, email, name, role, iss, iat
// and exp.
func (c *Connection) Token(u User) string {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	exp := c.JWTExpiry
	if exp == 0 {
		exp = DefaultJWTExpiry
	}
	iat := now().Unix()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": u.ID, "email": u.Email, "name": u.Name, "role": u.Role,
		"iss": "open-webui", "iat": iat, "exp": iat + int64(exp/time.Second),
	}).SignedString([]byte(c.JWTSecret))
	if err != nil {
		panic("owuitest: sign: " + err.Error())
	}
	return tok
}

// pyQuote is Python's urllib.parse.quote(s, safe=' '): every byte but
// letters, digits, "_.-~" and the space is percent-encoded.
func pyQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("_.-~ ", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
