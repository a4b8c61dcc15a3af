package webtest

import (
	"context"
	"sync"
)

// Forgetter stands in for what the server tells to forget a deleted
// conversation (the memory store): it records each call as "user chat".
type Forgetter struct {
	mu     sync.Mutex
	forgot []string
}

// ForgetConversation records the call.
func (f *Forgetter) ForgetConversation(_ context.Context, user, chat string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgot = append(f.forgot, user+" "+chat)
	return nil
}

// Forgotten is what f was told to forget, in order.
func (f *Forgetter) Forgotten() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.forgot...)
}
