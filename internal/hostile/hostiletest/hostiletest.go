// Package hostiletest runs every case of package hostile through an
// executor, as a server's request would reach it: the executor tests of
// the CPU and the GPU share it.
package hostiletest

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/executor"
	"github.com/sluice-dev/sluice/internal/hostile"
	"github.com/sluice-dev/sluice/ops"
)

// Run sends each case's PerRequest copies to e as one request (host
// destinations, a request budget of ops.DefaultRequestQuota): a case with
// refusal words must fail on every copy naming them, with no copy decoded;
// a legal one must decode. Each case's time is logged. outputs is the
// number of the pipeline's outputs.
func Run(t *testing.T, e executor.Executor, outputs int) {
	t.Helper()
	for _, c := range hostile.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			n := max(c.PerRequest, 1)
			data := c.Make()
			in := make([][]byte, n)
			budgets := make([]*ops.Budget, n)
			var req ops.Budget
			req.Reset("request", ops.DefaultRequestQuota, nil)
			for i := range in {
				in[i], budgets[i] = data, &req
			}
			dst := make([][]executor.Dest, outputs)
			for o := range dst {
				dst[o] = make([]executor.Dest, n)
				for i := range dst[o] {
					dst[o][i].Host = make([]byte, e.SampleBytes(o))
				}
			}
			errs := make([]error, n)
			t0 := time.Now()
			if err := e.RunInto([][][]byte{in}, dst, errs, budgets); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (%s, %d bytes x %d): %v; first error: %v", c.Name, c.Format, len(data), n, time.Since(t0), errs[0])
			failed := 0
			for _, err := range errs {
				if err != nil {
					failed++
				}
			}
			if len(c.Refused) == 0 {
				if failed > 0 {
					t.Errorf("%s (%s) is legal; %d of %d copies failed: %v", c.Name, c.Row, failed, n, firstErr(errs))
				}
				return
			}
			if failed == 0 {
				t.Fatalf("%s (%s): every copy decoded; it must be refused naming %v", c.Name, c.Row, c.Refused)
			}
			msg := strings.ToLower(firstErr(errs).Error())
			for _, w := range c.Refused {
				if !strings.Contains(msg, strings.ToLower(w)) {
					t.Errorf("%s: the error should name %q: %v", c.Name, w, firstErr(errs))
				}
			}
		})
	}
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
