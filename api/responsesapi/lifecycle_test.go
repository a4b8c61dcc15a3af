package responsesapi_test

import (
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/webtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// lifeStep is one request of TestResponsesLifecycle. Its path and body
// may name a response an earlier step created: {name} is its id,
// {name.999} the id of a start of its run that never was.
type lifeStep struct {
	name         string
	method, path string
	body         string
	bob          bool
	status       int
	// want are pieces of the answer's body, in order; last, the type of a
	// stream's last event.
	want []string
	last string
	// save names the response the answer is, for later steps.
	save string
	// check, when set, checks the answer's body further.
	check func(t *testing.T, body string)
}

// TestResponsesLifecycle covers background responses, cancel, store:
// false, DELETE, bad requests and another principal's every route, on one
// server whose runs answer what they were asked ("Take forever." never).
func TestResponsesLifecycle(t *testing.T) {
	fake := runsfake.New()
	fake.OnStart = func(r *runsfake.Run) {
		answers := map[string]string{"Work quietly.": "Done in the background.", "Secret.": "Forget me.", "Hello": "Mine."}
		msgs := r.Input.Messages
		if answer, ok := answers[msgs[len(msgs)-1].Content]; ok {
			r.Emit(longhaul.EventUsage, longhaul.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7})
			runsfake.Answered(answer)(r)
		}
	}
	app := serve(t, fake)
	post := func(fields string) string { return `{"model":"naked",` + fields + `}` }
	var steps []lifeStep
	steps = append(steps, lifeBackgroundAndCancel(post)...)
	steps = append(steps, lifeUnstored(post)...)
	steps = append(steps, lifeDeleteAndIsolation(post)...)
	steps = append(steps, lifeBadRequests(post)...)
	ids := map[string]string{}
	idOf := regexp.MustCompile(`"id":"(resp_[^"]+)"`)
	for _, s := range steps {
		who := webtest.Alice
		if s.bob {
			who = webtest.Bob
		}
		resp := webtest.Do(t, app, s.method, fill(s.path, ids), fill(s.body, ids), who)
		b, _ := io.ReadAll(resp.Body)
		body := string(b)
		want := make([]string, len(s.want))
		for i, w := range s.want {
			want[i] = fill(w, ids)
		}
		if resp.StatusCode != s.status || !inOrder(body, want) {
			t.Fatalf("%s: %s %s = %d %s, want %d with %q", s.name, s.method, s.path, resp.StatusCode, body, s.status, s.want)
		}
		if i := strings.LastIndex(body, "event: "); s.last != "" && (i < 0 || !strings.HasPrefix(body[i:], "event: "+s.last+"\n")) {
			t.Errorf("%s: the stream's last event is not %s: %s", s.name, s.last, body)
		}
		if s.check != nil {
			s.check(t, body)
		}
		if s.save != "" {
			m := idOf.FindStringSubmatch(body)
			if m == nil {
				t.Fatalf("%s: no response id in %s", s.name, body)
			}
			ids[s.save] = m[1]
		}
	}
}

// fill puts the ids of ids into s.
func fill(s string, ids map[string]string) string {
	for name, id := range ids {
		s = strings.ReplaceAll(s, "{"+name+".999}", strings.TrimSuffix(id, ".0")+".999")
		s = strings.ReplaceAll(s, "{"+name+"}", id)
	}
	return s
}

// inOrder reports whether body holds the pieces want, in order.
func inOrder(body string, want []string) bool {
	for _, w := range want {
		i := strings.Index(body, w)
		if i < 0 {
			return false
		}
		body = body[i+len(w):]
	}
	return true
}

func lifeBackgroundAndCancel(post func(string) string) []lifeStep {
	return []lifeStep{
		{name: "background", method: "POST", path: "/v1/responses", body: post(`"input":"Work quietly.","background":true`), status: 200,
			want: []string{`"status":"queued"`, `"background":true`, `"output":[]`}, save: "bg"},
		{name: "background, followed", method: "GET", path: "/v1/responses/{bg}?stream=true", status: 200,
			want: []string{"event: response.created", `"status":"queued"`}, last: "response.completed", check: func(t *testing.T, body string) {
				if first, _, _ := strings.Cut(body[strings.Index(body, "event: ")+1:], "event: "); !strings.Contains(first, `"status":"queued"`) {
					t.Errorf("the followed stream's first event is not the queued response: %s", first)
				}
			}},
		{name: "background, read", method: "GET", path: "/v1/responses/{bg}", status: 200,
			want: []string{`"status":"completed"`, `"text":"Done in the background."`, `"usage":{`, `"total_tokens":7`}},
		{name: "cancel: created", method: "POST", path: "/v1/responses", body: post(`"input":"Take forever.","background":true`), status: 200, save: "slow"},
		{name: "cancel: bob", method: "POST", path: "/v1/responses/{slow}/cancel", bob: true, status: 404},
		{name: "cancel", method: "POST", path: "/v1/responses/{slow}/cancel", status: 200, want: []string{`"status":"cancelled"`}},
		{name: "cancel again", method: "POST", path: "/v1/responses/{slow}/cancel", status: 409},
	}
}

