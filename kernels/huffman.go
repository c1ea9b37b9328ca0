package kernels

import (
	"bytes"
	"errors"
	"fmt"
	"unsafe"

	"github.com/sluice-dev/sluice/codec"
	"github.com/sluice-dev/sluice/kernels/cuda"
)

// HuffmanDecoder decodes the entropy-coded data of sequential JPEGs of one
// scan on the GPU (sluice_huffman, kernels/huffman.cuh): a batch of them in
// one launch, each image's coefficients into a device buffer of the
// caller's, laid out as codec.CoefDecoder lays out its buffer (Blocks ×
// codec.CoefBlock bytes, component i's blocks from Comps[i].First), with
// the same values, so that LaunchIDCT and LaunchYCC then decode them as the
// coefficient route does. Add each image, Launch, synchronise the stream,
// then Err says which images decoded; Reset before the next batch. Not for
// concurrent use.
type HuffmanDecoder struct {
	fn     cuda.Function
	b      huffBatch
	pinned []byte // the upload, then the images' results
	dev    cuda.DevicePtr
	devLen int
	// Where an upload put the batch's parts, the subsequences' states and
	// the results in the device buffer.
	o             huffOffsets
	subs, results int
	uploaded      bool
	status        int // offset of the results in pinned, after a Run
}

// NewHuffmanDecoder makes a decoder from f's module (the kernel is part of
// the fused module's sources). Close frees it; f must outlive it.
func NewHuffmanDecoder(f *Fused) (*HuffmanDecoder, error) {
	if f == nil || f.mod == nil {
		return nil, errors.New("kernels: Huffman decoder of an unloaded module")
	}
	fn, err := f.mod.Function("sluice_huffman")
	if err != nil {
		return nil, fmt.Errorf("kernels: %w", err)
	}
	return &HuffmanDecoder{fn: fn}, nil
}

// Add appends src, whose facts are f (codec.ReadJPEGEntropy), to the batch:
// its coefficients go to coef, a 16-byte aligned device buffer of
// f.Blocks × codec.CoefBlock bytes. It fails, adding nothing, for an
// image the kernel does not take (too many subsequences, too large).
func (d *HuffmanDecoder) Add(src []byte, f *codec.JPEGEntropy, coef cuda.DevicePtr) error {
	if coef == 0 || coef%16 != 0 {
		return errors.New("kernels: Huffman decoder's coefficient buffer not 16-byte aligned")
	}
	return d.b.add(src, f, uint64(coef))
}

// Len is the images added since the last Reset.
func (d *HuffmanDecoder) Len() int { return len(d.b.images) }

// Launch uploads the batch and queues its decode on s (Upload, then Run).
func (d *HuffmanDecoder) Launch(s cuda.Stream) error {
	if err := d.Upload(s); err != nil {
		return err
	}
	return d.Run(s)
}

// Upload queues the batch's upload on s: its tables, layout and unstuffed
// data (a few hundred bytes an image beside its data). It copies from
// pinned memory the decoder reuses: s must have finished the previous
// batch's upload first (the caller synchronises before reading Err
// anyway). The sources given to Add are not read after Add.
func (d *HuffmanDecoder) Upload(s cuda.Stream) error {
	n := len(d.b.images)
	if n == 0 {
		return nil
	}
	if d.fn == 0 {
		return errors.New("kernels: launch of a closed Huffman decoder")
	}
	if n > 1<<31-1 {
		return fmt.Errorf("kernels: Huffman launch of %d images", n)
	}
	o := d.b.offsets()
	// The device buffer: the upload, the subsequences' states, the results.
	d.o, d.subs = o, alignUp16(o.total)
	d.results = alignUp16(d.subs + o.subs*huffSubSize)
	if err := d.grow(o.total+4*n, d.results+4*n); err != nil {
		return err
	}
	d.b.fill(d.pinned[:o.total], o)
	if err := cuda.MemcpyHtoDAsync(d.dev, d.pinned[:o.total], s); err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	d.uploaded = true
	return nil
}

// Run queues the decode of the uploaded batch on s, then the copy of each
// image's result to the host, which Err reads once s has finished. The
// caller's coefficient buffers must stay allocated until then. Running
// again decodes the same batch again.
func (d *HuffmanDecoder) Run(s cuda.Stream) error {
	n := len(d.b.images)
	if n == 0 {
		return nil
	}
	if !d.uploaded {
		return errors.New("kernels: Huffman batch run before its upload")
	}
	base, o := uint64(d.dev), d.o
	p := huffParams{
		Images: base + uint64(o.images), Segs: base + uint64(o.segs), SubSeg: base + uint64(o.subseg),
		Tables: base + uint64(o.tables), Data: base + uint64(o.data), Subs: base + uint64(d.subs),
		Status: base + uint64(d.results), N: int32(n),
	}
	grid := [3]uint32{uint32(n), 1, 1}
	block := [3]uint32{huffThreads, 1, 1}
	if err := cuda.Launch(d.fn, grid, block, 0, s, unsafe.Pointer(&p)); err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	d.status = o.total
	if err := cuda.MemcpyDtoHAsync(d.pinned[o.total:o.total+4*n], cuda.DevicePtr(base+uint64(d.results)), s); err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	return nil
}

