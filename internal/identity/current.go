package identity

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/longhaul-dev/longhaul"
)

// ErrOwnerGone is the error of Current for a user whose key is no longer
// configured (or changed kind): nobody holds that principal any more.
var ErrOwnerGone = errors.New("owner gone")

// Current is u, a user stored when its principal last acted (a schedule's
// owner), as the keys configured now resolve it: an API key's principal
// takes the key's role of now; a proxy key's user keeps the role and
// groups it last brought (its proxy names them only in its own requests),
// as long as its key is still a proxy key. A principal whose key is gone,
// or is no longer of its kind, is an error wrapping ErrOwnerGone. With no
// keys configured (development) u is taken as it is.
func (r *Resolver) Current(u longhaul.User) (longhaul.User, error) {
	if r.Open() {
		return u, nil
	}
	name, _, behind := strings.Cut(u.Principal, "/")
	i := slices.IndexFunc(r.Keys, func(k Key) bool { return k.Name == name })
	switch {
	case u.Principal == "" || i < 0:
		return u, fmt.Errorf("%w: the key %q that owns it is no longer configured", ErrOwnerGone, name)
	case r.Keys[i].Proxy != behind:
		return u, fmt.Errorf("%w: the key %q that owns it is no longer a key of the same kind", ErrOwnerGone, name)
	case !behind:
		k := r.Keys[i]
		return longhaul.User{Principal: k.Name, Role: k.Role}, nil
	}
	return u, nil
}
