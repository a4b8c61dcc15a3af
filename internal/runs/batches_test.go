package runs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/runs"
)

// scriptedFollower answers each Read with the next of its pages, and
// records the cursor each read was asked after.
type scriptedFollower struct {
	pages [][]runs.Item
	done  int // the page that ends the log
	err   error
	asked []runs.Cursor
}

func (f *scriptedFollower) Next(context.Context, int64) ([]longhaul.Event, bool, error) {
	return nil, false, errors.New("not used")
}
func (f *scriptedFollower) Join(c runs.Cursor) runs.Cursor { return c }
func (f *scriptedFollower) Release()                       {}
func (f *scriptedFollower) Read(_ context.Context, c runs.Cursor) ([]runs.Item, bool, error) {
	f.asked = append(f.asked, c)
	n := len(f.asked) - 1
	if n >= len(f.pages) {
		return nil, false, f.err
	}
	return f.pages[n], n == f.done, nil
}

func item(off int64) runs.Item {
	return runs.Item{Event: longhaul.Event{Offset: off}, Pos: runs.After(off)}
}

// TestBatches: the iterator reads on from the last item's cursor, keeps
// the cursor across an empty batch, ends with the batch that ends the
// log, hands a failed read over as its last value, and stops reading when
// the consumer stops.
func TestBatches(t *testing.T) {
	ctx := context.Background()
	f := &scriptedFollower{pages: [][]runs.Item{{item(1), item(2)}, {}, {item(3)}}, done: 2}
	var got []int64
	for b, err := range runs.Batches(ctx, f, runs.After(0), nil) {
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range b.Items {
			got = append(got, it.Offset)
		}
	}
	want := []runs.Cursor{runs.After(0), runs.After(2), runs.After(2)}
	if len(got) != 3 || got[2] != 3 || len(f.asked) != 3 || f.asked[1] != want[1] || f.asked[2] != want[2] {
		t.Fatalf("items %v after cursors %v; want 1 2 3 after %v", got, f.asked, want)
	}

	broken := &scriptedFollower{pages: [][]runs.Item{{item(1)}}, done: -1, err: errors.New("history gone")}
	var last error
	n := 0
	for _, err := range runs.Batches(ctx, broken, runs.Cursor{}, nil) {
		n++
		last = err
	}
	if n != 2 || last == nil || last.Error() != "history gone" {
		t.Fatalf("%d values, last error %v; want a batch, then the read's error", n, last)
	}

	endless := &scriptedFollower{pages: [][]runs.Item{{item(1)}, {item(2)}, {item(3)}}, done: -1}
	for range runs.Batches(ctx, endless, runs.Cursor{}, nil) {
		break
	}
	if len(endless.asked) != 1 {
		t.Fatalf("read %d times after the consumer stopped at the first batch", len(endless.asked))
	}
}
