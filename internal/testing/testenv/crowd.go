package testenv

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// crowdWait bounds how long a request waits for the crowd: past it the
// request fails (HTTP 504), which a test sees, instead of hanging it.
const crowdWait = time.Minute

// Crowd is a test site's handler (see Site) that measures how many
// requests it serves at once, on its own clock: each request waits inside
// until Want requests are inside together (from then on every request goes
// straight through), and Most reports the most that were inside at once.
// A handler that lets requests through only together proves they overlap
// without a sleep: requests made one after another never meet.
type Crowd struct {
	want int
	body func(*http.Request) string

	mu     sync.Mutex
	inside int
	most   int
	served int
	met    chan struct{}
	once   sync.Once
}

// NewCrowd returns a Crowd that waits for want requests at once and
// answers each with the HTML body gives it.
func NewCrowd(want int, body func(*http.Request) string) *Crowd {
	return &Crowd{want: want, body: body, met: make(chan struct{})}
}

func (c *Crowd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.inside++
	c.most = max(c.most, c.inside)
	if c.inside >= c.want {
		c.once.Do(func() { close(c.met) })
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inside--
		c.served++
		c.mu.Unlock()
	}()
	select {
	case <-c.met:
	case <-r.Context().Done():
		return
	case <-time.After(crowdWait):
		http.Error(w, fmt.Sprintf("waited %v for %d requests at once", crowdWait, c.want), http.StatusGatewayTimeout)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<html><body><p>%s</p></body></html>", c.body(r))
}

// Most is the most requests that were inside at once.
func (c *Crowd) Most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most
}

// Served is the number of requests answered (or given up on).
func (c *Crowd) Served() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served
}
