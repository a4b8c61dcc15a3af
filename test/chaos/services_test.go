//go:build unix

package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

// shop is the HTTP service the runs' tool calls: placing an order is its
// side effect. It honours Idempotency-Key as a careful service does: the
// first request with a key places the order and stores the answer; a
// repeated key places nothing and gets the stored answer. Each worker slot
// calls it under its own path (/w0/, /w1/), so the test knows which
// worker a call in flight belongs to. It answers after 50 to 500 ms, so a
// kill can land in the middle of a call: the order is placed, the answer
// never reaches the worker, and the retried call repeats the key.
type shop struct {
	mu       sync.Mutex
	keys     map[string]*order
	byItem   map[string][]string // item -> keys of orders placed for it
	requests int
	bad      []string // requests that broke the protocol
	inflight []int    // per worker slot
	changed  chan struct{}
}

// order is one placed order.
type order struct {
	item     string
	answer   string
	requests int
}

func newShop(slots int) *shop {
	return &shop{keys: map[string]*order{}, byItem: map[string][]string{}, inflight: make([]int, slots), changed: make(chan struct{})}
}

func (s *shop) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	slot, ok := strings.CutPrefix(r.URL.Path, "/w")
	slot, ok2 := strings.CutSuffix(slot, "/orders")
	i, err := strconv.Atoi(slot)
	var body struct {
		Item string `json:"item"`
	}
	derr := json.NewDecoder(r.Body).Decode(&body)
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	s.requests++
	if !ok || !ok2 || err != nil || i < 0 || i >= len(s.inflight) || r.Method != "POST" || derr != nil || body.Item == "" || key == "" {
		s.bad = append(s.bad, fmt.Sprintf("%s %s key %q item %q", r.Method, r.URL.Path, key, body.Item))
		s.mu.Unlock()
		http.Error(w, "bad order", http.StatusBadRequest)
		return
	}
	o, seen := s.keys[key]
	if !seen {
		// The side effect.
		o = &order{item: body.Item, answer: fmt.Sprintf("order %s placed as #%d", body.Item, len(s.keys)+1)}
		s.keys[key] = o
		s.byItem[body.Item] = append(s.byItem[body.Item], key)
	}
	o.requests++
	s.inflight[i]++
	s.notifyLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight[i]--
		s.notifyLocked()
		s.mu.Unlock()
	}()
	select {
	case <-time.After(time.Duration(50+rand.IntN(451)) * time.Millisecond):
	case <-r.Context().Done():
		return // the worker is gone; the order stays placed
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprint(w, o.answer)
}

// waitInflight waits up to d for a tool call in flight and returns a
// worker slot with one, picked at random, and true; or a random slot and
// false when none came.
func (s *shop) waitInflight(d time.Duration) (int, bool) {
	timeout := time.After(d)
	for {
		s.mu.Lock()
		var busy []int
		for i, n := range s.inflight {
			if n > 0 {
				busy = append(busy, i)
			}
		}
		changed := s.changed
		s.mu.Unlock()
		if len(busy) > 0 {
			return busy[rand.IntN(len(busy))], true
		}
		select {
		case <-changed:
		case <-timeout:
			return rand.IntN(len(s.inflight)), false
		}
	}
}

// shopReport is what the shop saw, per item.
type shopReport struct {
	requests int
	retried  int                 // requests that repeated a key
	keys     map[string][]string // item -> keys
	answers  map[string]string   // key -> stored answer
	bad      []string
}

func (s *shop) report() shopReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep := shopReport{requests: s.requests, keys: map[string][]string{}, answers: map[string]string{}, bad: append([]string(nil), s.bad...)}
	for item, keys := range s.byItem {
		rep.keys[item] = append([]string(nil), keys...)
	}
	for k, o := range s.keys {
		rep.answers[k] = o.answer
		rep.retried += o.requests - 1
	}
	return rep
}

// Texts of the scripted model.
const (
	inputPrefix = "Please order "
	// answerTail makes the final answer stream in many chunks, so that
	// kills and restarts land in the middle of it too.
	answerTail = "Your order went through and the shop confirmed it. Thank you for your patience while it was placed; nothing more is needed from you."
)

// callID is the tool call id the model gives the order of item.
func callID(item string) string { return "call-" + item }

// finalAnswer is the run's answer once the shop answered the order.
func finalAnswer(shopAnswer string) string {
	return "Done: " + shopAnswer + ". " + answerTail
}

// script makes the model answer every run of the test: a first call asks
// for the order of the item named in the input; once the conversation holds
// the tool's answer, the model streams the final answer built from it.
func script(model *llmtest.Server) {
	model.SetDefault(llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		var item string
		for _, m := range r.Chat.Messages {
			if m.Role == openai.ChatMessageRoleUser {
				if v, ok := strings.CutPrefix(llmtest.MessageText(m), inputPrefix); ok {
					item = v
				}
			}
		}
		if item == "" {
			return llmtest.Status(400, "chaos: a request without an order")
		}
		for _, m := range r.Chat.Messages {
			if m.Role == openai.ChatMessageRoleTool && m.ToolCallID == callID(item) {
				return llmtest.Text(finalAnswer(m.Content), llmtest.ChunkDelay(40*time.Millisecond))
			}
		}
		args, _ := json.Marshal(map[string]string{"item": item})
		return llmtest.ToolCalls(llmtest.ToolCall{ID: callID(item), Name: "place_order", Arguments: string(args)}).
			With(llmtest.FirstByteDelay(time.Duration(rand.IntN(300)) * time.Millisecond))
	}))
}

// Agent and skill files of the test: the agent clerk places orders through
// the shop, a declared HTTP tool whose URL each worker reads from its own
// environment.
const (
	clerkAgent = `---
agent: clerk
description: Places orders
mode: chat
skills: [orders]
max_turns: 4
---
You place the orders people ask for.
`
	ordersSkill = `---
skill: orders
description: Places orders at the shop
tools: [place_order]
http_tools:
  - name: place_order
    description: Place an order for an item
    method: POST
    url: ${CHAOS_SHOP_URL}/orders
    parameters: {type: object, properties: {item: {type: string}}, required: [item]}
---
Place the order with place_order, then say what the shop answered.
`
)
