package ops

import "sync/atomic"

// Quota is what a Budget allows; a zero field is no limit.
type Quota struct {
	MaxPixels int64 // decoded pixels of all its images
	MaxWork   int64 // their estimated decode work, codec work units
}

// DefaultRequestQuota and DefaultBatchQuota apply when the config sets no
// other. A request: 1 Gi pixels (64 images of 16 MP) and 32 Gi work units
// (about 11 s of one core; 64 progressive 12 MP photos need about a third
// of it). A batch: four requests' worth.
var (
	DefaultRequestQuota = Quota{MaxPixels: 1 << 30, MaxWork: 1 << 35}
	DefaultBatchQuota   = Quota{MaxPixels: 1 << 32, MaxWork: 1 << 37}
)

// Budget bounds what a group of samples decodes together: one request's
// images, or one batch's. Each image draws on it when its header has been
// read, before it is decoded, so that a request of many small files that
// each pass the per-image limits still cannot occupy an instance for
// minutes. A request's budget is chained to its batch's (Parent). Take is
// safe for concurrent use.
type Budget struct {
	// Scope names the group in errors and the parameters that set it:
	// "request" (max_request_pixels, max_request_work) or "batch".
	Scope string
	Quota
	Parent *Budget

	pixels, work atomic.Int64
}

// Reset empties the budget for another group.
func (b *Budget) Reset(scope string, q Quota, parent *Budget) {
	b.Scope, b.Quota, b.Parent = scope, q, parent
	b.pixels.Store(0)
	b.work.Store(0)
}

// Take draws one image of pixels and work on b and its parents. Once a
// group is over, every later image of it fails too: the group is refused,
// whichever of its images came last.
func (b *Budget) Take(pixels, work int64) error {
	for g := b; g != nil; g = g.Parent {
		p := g.pixels.Add(pixels)
		w := g.work.Add(work)
		if g.MaxPixels > 0 && p > g.MaxPixels {
			return Errorf(TooLarge, "the %s's images decode to more than %d pixels, the limit max_%s_pixels (this image's %d bring them to %d)",
				g.Scope, g.MaxPixels, g.Scope, pixels, p)
		}
		if g.MaxWork > 0 && w > g.MaxWork {
			return Errorf(TooLarge, "the %s's images need more than %d units of decode work, the limit max_%s_work (this image's %d bring them to %d)",
				g.Scope, g.MaxWork, g.Scope, work, w)
		}
	}
	return nil
}
