// Package testimg makes small encoded images for tests that must run
// without the photo corpus.
package testimg

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
)

// JPEG encodes a w×h colour gradient whose colours depend on seed, so that
// two seeds give different images.
func JPEG(w, h, seed int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x*3 + seed*40), uint8(y*5 + seed*7), uint8(x + y + seed), 255})
		}
	}
	var b bytes.Buffer
	// Encoding an in-memory RGBA image into a buffer cannot fail.
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	return b.Bytes()
}
