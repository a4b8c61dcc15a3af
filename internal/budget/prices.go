package budget

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Price is what a model charges, in micro-dollars per token, which is the
// same number as dollars per million tokens.
type Price struct {
	In, Out float64
}

// Prices are the models' prices by model reference, as requests and
// agents name models ("llama3.1:8b", "remote:gpt-4o"); "*" prices every
// model not named. A model without a price costs nothing (its tokens still
// count).
type Prices map[string]Price

// ParsePrices reads LONGHAUL_MODEL_PRICES: comma-separated entries
// model=input/output, each a price in US dollars per million tokens, such
// as "llama3.1:8b=0/0,remote:gpt-4o=2.50/10.00,*=1/2". The model is
// everything before the last '='.
func ParsePrices(s string) (Prices, error) {
	out := Prices{}
	var errs []error
	for e := range strings.SplitSeq(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i := strings.LastIndex(e, "=")
		in, outp, ok := strings.Cut(e[i+1:], "/")
		if i <= 0 || !ok {
			errs = append(errs, fmt.Errorf("model price %q: want model=<input>/<output> in dollars per million tokens", e))
			continue
		}
		pin, err1 := parseMicros(strings.TrimSpace(in))
		pout, err2 := parseMicros(strings.TrimSpace(outp))
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, fmt.Errorf("model price %q: %w", e, err))
			continue
		}
		// parseMicros read dollars as micro-dollars; a price is per
		// million tokens, so per token it is the dollars' number itself.
		out[strings.TrimSpace(e[:i])] = Price{In: float64(pin) / 1e6, Out: float64(pout) / 1e6}
	}
	return out, errors.Join(errs...)
}

// Of is model's price: its own, else "*"'s, else nothing.
func (p Prices) Of(model string) Price {
	if pr, ok := p[model]; ok {
		return pr
	}
	return p["*"]
}

// Cost is what in prompt and out completion tokens of model cost, in
// micro-dollars, rounded up so that many small calls are not free.
func (p Prices) Cost(model string, in, out int64) int64 {
	pr := p.Of(model)
	// The small slack keeps a float's last bit from adding a micro-dollar.
	return int64(math.Ceil(float64(in)*pr.In + float64(out)*pr.Out - 1e-6))
}

// Canonical is p with each model keyed by canon(model) (endpoints.Set's
// Canonical), so that a call priced by its resolved model finds the price
// however the setting wrote it (":gpt-4o", "gpt-4o"); "*" stays. Of two
// entries that name the same model, the dearer counts.
func (p Prices) Canonical(canon func(string) string) Prices {
	out := make(Prices, len(p))
	for m, pr := range p {
		if m != "*" {
			m = canon(m)
		}
		if old, ok := out[m]; ok && old.In+old.Out >= pr.In+pr.Out {
			continue
		}
		out[m] = pr
	}
	return out
}
