package runs

import (
	"context"
	"iter"
)

// Batch is what a follower read at once: items in order, and whether the
// run's log ended with them.
type Batch struct {
	Items []Item
	Done  bool
}

// ReadFunc reads what is after a cursor of a follower (Follower.Read, or
// a reader that keeps a stream alive while it waits, sse.Wait).
type ReadFunc func(ctx context.Context, pos Cursor) ([]Item, bool, error)

// Batches is the one loop that follows a run: the batches f's log gives
// from cursor from (joined to f), in order, read with read (nil:
// f.Read), until a batch is Done, a read fails (the error is the last
// value) or the consumer stops. The chat, runs and Responses renderers
// each range over it; the cursor moves on by itself.
func Batches(ctx context.Context, f Follower, from Cursor, read ReadFunc) iter.Seq2[Batch, error] {
	if read == nil {
		read = f.Read
	}
	return func(yield func(Batch, error) bool) {
		pos := f.Join(from)
		for {
			items, done, err := read(ctx, pos)
			if err != nil {
				yield(Batch{}, err)
				return
			}
			if len(items) > 0 {
				pos = items[len(items)-1].Pos
			}
			if !yield(Batch{Items: items, Done: done}, nil) || done {
				return
			}
		}
	}
}
