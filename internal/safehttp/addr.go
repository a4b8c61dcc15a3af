package safehttp

import (
	"fmt"
	"net/netip"
)

// blockedRange is a prefix that no model-chosen request may reach.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// blockedV4 lists the IPv4 ranges that are not publicly routable or that
// reach something other than an ordinary public host. More specific
// prefixes come first so the message is the most precise one.
var blockedV4 = []blockedRange{
	{netip.MustParsePrefix("0.0.0.0/32"), "an unspecified address"},
	{netip.MustParsePrefix("0.0.0.0/8"), `in the "this network" range`},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT) address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.169.254/32"), "a link-local address (cloud metadata endpoint)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay anycast address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
}

// blockedV6 lists the IPv6 ranges refused outright. Ranges that embed an
// IPv4 address (IPv4-mapped, NAT64, 6to4) are handled by embeddedV4.
var blockedV6 = []blockedRange{
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address (deprecated)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo tunnel address"},
	{netip.MustParsePrefix("2001:2::/48"), "a benchmarking address"},
	{netip.MustParsePrefix("2001:10::/28"), "an ORCHID address (deprecated)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
	{netip.MustParsePrefix("fc00::/7"), "a private address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address (deprecated)"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// blockReason returns why addr must not be dialed, or "" when it is an
// ordinary public address. IPv4-mapped IPv6 addresses are judged as the
// IPv4 address they map; NAT64 and 6to4 addresses are judged by the IPv4
// address they embed.
func blockReason(addr netip.Addr) string {
	if !addr.IsValid() {
		return "not a valid address"
	}
	addr = addr.WithZone("")
	if addr.Is4In6() {
		if r := blockReason(addr.Unmap()); r != "" {
			return "an IPv4-mapped form of " + r
		}
		return ""
	}
	if addr.Is4() {
		return match(blockedV4, addr)
	}
	if v4, kind, ok := embeddedV4(addr); ok {
		if r := blockReason(v4); r != "" {
			return fmt.Sprintf("a %s address embedding %s, %s", kind, v4, r)
		}
		return ""
	}
	return match(blockedV6, addr)
}

// embeddedV4 extracts the IPv4 address carried by a NAT64 well-known
// prefix address (RFC 6052) or a 6to4 address (RFC 3056).
func embeddedV4(addr netip.Addr) (netip.Addr, string, bool) {
	b := addr.As16()
	switch {
	case nat64Prefix.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64", true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4", true
	}
	return netip.Addr{}, "", false
}

func match(ranges []blockedRange, addr netip.Addr) string {
	for _, r := range ranges {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	return ""
}

// BlockReason returns why a client of this package would refuse to dial
// addr (a loopback, link-local, private or otherwise not public address), or
// "" when it is an ordinary public address. It lets other checks of URLs
// that another program will fetch apply the same rules.
func BlockReason(addr netip.Addr) string { return blockReason(addr) }
