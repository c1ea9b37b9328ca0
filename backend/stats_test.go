package backend

import (
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/testimg"
	"github.com/sluice-dev/sluice/ops"
)

// TestImageStats: one Execute's successes, their encoded bytes and its
// failures by cause; a request that cannot be read counts nowhere.
func TestImageStats(t *testing.T) {
	var clock uint64
	m, err := LoadModel(ModelArgs{Name: "pre", Version: 1, RepoPath: imagenetDir(t), Config: []byte(goodConfig),
		Now: func() uint64 { clock += 10; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	inst := mustInstance(t, m)
	good := [][]byte{testimg.JPEG(64, 48, 1), testimg.JPEG(33, 71, 2), testimg.JPEG(120, 90, 3)}
	truncated := testimg.JPEG(80, 80, 4)
	truncated = truncated[:len(truncated)/2]
	notImage := []byte("not an image at all")

	reqs := []Request{
		request("IMAGE", rawInput(good[0])),
		request("IMAGE", rawInput(good[1], truncated, notImage, truncated)),
		request("IMAGE", rawInput(good[2])),
		request("OTHER", rawInput(good[0])), // no IMAGE input: fails before the batch
	}
	resps := []*fakeResponse{newResponse(), newResponse(), newResponse(), newResponse()}
	_, st := inst.Execute(reqs, asResponses(resps))

	// rawInput pads the request's images to the longest: the second
	// request's good image is counted with its padding, as sent.
	padded := max(len(good[1]), len(truncated), len(notImage))
	want := ImageStats{Images: 3, ImageBytes: int64(len(good[0]) + padded + len(good[2]))}
	want.Failures[causeIndex(ops.Truncated)] = 2
	want.Failures[causeIndex(ops.NotImage)] = 1
	if st.Images != want {
		t.Errorf("image stats %+v, want %+v", st.Images, want)
	}
	if st.CollectNs() != st.ComputeStart-st.ExecStart || st.PipelineNs() != st.ComputeEnd-st.ComputeStart ||
		st.RespondNs() != st.ExecEnd-st.ComputeEnd || st.PipelineNs() == 0 {
		t.Errorf("stage durations %d %d %d from %+v", st.CollectNs(), st.PipelineNs(), st.RespondNs(), st)
	}

	// The next Execute counts afresh.
	_, st = inst.Execute(reqs[:1], asResponses(resps[:1]))
	if want := (ImageStats{Images: 1, ImageBytes: int64(len(good[0]))}); st.Images != want {
		t.Errorf("second Execute: %+v, want %+v", st.Images, want)
	}
}

func TestCauses(t *testing.T) {
	seen := map[ops.Cause]bool{}
	for i, c := range Causes {
		if seen[c] || causeIndex(c) != i {
			t.Errorf("cause %q listed twice", c)
		}
		seen[c] = true
	}
	if causeIndex("something new") != causeIndex(ops.BadInput) {
		t.Errorf("an unknown cause does not count as %q", ops.BadInput)
	}
}

// TestOpTimes: each Execute reports the time of every operator call of the
// pipeline, as the executor planned it (resize and crop fused), anew.
func TestOpTimes(t *testing.T) {
	m, err := LoadModel(ModelArgs{Name: "pre", Version: 1, RepoPath: imagenetDir(t), Config: []byte(goodConfig)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	inst := mustInstance(t, m)
	for round := range 2 {
		reqs := []Request{request("IMAGE", rawInput(testimg.JPEG(300, 200, round)))}
		_, st := inst.Execute(reqs, asResponses([]*fakeResponse{newResponse()}))
		var names []string
		for _, op := range st.Ops {
			names = append(names, op.Name)
			if op.Ns == 0 {
				t.Errorf("round %d: %s took no time", round, op.Name)
			}
		}
		if got := strings.Join(names, ","); got != "decode,resize+crop,normalize" {
			t.Fatalf("round %d: ops %s", round, got)
		}
		if sum := st.Ops[0].Ns + st.Ops[1].Ns + st.Ops[2].Ns; sum > st.PipelineNs()*uint64(inst.exec.Workers()) {
			t.Errorf("round %d: operators took %d ns of a %d ns run on %d workers: not this run's share", round, sum, st.PipelineNs(), inst.exec.Workers())
		}
	}
}
