package ops_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/ops"
)

func TestBudgetTake(t *testing.T) {
	var batch, req ops.Budget
	batch.Reset("batch", ops.Quota{MaxPixels: 1000, MaxWork: 1 << 40}, nil)
	req.Reset("request", ops.Quota{MaxPixels: 600, MaxWork: 5000}, &batch)
	if err := req.Take(500, 1000); err != nil {
		t.Fatal(err)
	}
	err := req.Take(200, 1000)
	if ops.CauseOf(err) != ops.TooLarge || !strings.Contains(err.Error(), "max_request_pixels") ||
		!strings.Contains(err.Error(), "600") || !strings.Contains(err.Error(), "700") {
		t.Fatalf("over the request's pixels: %v", err)
	}
	// A second request of the same batch draws on the batch's remainder.
	var req2 ops.Budget
	req2.Reset("request", ops.Quota{MaxPixels: 600, MaxWork: 5000}, &batch)
	if err := req2.Take(300, 10); err != nil { // batch: 800 (the refused image was not drawn on it)
		t.Fatal(err)
	}
	if err := req2.Take(300, 10); ops.CauseOf(err) != ops.TooLarge || !strings.Contains(err.Error(), "max_batch_pixels") {
		t.Fatalf("over the batch's pixels: %v", err)
	}
	var w ops.Budget
	w.Reset("request", ops.Quota{MaxWork: 100}, nil)
	if err := w.Take(1, 101); !strings.Contains(err.Error(), "max_request_work") {
		t.Fatalf("over the work: %v", err)
	}
	// Reset empties it; zero quotas are no limit.
	w.Reset("request", ops.Quota{}, nil)
	if err := w.Take(1<<40, 1<<50); err != nil {
		t.Fatal(err)
	}
}

func TestBudgetConcurrent(t *testing.T) {
	var b ops.Budget
	b.Reset("request", ops.Quota{MaxPixels: 100}, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if b.Take(1, 0) == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if ok != 100 {
		t.Errorf("%d of 400 draws of 1 pixel passed a budget of 100", ok)
	}
}
