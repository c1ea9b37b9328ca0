package nvjpeg

import (
	"errors"
	"reflect"
	"runtime"

	"github.com/sluice-dev/sluice/kernels/cuda"
)

// Decoder is an nvjpegJpegDecoder_t of the decoupled API: a JPEG decoded in
// three steps, Huffman decoding on the calling CPU thread (Host), the
// coefficients' upload (Transfer), and the inverse DCT and colour stages
// on the GPU (Device). Unlike the batched decoders it takes progressive
// JPEGs, and many CPU threads can each run one image, a DecoupledState of
// their own each.
type Decoder struct {
	h *Handle
	d uintptr
}

// DecoupledState is one thread's decode in flight: the decoder's state with
// its own pinned and device buffers, the output format, and the parsed
// stream. One goroutine at a time.
type DecoupledState struct {
	dec    *Decoder
	s      uintptr
	pinned uintptr
	device uintptr
	params uintptr
	js     *JpegStream
}

// Decoupled reports whether the loaded nvJPEG has the decoupled API.
func Decoupled() bool {
	if Init() != nil {
		return false
	}
	for _, f := range []any{nvjpegDecoderCreate, nvjpegDecoderDestroy, nvjpegDecoderJpegSupported,
		nvjpegDecoderStateCreate, nvjpegBufferPinnedCreate, nvjpegBufferPinnedDestroy,
		nvjpegBufferDeviceCreate, nvjpegBufferDeviceDestroy, nvjpegStateAttachPinnedBuffer,
		nvjpegStateAttachDeviceBuffer, nvjpegDecodeParamsCreate, nvjpegDecodeParamsDestroy,
		nvjpegDecodeParamsSetOutputFormat, nvjpegDecodeJpegHost, nvjpegDecodeJpegTransferToDevice,
		nvjpegDecodeJpegDevice} {
		if reflect.ValueOf(f).IsNil() {
			return false
		}
	}
	return true
}

// NewDecoder creates a decoupled decoder of backend b (Hybrid: Huffman
// decoding on the CPU) for h.
func (h *Handle) NewDecoder(b Backend) (*Decoder, error) {
	const call = "nvjpegDecoderCreate"
	if err := h.usable(call); err != nil {
		return nil, err
	}
	if !Decoupled() {
		return nil, errors.New(call + ": this nvJPEG has no decoupled API")
	}
	var d uintptr
	if err := check(call, nvjpegDecoderCreate(h.h, int32(b), &d)); err != nil {
		return nil, err
	}
	return &Decoder{h: h, d: d}, nil
}

// Close destroys the decoder, after its states; a second call does nothing.
func (d *Decoder) Close() error {
	if d == nil || d.d == 0 {
		return nil
	}
	err := check("nvjpegDecoderDestroy", nvjpegDecoderDestroy(d.d))
	d.d = 0
	return err
}

// NewState creates a state for d with its own buffers, decoding to f.
func (d *Decoder) NewState(f OutputFormat) (st *DecoupledState, err error) {
	if d == nil || d.d == 0 {
		return nil, errors.New("nvjpegDecoderStateCreate: closed decoder")
	}
	h := d.h
	if err := h.usable("nvjpegDecoderStateCreate"); err != nil {
		return nil, err
	}
	st = &DecoupledState{dec: d}
	defer func() {
		if err != nil {
			st.Close()
			st = nil
		}
	}()
	if err = check("nvjpegDecoderStateCreate", nvjpegDecoderStateCreate(h.h, d.d, &st.s)); err != nil {
		return
	}
	if err = check("nvjpegBufferPinnedCreate", nvjpegBufferPinnedCreate(h.h, nil, &st.pinned)); err != nil {
		return
	}
	if err = check("nvjpegBufferDeviceCreate", nvjpegBufferDeviceCreate(h.h, nil, &st.device)); err != nil {
		return
	}
	if err = check("nvjpegStateAttachPinnedBuffer", nvjpegStateAttachPinnedBuffer(st.s, st.pinned)); err != nil {
		return
	}
	if err = check("nvjpegStateAttachDeviceBuffer", nvjpegStateAttachDeviceBuffer(st.s, st.device)); err != nil {
		return
	}
	if err = check("nvjpegDecodeParamsCreate", nvjpegDecodeParamsCreate(h.h, &st.params)); err != nil {
		return
	}
	if err = check("nvjpegDecodeParamsSetOutputFormat", nvjpegDecodeParamsSetOutputFormat(st.params, int32(f))); err != nil {
		return
	}
	st.js, err = h.NewJpegStream()
	return
}

// Close destroys the state and its buffers; a second call does nothing.
func (st *DecoupledState) Close() error {
	if st == nil {
		return nil
	}
	var errs []error
	if st.js != nil {
		errs = append(errs, st.js.Close())
		st.js = nil
	}
	for _, x := range []struct {
		call string
		v    *uintptr
		fn   func(uintptr) int32
	}{
		{"nvjpegDecodeParamsDestroy", &st.params, nvjpegDecodeParamsDestroy},
		{"nvjpegJpegStateDestroy", &st.s, nvjpegJpegStateDestroy},
		{"nvjpegBufferDeviceDestroy", &st.device, nvjpegBufferDeviceDestroy},
		{"nvjpegBufferPinnedDestroy", &st.pinned, nvjpegBufferPinnedDestroy},
	} {
		if *x.v != 0 {
			errs = append(errs, check(x.call, x.fn(*x.v)))
			*x.v = 0
		}
	}
	return errors.Join(errs...)
}

// Decode decodes data into dst on stream: the whole stream is parsed and
// Huffman-decoded on this thread, then the coefficients go up and the GPU
// finishes on stream. data must stay unchanged until stream is
// synchronized; dst is ready then.
func (st *DecoupledState) Decode(data []byte, dst *Image, stream cuda.Stream) error {
	if st == nil || st.s == 0 || st.dec.d == 0 {
		return errors.New("nvjpegDecodeJpegHost: closed state")
	}
	h, d := st.dec.h, st.dec.d
	if err := h.usable("nvjpegDecodeJpegHost"); err != nil {
		return err
	}
	if err := st.js.Parse(h, data, false); err != nil {
		return err
	}
	var supported int32 = -1
	if err := check("nvjpegDecoderJpegSupported", nvjpegDecoderJpegSupported(d, st.js.j, st.params, &supported)); err != nil {
		return err
	}
	if supported != 0 {
		return &Error{Call: "nvjpegDecoderJpegSupported", Status: StatusJPEGNotSupported}
	}
	if err := check("nvjpegDecodeJpegHost", nvjpegDecodeJpegHost(h.h, d, st.s, st.params, st.js.j)); err != nil {
		return err
	}
	if err := check("nvjpegDecodeJpegTransferToDevice", nvjpegDecodeJpegTransferToDevice(h.h, d, st.s, st.js.j, uintptr(stream))); err != nil {
		return err
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(dst)
	r := nvjpegDecodeJpegDevice(h.h, d, st.s, dst, uintptr(stream))
	runtime.KeepAlive(data)
	return check("nvjpegDecodeJpegDevice", r)
}