func lifeUnstored(post func(string) string) []lifeStep {
	steps := []lifeStep{
		{name: "store false", method: "POST", path: "/v1/responses", body: post(`"input":"Secret.","store":false`), status: 200,
			want: []string{`"text":"Forget me."`, `"store":false`}, save: "unstored"},
		{name: "store false, streamed", method: "POST", path: "/v1/responses", body: post(`"input":"Secret.","store":false,"stream":true`), status: 200,
			want: []string{"event: response.created", `"delta":"Forget me."`}, last: "response.completed", save: "unstreamed"},
	}
	for _, r := range []string{"{unstored}", "{unstreamed}"} {
		steps = append(steps,
			lifeStep{name: "store false: GET", method: "GET", path: "/v1/responses/" + r, status: 404},
			lifeStep{name: "store false: input items", method: "GET", path: "/v1/responses/" + r + "/input_items", status: 404},
			lifeStep{name: "store false: continued", method: "POST", path: "/v1/responses", body: post(`"input":"Again","previous_response_id":"` + r + `"`), status: 404},
		)
	}
	return steps
}

func lifeDeleteAndIsolation(post func(string) string) []lifeStep {
	steps := []lifeStep{{name: "metadata", method: "POST", path: "/v1/responses", body: post(`"input":"Hello","metadata":{"k":"v"}`), status: 200,
		want: []string{`"metadata":{"k":"v"}`}, save: "mine"}}
	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/responses/{mine}"}, {"GET", "/v1/responses/{mine}?stream=true"},
		{"GET", "/v1/responses/{mine}/input_items"}, {"POST", "/v1/responses/{mine}/cancel"},
		{"DELETE", "/v1/responses/{mine}"},
	} {
		steps = append(steps, lifeStep{name: "bob: " + rt.method + " " + rt.path, method: rt.method, path: rt.path, bob: true, status: 404})
	}
	for _, path := range []string{"/v1/responses/{mine.999}", "/v1/responses/{mine.999}?stream=true", "/v1/responses/{mine.999}/input_items"} {
		steps = append(steps, lifeStep{name: "forged: " + path, method: "GET", path: path, status: 404})
	}
	return append(steps,
		lifeStep{name: "input items", method: "GET", path: "/v1/responses/{mine}/input_items", status: 200, check: func(t *testing.T, body string) {
			var items wire.InputItemList
			if err := json.Unmarshal([]byte(body), &items); err != nil || items.Object != "list" || len(items.Data) != 1 || *items.FirstID != items.Data[0].ID {
				t.Errorf("input items = %s", body)
			}
		}},
		lifeStep{name: "delete", method: "DELETE", path: "/v1/responses/{mine}", status: 200,
			want: []string{`"id":"{mine}"`, `"object":"response.deleted"`, `"deleted":true`}},
		lifeStep{name: "GET after DELETE", method: "GET", path: "/v1/responses/{mine}", status: 404},
	)
}

func lifeBadRequests(post func(string) string) []lifeStep {
	bad := func(name, fields string, status int, msg string) lifeStep {
		return lifeStep{name: name, method: "POST", path: "/v1/responses", body: post(fields), status: status, want: []string{msg}}
	}
	return []lifeStep{
		bad("server-side tools", `"input":"x","tools":[{"type":"web_search"}]`, 400, "bring their own server-side tools"),
		{name: "an agent's own tool", method: "POST", path: "/v1/responses", body: `{"model":"assistant","input":"x","tools":[{"type":"function","name":"current_time"}]}`,
			status: 400, want: []string{"is a tool of agent assistant already"}},
		{name: "an unknown model", method: "POST", path: "/v1/responses", body: `{"model":"nope","input":"x"}`, status: 404, want: []string{"does not exist"}},
		bad("an unknown previous response", `"input":"x","previous_response_id":"resp_bm9wZQ.0"`, 404, "no response"),
		bad("an item reference", `"input":[{"type":"item_reference","id":"msg_1"}]`, 400, "not supported"),
		{name: "a malformed id", method: "GET", path: "/v1/responses/resp_garbage", status: 404},
	}
}
