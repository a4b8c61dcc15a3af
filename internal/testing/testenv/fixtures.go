package testenv

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"testing/fstest"

	"github.com/longhaul-dev/longhaul/internal/safehttp"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// Site serves h on the loopback for an agent to read with web_fetch: it
// returns the site's URL and the Options.Fetch that lets web_fetch reach
// that one address, which it refuses otherwise, as in production.
func Site(t testing.TB, h http.Handler) (url string, fetch tools.WebFetchOptions) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	return srv.URL, tools.WebFetchOptions{HTTP: safehttp.Options{AllowAddrs: []netip.AddrPort{ap}}, AllowedPorts: []int{int(ap.Port())}}
}

// Clerk is a layer of agent files for approval tests: the agent clerk with
// the skill orders, whose one tool, place_order, POSTs {"item": …} to
// ${SHOP_URL}/orders and needs a person's approval for every call. Pass it
// in Options.Layers with SHOP_URL in Options.Env.
var Clerk = fstest.MapFS{
	"orders.md": {Data: []byte(`---
skill: orders
description: Places orders
tools: [place_order]
http_tools:
  - name: place_order
    description: Place an order for an item
    method: POST
    url: ${SHOP_URL}/orders
    parameters: {type: object, properties: {item: {type: string}}, required: [item]}
    approval: required
---
Place the orders the user asks for.`)},
	"clerk.md": {Data: []byte("---\nagent: clerk\ndescription: Orders things\nmode: chat\nskills: [orders]\n---\nYou order things.\n")},
}