// Err is image i's result (in the order added) once the launch's stream
// has finished: nil when its coefficients are CoefDecoder's, else why not
// (damaged entropy-coded data, which libjpeg should then name).
func (d *HuffmanDecoder) Err(i int) error {
	if i < 0 || i >= len(d.b.images) || d.status == 0 {
		return errors.New("kernels: no Huffman result for that image")
	}
	return huffError(d.result(i) & 0xFF)
}

// Rounds is how many synchronisation rounds image i took (Err's
// conditions): 2 when every thread fell into step within its own
// subsequence.
func (d *HuffmanDecoder) Rounds(i int) int {
	if i < 0 || i >= len(d.b.images) || d.status == 0 {
		return 0
	}
	return int(d.result(i) >> 8)
}

func (d *HuffmanDecoder) result(i int) int32 {
	return *(*int32)(unsafe.Pointer(&d.pinned[d.status+4*i]))
}

// Reset empties the batch, keeping the buffers.
func (d *HuffmanDecoder) Reset() {
	d.b.reset()
	d.status, d.uploaded = 0, false
}

// Close frees the decoder's buffers; a second call does nothing.
func (d *HuffmanDecoder) Close() error {
	if d == nil {
		return nil
	}
	var err error
	if d.dev != 0 {
		err = cuda.MemFree(d.dev)
		d.dev, d.devLen = 0, 0
	}
	if d.pinned != nil {
		if e := cuda.MemFreeHost(d.pinned); err == nil {
			err = e
		}
		d.pinned = nil
	}
	d.fn = 0
	return err
}

// grow makes the pinned buffer hold host bytes and the device one dev,
// with room to grow by a quarter.
func (d *HuffmanDecoder) grow(host, dev int) error {
	if len(d.pinned) < host {
		if d.pinned != nil {
			if err := cuda.MemFreeHost(d.pinned); err != nil {
				return fmt.Errorf("kernels: %w", err)
			}
			d.pinned = nil
		}
		p, err := cuda.MemHostAlloc(host + host/4)
		if err != nil {
			return fmt.Errorf("kernels: %w", err)
		}
		d.pinned = p
	}
	if d.devLen < dev {
		if d.dev != 0 {
			if err := cuda.MemFree(d.dev); err != nil {
				return fmt.Errorf("kernels: %w", err)
			}
			d.dev, d.devLen = 0, 0
		}
		p, err := cuda.MemAlloc(dev + dev/4)
		if err != nil {
			return fmt.Errorf("kernels: %w", err)
		}
		d.dev, d.devLen = p, dev+dev/4
	}
	return nil
}

// Results of sluice_huffman (HUFF_* in huffman.cuh).
const (
	huffBadData  = 1
	huffOverflow = 2
	huffShort    = 3
	huffInternal = 4
)

func huffError(st int32) error {
	switch st {
	case 0:
		return nil
	case huffBadData:
		return errors.New("kernels: corrupt entropy-coded data")
	case huffOverflow:
		return errors.New("kernels: a DC predictor out of range")
	case huffShort:
		return errors.New("kernels: a restart interval or the scan needs data past its end")
	case huffInternal:
		return errors.New("kernels: Huffman decoder's synchronised states disagree")
	}
	return fmt.Errorf("kernels: Huffman decoder result %d", st)
}

// The kernel's limits and block (huffman.cuh).
const (
	huffThreads  = 256
	huffMaxUnits = 10
	huffMaxSubs  = 32768
	huffFast     = 9
	huffSubSize  = 64 // sizeof(sluice_huff_sub)
)

// huffSubBytes bounds a subsequence's bytes: at least huffMinSub, so that
// a decoder from a guessed state usually falls into step within its own
// subsequence; at most huffMaxSub, so that a subsequence's sum of DC
// differences fits an int. In between, an image's data over the block's
// threads. Variables for a test, which makes subsequences tiny so that
// synchronising takes many rounds.
var huffMinSub, huffMaxSub = 128, 16 << 10

// huffTable is the kernel's sluice_huff_table.
type huffTable struct {
	Fast    [1 << huffFast]uint16
	FastAC  [1 << huffFast]int16
	MaxCode [17]int32
	MinCode [17]int32
	ValPtr  [17]int32
	Vals    [256]uint8
}

