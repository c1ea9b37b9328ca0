package codec

import (
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/hostile"
)

// TestHostileCases: every registered hostile file, decoded at the default
// limits: one with refusal words fails naming them (the server's error
// carries the same text), allocating little when its headers refuse it; a legal
// one decodes; one image of a case of several per request may decode (its
// request's budget refuses the request). The formats' own tests check the
// edges of each limit.
func TestHostileCases(t *testing.T) {
	cases := hostile.Cases()
	if len(cases) == 0 {
		t.Fatal("no hostile cases registered")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			src := c.Make()
			d := NewDecoder()
			defer d.Close()
			var h Header
			var err error
			n := allocated(func() { h, err = d.Header(src, LimitsFor(64<<20)) })
			refusedByHeader := err != nil
			if err == nil {
				oh, ow, oc := h.OutSize(Options{})
				err = d.Decode(make([]byte, oh*ow*oc), src, h, Options{})
			}
			switch {
			case len(c.Refused) == 0 && err != nil:
				t.Fatalf("%s (%s) must decode: %v", c.Name, c.Row, err)
			case len(c.Refused) == 0, c.PerRequest > 1 && err == nil:
				return // legal, or refused by its request's budget only
			}
			if err == nil {
				t.Fatalf("%s (%s) decoded; it must be refused naming %v", c.Name, c.Row, c.Refused)
			}
			for _, w := range c.Refused {
				if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(w)) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			// Refused from the headers: the containers' own tables (an
			// item map, a directory) at most. Damage found by decoding
			// comes after the output exists.
			if refusedByHeader && n > 4<<20 {
				t.Errorf("allocated %d bytes before refusing", n)
			}
			t.Logf("%d bytes: %v", len(src), err)
		})
	}
}
