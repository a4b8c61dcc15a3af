// Package usercreds keeps the credentials each user gives the engine — the
// OAuth tokens of the MCP servers they connect (the MCP authorization spec,
// 2025-06-18: OAuth 2.1 with PKCE, RFC 9728 and RFC 8414 discovery, RFC 7591
// dynamic client registration) and the named secrets their HTTP tools send
// (${user.secret:NAME}) — sealed with AES-GCM under LONGHAUL_TOKEN_KEY in the
// store. It exists so that the API (which runs the authorization flow and
// takes the secrets) and the worker (which uses them at tool-call time) share
// one sealed format, and so that no credential ever passes through a
// workflow: the worker reads it from the store inside the activity.
package usercreds

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// KeySize is the length of LONGHAUL_TOKEN_KEY in bytes (64 hex digits).
const KeySize = 32

// Box seals and opens credentials with AES-256-GCM.
type Box struct {
	aead cipher.AEAD
}

// NewBox returns a Box for a key given as 64 hex digits. The error never
// holds the key.
func NewBox(hexKey string) (*Box, error) {
	key, err := hex.DecodeString(hexKey)
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("the token key must be %d bytes as %d hex digits (openssl rand -hex %d)", KeySize, 2*KeySize, KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("token key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("token key: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plain, binding it to aad (the row it is stored in), so a
// sealed value moved to another user's row does not open.
func (b *Box) Seal(plain, aad []byte) []byte {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return b.aead.Seal(nonce, nonce, plain, aad)
}

// ErrSealed is returned by Open for a value that does not open with this
// key and row: another key, another row, or a damaged value.
var ErrSealed = errors.New("the credential does not open with LONGHAUL_TOKEN_KEY")

// Open decrypts what Seal sealed with the same aad.
func (b *Box) Open(sealed, aad []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrSealed
	}
	plain, err := b.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrSealed
	}
	return plain, nil
}
