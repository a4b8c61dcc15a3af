package runs

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/store"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// TestAsClaimedWeighsAsClaimed: the payload check weighs the input as
// claimParts leaves it (asClaimed), storing nothing and changing nothing;
// the weight is exact, so a request at the limit is judged as Temporal
// will judge it.
func TestAsClaimedWeighsAsClaimed(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "blobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	g := &Gate{blobs: st}
	big := "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 3000)
	in := contract.AgentInput{Agent: "a", Messages: []longhaul.Message{
		{Role: longhaul.RoleSystem, Content: "Be brief."},
		{Role: longhaul.RoleUser, Parts: []longhaul.Part{
			{Type: longhaul.PartText, Text: "What are these?"},
			{Type: longhaul.PartImage, URL: big},
			{Type: longhaul.PartImage, URL: "data:image/png;base64,small"},
			{Type: longhaul.PartImage, URL: "https://example.com/" + strings.Repeat("x", inlinePartLimit)},
		}},
	}}
	weigh := func(v contract.AgentInput) int {
		p, err := converter.GetDefaultDataConverter().ToPayload(v)
		if err != nil {
			t.Fatal(err)
		}
		return proto.Size(p)
	}
	before := weigh(in)
	estimate := weigh(g.asClaimed(in))
	if got := weigh(in); got != before || in.Messages[1].Parts[1].URL != big {
		t.Fatal("asClaimed changed its input")
	}
	if runs, _ := st.RunsBefore(ctx, time.Now().Add(time.Hour)); len(runs) != 0 {
		t.Fatalf("asClaimed stored blobs of %v", runs)
	}
	stored, err := g.claimParts(ctx, "run-1", in.Messages)
	if err != nil || !stored {
		t.Fatalf("claimParts = %v, %v", stored, err)
	}
	if got := weigh(in); got != estimate {
		t.Errorf("claimed input weighs %d, asClaimed said %d", got, estimate)
	}
	var urls []string
	for _, p := range in.Messages[1].Parts {
		urls = append(urls, p.URL)
	}
	if diff := cmp.Diff([]string{"", "", "data:image/png;base64,small", "https://example.com/" + strings.Repeat("x", inlinePartLimit)}, urls); diff != "" {
		t.Errorf("claimed URLs (-want +got):\n%s", diff)
	}
}
