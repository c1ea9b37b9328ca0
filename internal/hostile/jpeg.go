package hostile

import (
	"math/rand/v2"

	"github.com/sluice-dev/sluice/internal/testimg"
)

func init() {
	Register(Case{
		Name:   "jpeg-8192-refine94",
		Format: "JPEG",
		Row:    "progressive JPEG 8192x8192 grey, DC + 94 refinement scans of 1..63 (143 kB)",
		Make:   func() []byte { return JPEGRefinements(8192, 94) },
		// Priced by what refinements cost (253 units a block each),
		// it is over the work limit from its headers.
		Refused: []string{"too large", "work limit"},
	})
	Register(Case{
		Name:   "jpeg-8192-refine23-bogus",
		Format: "JPEG",
		Row:    "progressive JPEG 8192x8192 grey, DC + 23 refinement scans without a first AC scan: under the work limit, corrupt from scan 2",
		Make:   func() []byte { return JPEGRefinements(8192, 23) },
		// libjpeg warns at the second scan ("Inconsistent progression
		// sequence"), where the decode now stops.
		Refused: []string{"corrupt", "progression"},
	})
	Register(Case{
		Name:   "jpeg-refine-pending",
		Format: "JPEG",
		Row:    "legal progressive JPEG whose scan script ends with successive-approximation refinement pending",
		Make:   func() []byte { return JPEGRefinePending(640, 480) },
	})
}

// JPEGRefinements is a side×side flat grey progressive JPEG of a DC scan
// then n refinement scans of AC 1..63 (Ah 1, Al 0), each only end-of-band
// runs: a few hundred bytes a scan, yet every one makes libjpeg read the
// whole band of every block. With no first AC scan the refinements are a
// bogus progression, which libjpeg warns about and decodes anyway.
func JPEGRefinements(side, n int) []byte {
	script := []testimg.Scan{{Ss: 0, Se: 0}}
	for range n {
		script = append(script, testimg.Scan{Ss: 1, Se: 63, Ah: 1, Al: 0})
	}
	return testimg.GreyScript(side, side, script)
}

// RefinePendingScript is libjpeg's standard progressive script for YCbCr
// without its last four scans: every coefficient coded, luma's AC and all
// DC refined to bit 1, chroma's AC and DC left at bit 1. Legal (the
// standard does not require refining to full precision, and libjpeg's
// encoder writes it), and libjpeg and Pillow decode it without a warning.
var RefinePendingScript = testimg.SimpleProgression[:6:6]

// JPEGRefinePending is a w×h photo-like image (gradients and noise)
// encoded by libjpeg with RefinePendingScript, chroma 4:4:4. (Not 4:2:0:
// with refinement pending libjpeg smooths blocks, and libjpeg-turbo 3.0.1
// changed that smoothing at edge blocks under vertical chroma
// subsampling; Pillow has 3.x, Sluice links 2.1.5, and they differ by one
// level in a few pixels.)
func JPEGRefinePending(w, h int) []byte {
	r := rand.New(rand.NewPCG(7, 11))
	pix := make([]byte, 0, w*h*3)
	for y := range h {
		for x := range w {
			for c := range 3 {
				pix = append(pix, byte(30+170*(x*(c+1)+y*(3-c))/(4*(w+h))+r.IntN(50)))
			}
		}
	}
	b, err := testimg.LibJPEG(pix, w, h, testimg.LibJPEGOptions{Quality: 90, Scans: RefinePendingScript, Luma: [2]int{1, 1}})
	if err != nil {
		panic("hostile: " + err.Error())
	}
	return b
}
