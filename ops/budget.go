package ops

import "sync/atomic"

// Quota is what a Budget allows; a zero field is no limit.
type Quota struct {
	MaxPixels int64 // decoded pixels of all its images
	MaxWork   int64 // their estimated decode and operator work, codec work units
}

// DefaultRequestQuota and DefaultBatchQuota apply when the config sets no
// other. A request: 1 Gi pixels (64 images of 16 MP) and 32 Gi work units
// (about 11 s of one core; 64 progressive 12 MP photos need about a third
// of it). A batch: four requests' worth.
var (
	DefaultRequestQuota = Quota{MaxPixels: 1 << 30, MaxWork: 1 << 35}
	DefaultBatchQuota   = Quota{MaxPixels: 1 << 32, MaxWork: 1 << 37}
)

// Budget bounds what a group of samples costs together: one request's
// images, or one batch's. Each image draws on it when its header has been
// read, before it is decoded, and each operator before it runs (Ctx.Charge),
// so that a request of many small files that each pass the per-image limits
// still cannot occupy an instance for minutes. A request's budget is
// chained to its batch's (Parent). Take is safe for concurrent use.
type Budget struct {
	// Scope names the group in errors and the parameters that set it:
	// "request" (max_request_pixels, max_request_work) or "batch".
	Scope string
	Quota
	Parent *Budget
	// Client, when set, says whether the group's client has gone (a
	// cancelled request): Take then refuses, so that the group's
	// remaining images and operators do not run for nobody.
	Client Canceller

	pixels, work atomic.Int64
}

// Canceller is a request as a Budget sees it.
type Canceller interface{ Cancelled() bool }

// Reset empties the budget for another group.
func (b *Budget) Reset(scope string, q Quota, parent *Budget) {
	b.Scope, b.Quota, b.Parent, b.Client = scope, q, parent, nil
	b.pixels.Store(0)
	b.work.Store(0)
}

// Used is what b's group has drawn so far.
func (b *Budget) Used() (pixels, work int64) { return b.pixels.Load(), b.work.Load() }

// Take draws one image of pixels and work on b and its parents. Once a
// group is over, every later image of it fails too: the group is refused,
// whichever of its images came last.
func (b *Budget) Take(pixels, work int64) error {
	for g := b; g != nil; g = g.Parent {
		if g.Client != nil && g.Client.Cancelled() {
			return Errorf(Cancelled, "the %s was cancelled by its client", g.Scope)
		}
		p := g.pixels.Add(pixels)
		w := g.work.Add(work)
		if g.MaxPixels > 0 && p > g.MaxPixels {
			return Errorf(TooLarge, "the %s's images decode to more than %d pixels, the limit max_%s_pixels (this image's %d bring them to %d)",
				g.Scope, g.MaxPixels, g.Scope, pixels, p)
		}
		if g.MaxWork > 0 && w > g.MaxWork {
			return Errorf(TooLarge, "the %s's images need more than %d units of decode and operator work, the limit max_%s_work (this image's %d bring them to %d)",
				g.Scope, g.MaxWork, g.Scope, work, w)
		}
	}
	return nil
}

// Charge prices an operator's work on one sample before the work starts:
// work over Limits.MaxWork fails the sample, naming op, and the rest is
// drawn on the sample's Budget beside its decode work, so that images that
// are cheap to decode but costly to process cannot occupy an instance
// either. detail (may be nil) says what was counted; it is called only for
// a refusal, so that the hot path makes no message. A nil Ctx (tests, the
// GPU executor's compile-time probe) charges nothing.
func (c *Ctx) Charge(op string, work int64, detail func() string) error {
	if c == nil {
		return nil
	}
	if m := c.Limits.MaxWork; m > 0 && work > m {
		what := ""
		if detail != nil {
			what = " (" + detail() + ")"
		}
		return Errorf(TooLarge, "%s needs about %d units of work on this image%s, over the per-image limit of %d: max_image_work",
			op, work, what, m)
	}
	if c.Budget != nil {
		if err := c.Budget.Take(0, work); err != nil {
			return prefixed(op, err)
		}
	}
	return nil
}

// prefixed names op in a budget refusal, which otherwise reads as the
// decode's.
func prefixed(op string, err error) error {
	if e, ok := err.(*Error); ok {
		return &Error{Cause: e.Cause, Msg: op + ": " + e.Msg}
	}
	return err
}
