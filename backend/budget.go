package backend

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/sluice-dev/sluice/pipeline"
)

// A model's worst case is known at load: every output has a static shape,
// and Triton never batches more than max_batch_size samples. Go's out of
// memory is fatal to the whole server, so a model whose worst case cannot
// be afforded fails its load, naming the numbers, instead of the server
// dying on the first large batch.

// MaxBatchSizeLimit is the largest max_batch_size Sluice takes. Besides
// its outputs, each sample costs bookkeeping (its place in the batch, its
// error, its destinations): a few hundred bytes, which for 2^31 samples of
// a 1-byte output would be hundreds of gigabytes.
const MaxBatchSizeLimit = 1 << 16

// sampleBytes is the byte size of one sample's outputs, all of them.
func sampleBytes(prog *pipeline.Compiled) int64 {
	var n int64
	for _, o := range prog.Outputs {
		n += int64(o.Spec.Elems()) * int64(o.Spec.DType.Size())
	}
	return n
}

// defaultMaxBatch is the max_batch_size auto-complete gives: the default,
// or fewer when that many samples would not fit the budget.
func defaultMaxBatch(prog *pipeline.Compiled, budget int64) int64 {
	if s := sampleBytes(prog); s > 0 && budget/s < DefaultMaxBatchSize {
		return max(budget/s, 1)
	}
	return DefaultMaxBatchSize
}

// budget reports a pipeline whose fixed-size images are over the pixel
// limit (every sample would fail) and a batch whose outputs are over
// max_batch_bytes.
func (v *validator) budget(maxBatch int64, p Params) {
	if maxBatch > MaxBatchSizeLimit {
		v.addf("max_batch_size %d is over %d, the most Sluice takes", maxBatch, MaxBatchSizeLimit)
	}
	for _, nd := range v.prog.Nodes {
		for _, s := range nd.Out {
			if !s.IsImage() || s.Dims[0] < 0 || s.Dims[1] < 0 {
				continue
			}
			if h, w := s.Dims[0], s.Dims[1]; h*w > p.Limits.MaxPixels {
				v.addf("node %q outputs %dx%d images (%d pixels), over max_image_pixels %d: every image would fail; make them smaller or raise max_image_pixels",
					nd.Name, w, h, h*w, p.Limits.MaxPixels)
			}
		}
	}
	per := sampleBytes(v.prog)
	if maxBatch <= 0 || per == 0 || maxBatch <= p.MaxBatchBytes/per {
		return
	}
	total := new(big.Int).Mul(big.NewInt(maxBatch), big.NewInt(per))
	fix := fmt.Sprintf("lower max_batch_size to %d or raise max_batch_bytes", p.MaxBatchBytes/per)
	if per > p.MaxBatchBytes {
		fix = "make the outputs smaller or raise max_batch_bytes"
	}
	v.addf("max_batch_size %d × %d bytes of outputs per sample (%s) = %s bytes, over max_batch_bytes %d: %s",
		maxBatch, per, describeOutputs(v.prog), total, p.MaxBatchBytes, fix)
}

func describeOutputs(prog *pipeline.Compiled) string {
	parts := make([]string, len(prog.Outputs))
	for i, o := range prog.Outputs {
		t := outputConfig(o)
		parts[i] = fmt.Sprintf("%s %s %s", t.Name, strings.TrimPrefix(t.DataType, "TYPE_"), dimsString(t.Dims))
	}
	return strings.Join(parts, ", ")
}
