package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/llmtest"
	"github.com/longhaul-dev/longhaul/internal/wire"
)

// TestUnstoredResponseGoesHoweverItEnds checks that a store:false response
// whose request ends before its answer — the client leaving the stream,
// the non-streamed wait timing out — is stopped and deleted, not left to
// finish and be read.
func TestUnstoredResponseGoesHoweverItEnds(t *testing.T) {
	env, alice, _ := respStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// gone waits for run to end and checks that it was stopped, not left
	// to complete, and that its response reads as gone.
	gone := func(t *testing.T, run string) {
		t.Helper()
		err := env.Client.GetWorkflow(ctx, run, "").Get(ctx, nil)
		if ctx.Err() != nil {
			t.Fatalf("run %s did not end: %v", run, err)
		}
		if err == nil {
			t.Errorf("run %s completed: it should have been stopped with its request", run)
		}
		id := "resp_" + base64.RawURLEncoding.EncodeToString([]byte(run)) + ".0"
		for _, path := range []string{"/v1/responses/" + id, "/v1/responses/" + id + "?stream=true", "/v1/responses/" + id + "/input_items"} {
			if resp := do(t, env, "GET", path, nil, alice); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: status %d, want 404", path, resp.StatusCode)
			}
		}
	}

	t.Run("the client leaves the stream", func(t *testing.T) {
		env.Model.Enqueue(llmtest.Text(strings.Repeat("word ", 200), llmtest.ChunkSize(5), llmtest.ChunkDelay(20*time.Millisecond)))
		rctx, leave := context.WithCancel(ctx)
		defer leave()
		body, _ := json.Marshal(map[string]any{"model": "naked", "input": "Tell me a secret.", "store": false, "stream": true})
		req, _ := http.NewRequestWithContext(rctx, "POST", env.URL+"/v1/responses", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", alice["Authorization"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		run := resp.Header.Get(api.HeaderRunID)
		sc := bufio.NewScanner(resp.Body)
		var created string
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var e wire.StreamEvent
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("frame %q: %v", data, err)
			}
			if e.Type == "response.created" {
				created = e.Response.ID
			}
			if e.Type == "response.output_text.delta" {
				break // the answer has begun: leave
			}
		}
		if created != "resp_"+base64.RawURLEncoding.EncodeToString([]byte(run))+".0" {
			t.Fatalf("response %q of run %q: the test's idea of response ids is wrong", created, run)
		}
		leave()
		resp.Body.Close()
		gone(t, run)
	})

	t.Run("the non-streamed wait times out", func(t *testing.T) {
		impatient := env.StartAPI(func(c *api.Config) { c.RequestTimeout = 300 * time.Millisecond })
		env.Model.Enqueue(llmtest.Delay(3*time.Second, llmtest.Text("Too late.")))
		resp := doAt(t, impatient.URL, "POST", "/v1/responses", map[string]any{"model": "naked", "input": "Tell me slowly.", "store": false}, alice)
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("status %d, want 504: %s", resp.StatusCode, readBody(t, resp))
		}
		if e := decode[wire.ErrorBody](t, resp); !strings.Contains(e.Error.Message, "store: false") {
			t.Errorf("504 says %q: it should say the response was dropped", e.Error.Message)
		}
		gone(t, resp.Header.Get(api.HeaderRunID))
	})

	t.Run("the stream is refused", func(t *testing.T) {
		limited := env.StartAPI(func(c *api.Config) { c.Limits = api.Limits{Streams: 1} })
		env.Model.Enqueue(llmtest.Hang())
		asked := len(env.Model.Requests()) + 1
		bg := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "input": "Take forever.", "background": true}, alice))
		if err := env.Model.WaitRequests(ctx, asked); err != nil {
			t.Fatal(err)
		}
		// Alice's one stream on the limited API follows her background run.
		held := doAt(t, limited.URL, "GET", "/v1/responses/"+bg.ID+"?stream=true", nil, alice)
		if held.StatusCode != http.StatusOK {
			t.Fatalf("held stream: status %d", held.StatusCode)
		}
		// Whether the run asks the model before it is stopped is a race:
		// its answer is not taken from the queue the other cases use.
		env.Model.On(func(r llmtest.Request) bool { return r.LastUserMessage() == "Stream to me." },
			llmtest.Delay(3*time.Second, llmtest.Text("Nobody hears me.")))
		resp := doAt(t, limited.URL, "POST", "/v1/responses", map[string]any{"model": "naked", "input": "Stream to me.", "store": false, "stream": true}, alice)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("status %d, want 429: %s", resp.StatusCode, readBody(t, resp))
		}
		gone(t, resp.Header.Get(api.HeaderRunID))
		held.Body.Close()
		if r := okResponse(t, do(t, env, "POST", "/v1/responses/"+bg.ID+"/cancel", nil, alice)); r.Status != "cancelled" {
			t.Errorf("cancelled = %+v", r)
		}
	})

	t.Run("the API does not delete it", func(t *testing.T) {
		// An API that cannot delete from its blob store (and so never gets
		// to delete the run) stands in for one that died before it could.
		crippled := env.StartAPI(func(c *api.Config) { c.Blobs = noDeletes{c.Blobs} })
		env.Model.Enqueue(llmtest.Text("Nobody deletes me."))
		resp := doAt(t, crippled.URL, "POST", "/v1/responses", map[string]any{"model": "naked", "input": "Keep nothing.", "store": false}, alice)
		if r := okResponse(t, resp); outputText(r) != "Nobody deletes me." {
			t.Fatalf("response %+v", r)
		}
		run := resp.Header.Get(api.HeaderRunID)
		if err := env.Client.GetWorkflow(ctx, run, "").Get(ctx, nil); err != nil {
			t.Fatalf("run %s: %v", run, err)
		}
		id := "resp_" + base64.RawURLEncoding.EncodeToString([]byte(run)) + ".0"
		if resp := do(t, env, "GET", "/v1/responses/"+id, nil, alice); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404: the run should have marked itself deleted", id, resp.StatusCode)
		}
	})
}

// noDeletes is a blob store that refuses to delete runs or mark them
// deleted.
type noDeletes struct{ store.Store }

func (n noDeletes) Put(ctx context.Context, b store.Blob) (string, error) {
	if b.Kind == contract.DeletedRunKind {
		return "", errors.New("no marks here")
	}
	return n.Store.Put(ctx, b)
}

func (n noDeletes) DeleteRun(context.Context, string) error {
	return errors.New("no deletes here")
}
