package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/testing/ssetest"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
	"github.com/longhaul-dev/longhaul/internal/tools"
)

// gauge is a tool that reports its progress once the test follows the
// run (followed), then holds its answer until the test saw the progress
// of every step (seen): its progress is live only, so the test makes sure
// a follower is there to see it.
type gauge struct {
	followed, seen chan struct{}
}

func (*gauge) Name() string        { return "gauge" }
func (*gauge) Description() string { return "Reads a gauge." }
func (*gauge) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"n":{"type":"string"}},"required":["n"],"additionalProperties":false}`)
}

func (g *gauge) Call(ctx context.Context, call tools.Call) (tools.Result, error) {
	var args struct{ N string }
	_ = json.Unmarshal(call.Arguments, &args)
	for _, ch := range []chan struct{}{g.followed, g.seen} {
		select {
		case <-ch:
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		case <-time.After(time.Minute):
			return tools.Result{}, errors.New("the test never followed the run")
		}
		if ch == g.followed {
			call.Progress("reading gauge "+args.N, 0.5)
		}
	}
	return tools.Result{Content: "gauge " + args.N + " reads 7"}, nil
}

var gauging = fstest.MapFS{
	"gauging.md": {Data: []byte("---\nskill: gauging\ndescription: Reads gauges\ntools: [gauge]\n---\nRead gauges.\n")},
	"gauger.md":  {Data: []byte("---\nagent: gauger\ndescription: Reads gauges\nmode: agentic\nskills: [gauging]\n---\nYou read gauges.\n")},
}

// TestStepProgressReachesTheRunsStream: two steps run at once, each in its
// own workflow; the progress their tool reports reaches a follower of the
// run (its activities publish under the run's id), each after its step's
// step_start.
func TestStepProgressReachesTheRunsStream(t *testing.T) {
	g := &gauge{followed: make(chan struct{}), seen: make(chan struct{})}
	env := testenv.Start(t, testenv.Options{Tools: []tools.Tool{g}, Layers: []fs.FS{gauging}})
	steps := []map[string]any{
		{"kind": "tool", "target": "gauge", "title": "Read gauge a", "arguments": map[string]string{"n": "a"}, "success": "a reading", "depends_on": []int{}},
		{"kind": "tool", "target": "gauge", "title": "Read gauge b", "arguments": map[string]string{"n": "b"}, "success": "a reading", "depends_on": []int{}},
		{"kind": "completion", "title": "Answer", "input": "the readings", "success": "both", "depends_on": []int{1, 2}},
	}
	env.Model.On(llmtest.HasSchema("plan"), llmtest.JSON(map[string]any{"goal": "Read two gauges", "steps": steps}))
	env.Model.On(llmtest.HasSchema("step_review"), llmtest.JSON(map[string]string{"decision": "ok", "reason": "read"}))
	env.Model.SetDefault(llmtest.Text("Both read 7."))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, _ := json.Marshal(map[string]any{"agent": "gauger", "input": "Read gauges a and b."})
	req, _ := http.NewRequestWithContext(ctx, "POST", env.URL+"/v1/runs", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || created.ID == "" {
		t.Fatalf("start the run: %v %+v", err, created)
	}
	req, _ = http.NewRequestWithContext(ctx, "GET", env.URL+"/v1/runs/"+created.ID+"/events", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var once, twice sync.Once
	stepOf := map[string]string{} // a tool call's step, from the step's start order
	var order []string
	rd := ssetest.NewReader(resp.Body)
	for {
		e, err := rd.Next()
		if err != nil {
			t.Fatalf("the stream ended before done: %v (so far %v)", err, order)
		}
		var ev longhaul.Event
		if json.Unmarshal([]byte(e.Data), &ev) != nil {
			continue
		}
		switch ev.Type {
		case longhaul.EventStepStart:
			var d longhaul.StepStartData
			_ = ev.Decode(&d)
			stepOf["step-"+d.StepID] = d.StepID
			order = append(order, "start "+d.StepID)
			if len(stepOf) == 2 {
				once.Do(func() { close(g.followed) })
			}
		case longhaul.EventToolStatus:
			var d longhaul.ToolStatusData
			_ = ev.Decode(&d)
			order = append(order, "status "+d.ToolCallID+" "+d.Message)
			if _, ok := stepOf[d.ToolCallID]; !ok {
				t.Errorf("progress of %s before its step started", d.ToolCallID)
			}
			if countPrefix(order, "status ") == 2 {
				twice.Do(func() { close(g.seen) })
			}
		}
		if ev.Type == longhaul.EventDone {
			break
		}
	}
	for _, want := range []string{"status step-1 reading gauge a", "status step-2 reading gauge b"} {
		if !contains(order, want) {
			t.Errorf("the stream lacks %q: %v", want, order)
		}
	}
}

func countPrefix(xs []string, p string) int {
	n := 0
	for _, x := range xs {
		if len(x) >= len(p) && x[:len(p)] == p {
			n++
		}
	}
	return n
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
