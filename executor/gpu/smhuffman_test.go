package gpu

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/executor/gpu/route"
	"github.com/sluice-dev/sluice/internal/gputest"
)

// TestGPUSluiceHuffmanMatchesCoefficients: with the SMs' entropy decoding
// on (route.SluiceGPUHuffman) and the engines off, every baseline JPEG of
// the corpus that the SMs' decoder takes decodes there, none falls back,
// and the outputs equal, byte for byte, those of the CPU workers'
// coefficient route, which gives libjpeg's decode: the same coefficients
// through the same IDCT and conversion. (Damaged files are the fallback's:
// TestGPUMatchesCPU has them.)
func TestGPUSluiceHuffmanMatchesCoefficients(t *testing.T) {
	gputest.Require(t)
	tc := loadCorpus(t)
	text := fmt.Sprintf(imagenet, "", "linear", true, "CHW", "FP32", "")
	open := func(sm bool) *Executor {
		g, err := New(compile(t, text), executor.Options{HWShare: 0})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Close)
		if sm {
			unbind, err := g.bind()
			if err != nil {
				t.Fatal(err)
			}
			defer unbind()
			if g.sm, err = newSMHuffman(g.fused); err != nil {
				t.Fatal(err)
			}
			g.set.SluiceGPUHuffman = true
		}
		return g
	}
	coef, sms := open(false), open(true)
	dec := codec.NewDecoder()
	defer dec.Close()
	var imgs [][]byte
	var files []string
	want := 0
	for i, b := range tc.imgs {
		if filepath.Base(filepath.Dir(tc.files[i])) == "broken" {
			continue
		}
		imgs, files = append(imgs, b), append(files, tc.files[i])
		h, err := dec.Header(b, codec.Limits{})
		if err != nil {
			continue
		}
		d := sms.set.Decide(h.JPEG(), h.Pixels(), sms.decoders)
		if _, err := codec.ReadJPEGEntropy(b); d.Path == route.SluiceGPUHuffman && err == nil {
			want++
		}
	}
	const batch = 64
	for start := 0; start < len(imgs); start += batch {
		in := [][][]byte{imgs[start:min(start+batch, len(imgs))]}
		a, err := coef.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		aData, aErrs := bytes.Clone(a.Outputs[0].Data), append([]error(nil), a.Errs...)
		b, err := sms.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		per := len(aData) / len(in[0])
		for i := range in[0] {
			f := files[start+i]
			if (aErrs[i] == nil) != (b.Errs[i] == nil) {
				t.Errorf("%s: coefficient route %v, SMs %v", f, aErrs[i], b.Errs[i])
				continue
			}
			if aErrs[i] == nil && !bytes.Equal(aData[i*per:(i+1)*per], b.Outputs[0].Data[i*per:(i+1)*per]) {
				t.Errorf("%s: the SMs' decode differs from the coefficient route's", f)
			}
		}
	}
	var st executor.Stats
	sms.Stats(&st)
	if got := st.Decoded[route.SluiceGPUHuffman].N; got != int64(want) || want == 0 {
		t.Errorf("the SMs decoded %d images, want %d (every baseline JPEG they take)", got, want)
	}
	if n := sms.retried.Load(); n > 0 {
		t.Errorf("%d images fell back from the SMs: %v", n, sms.lastRetry)
	}
}
