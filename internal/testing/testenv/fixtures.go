package testenv

import "testing/fstest"

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
