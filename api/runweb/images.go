package runweb

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// ImagePolicy says which image URLs a request may hand to the model
// endpoint, which fetches them itself: the check is on the URL as written
// (a host name is not resolved; the endpoint resolves it on its own).
type ImagePolicy struct {
	// AllowHTTP accepts http: URLs besides https: and data: ones.
	AllowHTTP bool
	// AllowPrivate accepts hosts that are loopback, link-local, private or
	// otherwise not public addresses (internal/safehttp's rules), and
	// localhost.
	AllowPrivate bool
}

// numericHost matches a host that C's inet_aton (and so many HTTP clients
// other than Go's) reads as an IPv4 address although it is not a dotted
// quad: 2852039166, 0xA9.0xFE.0xA9.0xFE, 0251.254.169.254, 169.254.43518.
var numericHost = regexp.MustCompile(`^((0x[0-9a-f]*|[0-9]+)\.){0,3}(0x[0-9a-f]*|[0-9]+)$`)

// checkURL reports why an image URL may not reach the model endpoint, or
// nil.
func (p ImagePolicy) checkURL(raw string) error {
	if len(raw) >= 5 && strings.EqualFold(raw[:5], "data:") {
		return nil
	}
	schemes := "https: and data: URLs"
	if p.AllowHTTP {
		schemes = "https:, http: and data: URLs"
	}
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == '\\' || r == 0x7f }) {
		return errors.New("must not hold spaces, backslashes or control characters (percent-encode them)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL; %s are accepted", schemes)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !p.AllowHTTP {
			return errors.New("http: URLs are refused (LONGHAUL_IMAGE_URL_HTTP=true accepts them); send an https: or a data: URL")
		}
	default:
		return fmt.Errorf("only %s are accepted", schemes)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if u.Opaque != "" || host == "" {
		return errors.New("names no host")
	}
	if p.AllowPrivate {
		return nil
	}
	const allow = " (LONGHAUL_IMAGE_URL_PRIVATE=true accepts it)"
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return errors.New("its host is a loopback name" + allow)
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if why := safehttp.BlockReason(addr); why != "" {
			return errors.New("its host is " + why + allow)
		}
		return nil
	}
	if numericHost.MatchString(host) {
		return errors.New("its host is a numeric address not written as four decimal numbers; write it as a.b.c.d")
	}
	return nil
}

// checkImages refuses, with a 400 naming the part, an image part of msgs
// whose URL the policy does not accept; where names part j of message i.
func (p ImagePolicy) checkImages(n int, parts func(i int) []longhaul.Part, where func(i, j int) string) error {
	for i := range n {
		for j, part := range parts(i) {
			if part.Type != longhaul.PartImage {
				continue
			}
			if err := p.checkURL(part.URL); err != nil {
				return web.BadRequest(where(i, j) + ": " + err.Error())
			}
		}
	}
	return nil
}

// CheckChatImages checks the image parts of chat messages (Chat Completions
// and the runs API).
func (p ImagePolicy) CheckChatImages(msgs []wire.ChatMessage) error {
	return p.checkImages(len(msgs), func(i int) []longhaul.Part { return msgs[i].Content.Parts },
		func(i, j int) string { return fmt.Sprintf("messages[%d].content[%d].image_url.url", i, j) })
}

// CheckInputImages checks the image parts of Responses input items.
func (p ImagePolicy) CheckInputImages(items []wire.InputItem) error {
	return p.checkImages(len(items), func(i int) []longhaul.Part {
		if items[i].Type != "message" {
			return nil
		}
		m, err := wire.ItemMessage(items[i])
		if err != nil {
			return nil // wire.ItemsToMessages has refused it already
		}
		return m.Parts
	}, func(i, j int) string { return fmt.Sprintf("input[%d].content[%d].image_url", i, j) })
}
