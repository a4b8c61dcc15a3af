package sqldb

import "time"

// Options are what every store's Open takes besides its database URL and
// its own settings.
type Options struct {
	// Now is the clock the store reads the times it records from.
	Now func() time.Time
	// MaxConns bounds the PostgreSQL pool; 0 is pgxpool's default. It does
	// not apply to SQLite.
	MaxConns int32
}

// Option changes Options.
type Option func(*Options)

// WithClock sets the clock a store reads the times it records from, so a
// test can store as if at given times. nil keeps the system clock.
func WithClock(now func() time.Time) Option {
	return func(o *Options) {
		if now != nil {
			o.Now = now
		}
	}
}

// WithMaxConns bounds the PostgreSQL connection pool (PGlite serves one
// connection at a time: give it 1). It does not apply to SQLite.
func WithMaxConns(n int32) Option { return func(o *Options) { o.MaxConns = n } }

// NewOptions is the Options opts make, on the system clock unless one of
// them sets another.
func NewOptions(opts ...Option) Options {
	o := Options{Now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
