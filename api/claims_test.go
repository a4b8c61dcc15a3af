package api_test

import (
	"context"
	"errors"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/api"
	"github.com/longhaul-dev/longhaul/internal/identity"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/testing/runsfake"
	"github.com/longhaul-dev/longhaul/internal/testing/testenv"
)

// countBlobs counts every blob in st.
func countBlobs(t *testing.T, st store.Store) int {
	t.Helper()
	ctx := context.Background()
	runs, err := st.RunsBefore(ctx, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, run := range runs {
		bs, err := st.List(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		n += len(bs)
	}
	return n
}

// failingPuts is a store whose Put fails after the first ok ones.
type failingPuts struct {
	store.Store
	ok atomic.Int32
}

func (f *failingPuts) Put(ctx context.Context, b store.Blob) (string, error) {
	if f.ok.Add(-1) < 0 {
		return "", errors.New("disk full")
	}
	return f.Store.Put(ctx, b)
}

// imageInput is a Responses input of text and images, each a data: URL
// big enough to be claim-checked.
func imageInput(text string, images ...string) []any {
	content := []any{map[string]any{"type": "input_text", "text": text}}
	for _, img := range images {
		content = append(content, map[string]any{"type": "input_image", "image_url": img})
	}
	return []any{map[string]any{"role": "user", "content": content}}
}

// TestRefusedRequestsStoreNoImages checks that a request's big images
// reach the blob store only once it is accepted: a request refused for the
// run limit, for naming another's response or for its size leaves no blob,
// and one whose start fails after storing takes its blobs back.
func TestRefusedRequestsStoreNoImages(t *testing.T) {
	fake := runsfake.New()
	env := testenv.Start(t, testenv.Options{Runs: fake, API: api.Config{
		Keys:   []identity.Key{{Name: "alice", Secret: "sk-alice"}, {Name: "bob", Secret: "sk-bob"}},
		Limits: api.Limits{Runs: 1},
	}})
	alice, bob := map[string]string{"Authorization": "Bearer sk-alice"}, map[string]string{"Authorization": "Bearer sk-bob"}
	img := "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 3000)
	img2 := "data:image/png;base64," + strings.Repeat("R0lGODlhAQ", 3000)
	// An engine that refuses every start as invalid, as Temporal refuses
	// a run it cannot take.
	refusing := runsfake.New()
	refusing.StartErr = &runs.Refusal{Kind: runs.ErrInvalid, Message: "refused by the test"}

	// Alice's one run never ends: she is at her limit.
	held := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "input": "Take forever.", "background": true}, alice))
	before := countBlobs(t, env.Blobs)

	refused := []struct {
		name    string
		base    string
		path    string
		body    map[string]any
		headers map[string]string
		status  int
	}{
		{"run limit, responses", env.URL, "/v1/responses", map[string]any{"model": "naked", "input": imageInput("What is it?", img)}, alice, http.StatusTooManyRequests},
		{"run limit, chat", env.URL, "/v1/chat/completions", map[string]any{"model": "naked", "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": img}}}}}}, alice, http.StatusTooManyRequests},
		{"another's response", env.URL, "/v1/responses", map[string]any{"model": "naked", "previous_response_id": held.ID, "input": imageInput("And this?", img)}, bob, http.StatusNotFound},
		{"too large once claimed", env.URL, "/v1/responses", map[string]any{"model": "naked", "input": imageInput(strings.Repeat("long text ", 200_000), img)}, bob, http.StatusRequestEntityTooLarge},
		{"the second image fails to store", env.StartAPI(func(c *api.Config) {
			f := &failingPuts{Store: env.Blobs}
			f.ok.Store(1)
			c.Blobs = f
		}).URL, "/v1/responses", map[string]any{"model": "naked", "input": imageInput("Two", img, img2)}, bob, http.StatusServiceUnavailable},
		{"the engine refuses the start", serve(t, api.New(api.Config{TaskQueue: "nowhere", Blobs: env.Blobs}, refusing, env.Catalog, slog.New(slog.DiscardHandler))),
			"/v1/responses", map[string]any{"model": "naked", "input": imageInput("Where?", img)}, nil, http.StatusBadRequest},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			resp := doAt(t, tc.base, "POST", tc.path, tc.body, tc.headers)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, readBody(t, resp))
			}
			if got := countBlobs(t, env.Blobs); got != before {
				t.Errorf("blobs: %d after the refused request, %d before", got, before)
			}
		})
	}

	// An accepted request does store its image: the count above can see one.
	fake.OnStart = runsfake.Answered("A picture.")
	if r := okResponse(t, do(t, env, "POST", "/v1/responses", map[string]any{"model": "naked", "input": imageInput("What is it?", img)}, bob)); outputText(r) != "A picture." {
		t.Fatalf("response %+v", r)
	}
	if got := countBlobs(t, env.Blobs); got != before+1 {
		t.Errorf("blobs: %d after an accepted request, want %d", got, before+1)
	}
}
