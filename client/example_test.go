package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/sluice-dev/sluice/client"
)

// One encoded image through preprocess_imagenet over gRPC; NewHTTP gives
// the same Client over HTTP.
func Example() {
	c, err := client.NewGRPC("127.0.0.1:8001", client.Options{
		Retry: client.RetryPolicy{MaxAttempts: 5, InitialBackoff: 100 * time.Millisecond},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	img, err := os.ReadFile("photo.jpg")
	if err != nil {
		log.Fatal(err)
	}
	r, err := c.Infer(ctx, &client.InferRequest{
		Model:  "preprocess_imagenet",
		Inputs: []client.Tensor{{Name: "IMAGE", Datatype: "UINT8", Shape: []int64{1, int64(len(img))}, Data: img}},
	})
	switch {
	case client.IsInvalidArg(err):
		log.Fatalf("the server rejected the image: %v", err) // e.g. "IMAGE element 0: truncated: ..."
	case err != nil:
		log.Fatal(err)
	}
	pixels, _ := r.Output("PIXELS").Float32s() // [1, 3, 224, 224]
	fmt.Println(len(pixels))
}

// Several encoded images in one BYTES input.
func ExampleBytesTensor() {
	in := client.BytesTensor("IMAGE", [][]byte{[]byte("jpeg 1"), []byte("jpeg 2")})
	fmt.Println(in.Datatype, in.Shape, len(in.Data))
	// Output: BYTES [2] 20
}