// huffImage is the kernel's sluice_huff_image.
type huffImage struct {
	Coef                                  uint64
	Data, Seg0, NSeg, Sub0, NSub, SubBits uint32
	Units, MCUX                           int32
	First, Pitch                          [4]int32
	DCT, ACT                              [4]uint32
	H, V                                  [4]uint8
	UComp, UX, UY                         [12]uint8
	Period                                uint8
	pad                                   [3]uint8
}

// huffSeg is the kernel's sluice_huff_seg.
type huffSeg struct {
	Start, End, MCU0, MCUs, Sub0, pad uint32
}

// huffParams is the kernel's sluice_huff_params.
type huffParams struct {
	Images, Segs, SubSeg, Tables, Data, Subs, Status uint64
	N, pad                                           int32
}

// huffBatch is a launch's host side: what the kernel reads, built image by
// image.
type huffBatch struct {
	images []huffImage
	segs   []huffSeg
	subseg []uint32
	tables []huffTable
	data   []byte
	// cache finds a table already built for the batch: most images of a
	// batch share their encoder's tables.
	cache map[string]uint32
	key   []byte
}

func (b *huffBatch) reset() {
	b.images, b.segs, b.subseg, b.tables, b.data = b.images[:0], b.segs[:0], b.subseg[:0], b.tables[:0], b.data[:0]
	clear(b.cache)
}

// add appends one image; on an error the batch is as it was.
func (b *huffBatch) add(src []byte, f *codec.JPEGEntropy, coef uint64) error {
	if f == nil || len(f.Comps) < 1 || len(f.Comps) > 4 || len(f.ScanComps) != len(f.Comps) || len(f.Segments) < 1 {
		return errors.New("kernels: Huffman decoder given no JPEG facts")
	}
	if int64(f.Blocks)*64 > 1<<31-1 || int64(f.MCUX)*int64(f.MCUY)*huffMaxUnits > 1<<31-1 {
		return fmt.Errorf("kernels: JPEG of %d blocks too large for the Huffman decoder", f.Blocks)
	}
	im := huffImage{Coef: coef, Seg0: uint32(len(b.segs)), Sub0: uint32(len(b.subseg)), MCUX: int32(f.MCUX)}
	for _, ci := range f.ScanComps {
		c := &f.Comps[ci]
		for y := range c.V {
			for x := range c.H {
				if im.Units == huffMaxUnits {
					return fmt.Errorf("kernels: JPEG MCU of over %d blocks", huffMaxUnits)
				}
				im.UComp[im.Units], im.UX[im.Units], im.UY[im.Units] = uint8(ci), uint8(x), uint8(y)
				im.Units++
			}
		}
	}
	// The data, unstuffed, each segment from a byte of its own.
	start := alignUp16(len(b.data))
	data := b.data
	for len(data) < start {
		data = append(data, 0)
	}
	total := 0
	for _, s := range f.Segments {
		if s.Start < 0 || s.End > len(src) || s.Start > s.End {
			return errors.New("kernels: JPEG segment outside its data")
		}
		total += s.End - s.Start
	}
	if int64(total)*8 >= 1<<32-1<<16 {
		return errors.New("kernels: JPEG data too large for the Huffman decoder")
	}
	subBytes := min(max((total+huffThreads-1)/huffThreads, huffMinSub), huffMaxSub)
	im.SubBits = uint32(subBytes * 8)
	im.Data = uint32(start)
	segs, subseg := b.segs, b.subseg
	nsub := 0
	for k, s := range f.Segments {
		from := len(data)
		data = unstuff(data, src[s.Start:s.End])
		g := huffSeg{Start: uint32(from-start) * 8, End: uint32(len(data)-start) * 8,
			MCU0: uint32(k * f.Restart), Sub0: uint32(nsub)}
		g.MCUs = uint32(f.MCUX*f.MCUY) - g.MCU0
		if f.Restart > 0 {
			g.MCUs = min(g.MCUs, uint32(f.Restart))
		}
		n := max(1, int((g.End-g.Start+im.SubBits-1)/im.SubBits))
		if nsub+n > huffMaxSubs {
			return fmt.Errorf("kernels: JPEG of over %d subsequences for the Huffman decoder", huffMaxSubs)
		}
		for range n {
			subseg = append(subseg, uint32(k))
		}
		nsub += n
		segs = append(segs, g)
	}
	// Room past the data for the reader's look-ahead: a thread reads up
	// to 8 bytes past the last bit it needs, 16 over an image's end.
	data = append(data, make([]byte, 16)...)
	im.NSeg, im.NSub = uint32(len(f.Segments)), uint32(nsub)
	for i := range f.Comps {
		c := &f.Comps[i]
		im.First[i], im.Pitch[i] = int32(c.First), int32(c.Pitch)
		im.H[i], im.V[i] = uint8(c.H), uint8(c.V)
		im.DCT[i] = b.table(0, &c.DC)
		im.ACT[i] = b.table(1, &c.AC)
	}
	im.Period = uint8(im.Units)
	for d := 1; d < int(im.Units); d++ {
		if int(im.Units)%d != 0 {
			continue
		}
		same := true
		for u := d; u < int(im.Units); u++ {
			a, c := im.UComp[u], im.UComp[u%d]
			same = same && im.DCT[a] == im.DCT[c] && im.ACT[a] == im.ACT[c]
		}
		if same {
			im.Period = uint8(d)
			break
		}
	}
	b.images = append(b.images, im)
	b.segs, b.subseg, b.data = segs, subseg, data
	return nil
}

// table finds h among the batch's tables of its class, or builds it;
// it returns its index. A table built for an image that then fails to be
// added stays, unused.
func (b *huffBatch) table(class byte, h *codec.JPEGHuffman) uint32 {
	b.key = append(append(append(b.key[:0], class), h.Counts[:]...), h.Symbols...)
	if b.cache == nil {
		b.cache = map[string]uint32{}
	}
	if i, ok := b.cache[string(b.key)]; ok {
		return i
	}
	b.tables = append(b.tables, huffTable{})
	buildHuffTable(&b.tables[len(b.tables)-1], h)
	i := uint32(len(b.tables) - 1)
	b.cache[string(b.key)] = i
	return i
}

// unstuff appends seg to dst without the zero after each 0xFF (inside a
// segment every 0xFF has one).
func unstuff(dst, seg []byte) []byte {
	for len(seg) > 0 {
		i := bytes.IndexByte(seg, 0xFF)
		if i < 0 || i+1 >= len(seg) {
			return append(dst, seg...)
		}
		dst = append(dst, seg[:i+1]...)
		seg = seg[i+2:]
	}
	return dst
}

// buildHuffTable builds t from h as jpegcoef.c's build does (h is valid:
// codec.ReadJPEGEntropy checks it).
func buildHuffTable(t *huffTable, h *codec.JPEGHuffman) {
	code, k := 0, 0
	for l := 1; l <= 16; l++ {
		t.ValPtr[l] = int32(k)
		t.MinCode[l] = int32(code)
		for range h.Counts[l-1] {
			t.Vals[k] = h.Symbols[k]
			if l <= huffFast {
				for j := range 1 << (huffFast - l) {
					t.Fast[code<<(huffFast-l)+j] = uint16(l<<8 | int(h.Symbols[k]))
				}
			}
			code++
			k++
		}
		t.MaxCode[l] = -1
		if h.Counts[l-1] > 0 {
			t.MaxCode[l] = int32(code - 1)
		}
		code <<= 1
	}
	for i := range 1 << huffFast {
		f := int(t.Fast[i])
		l, r, s := f>>8, (f>>4)&15, f&15
		if f == 0 || s == 0 || l+s > huffFast {
			continue
		}
		v := (i >> (huffFast - l - s)) & (1<<s - 1)
		if v < 1<<(s-1) {
			v -= 1<<s - 1
		}
		if v >= -128 && v <= 127 {
			t.FastAC[i] = int16(v*256 + r<<4 + l + s)
		}
	}
}

// huffOffsets places a batch's parts in one upload.
type huffOffsets struct {
	images, segs, subseg, tables, data, total int
	subs                                      int // subsequences
}

func (b *huffBatch) offsets() huffOffsets {
	var o huffOffsets
	o.images = 0
	o.segs = alignUp16(o.images + len(b.images)*int(unsafe.Sizeof(huffImage{})))
	o.subseg = alignUp16(o.segs + len(b.segs)*int(unsafe.Sizeof(huffSeg{})))
	o.tables = alignUp16(o.subseg + 4*len(b.subseg))
	o.data = alignUp16(o.tables + len(b.tables)*int(unsafe.Sizeof(huffTable{})))
	o.total = alignUp16(o.data + len(b.data))
	o.subs = len(b.subseg)
	return o
}

// fill writes the batch into dst (o.total bytes) as o places it.
func (b *huffBatch) fill(dst []byte, o huffOffsets) {
	copy(dst[o.images:], viewBytes(b.images))
	copy(dst[o.segs:], viewBytes(b.segs))
	copy(dst[o.subseg:], viewBytes(b.subseg))
	copy(dst[o.tables:], viewBytes(b.tables))
	copy(dst[o.data:], b.data)
}

func viewBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

func alignUp16(n int) int { return (n + 15) &^ 15 }
