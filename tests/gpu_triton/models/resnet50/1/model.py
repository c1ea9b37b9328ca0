# A ResNet-50 (torchvision's architecture) behind Sluice's PIXELS, as a user
# ships one in Triton's Python backend: it reads PIXELS where Triton leaves
# them (GPU memory through DLPack; no host copy), runs FP16 under
# torch.inference_mode, and returns FP32 LOGITS through DLPack.
#
# On a GPU instance each batch size of the config's cuda_graph_batch_sizes
# has a CUDA graph, captured at load: a batch runs as the smallest graph
# that holds it (the rows past it are left over from earlier batches, and
# their outputs are dropped; batch norm in eval mode makes no row depend on
# another). A batch larger than every graph, or a capture that fails, runs
# eagerly; the log says which. A CPU instance (a local test without a GPU)
# runs FP32 eagerly.
#
# The weights are the file the parameter weights names in this folder: the
# random network of resnet50.py's network(seed), which the writer copies
# beside this file; load checks the digest the config carries, so that a
# test's reference rebuilt from the seed is this network.
import json
import os
import time

import torch
import torch.utils.dlpack
import triton_python_backend_utils as pb_utils

import resnet50


class TritonPythonModel:
    def initialize(self, args):
        t0 = time.time()
        cfg = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in cfg.get("parameters", {}).items()}
        folder = os.path.join(args["model_repository"], args["model_version"])
        net = resnet50.load(os.path.join(folder, params["weights"]), params["weights_digest"])

        self.gpu = args["model_instance_kind"] == "GPU"
        if self.gpu:
            self.device = torch.device("cuda", int(args["model_instance_device_id"]))
            torch.cuda.set_device(self.device)
            self.dtype = torch.float16
            self.net = net.to(self.device, self.dtype, memory_format=torch.channels_last)
        else:
            self.device, self.dtype, self.net = torch.device("cpu"), torch.float32, net
        self.graphs = {}  # batch size: (graph, static input, static output)
        sizes = sorted({int(s) for s in params.get("cuda_graph_batch_sizes", "").split()})
        if self.gpu and sizes:
            try:
                self._capture(sizes)
            except Exception as e:  # eager still serves; the log says so
                self.graphs = {}
                pb_utils.Logger.log_warn(f"resnet50: CUDA graph capture failed, running eagerly: {e!r}")
        pb_utils.Logger.log_info(
            f"resnet50: torch {torch.__version__}, {self.device}, {self.dtype}, weights {params['weights']} "
            f"(seed {params.get('seed')}), CUDA graphs for batch sizes {sorted(self.graphs) or 'none'}, "
            f"loaded in {time.time() - t0:.1f} s")

    def _forward(self, x):
        return self.net(x).float()

    def _capture(self, sizes):
        # Largest first: the graphs share one memory pool, sized by the first.
        pool = None
        with torch.inference_mode():
            for b in sorted(sizes, reverse=True):
                x = torch.zeros((b, 3, 224, 224), device=self.device, dtype=self.dtype).contiguous(
                    memory_format=torch.channels_last)
                side = torch.cuda.Stream(self.device)
                side.wait_stream(torch.cuda.current_stream(self.device))
                with torch.cuda.stream(side):
                    for _ in range(3):  # cuDNN and cuBLAS pick and allocate their work space first
                        self._forward(x)
                torch.cuda.current_stream(self.device).wait_stream(side)
                g = torch.cuda.CUDAGraph()
                # thread_local: CUDA calls of the stub's other threads do not break the capture.
                with torch.cuda.graph(g, pool=pool, capture_error_mode="thread_local"):
                    y = self._forward(x)
                pool = g.pool()
                self.graphs[b] = (g, x, y)
            torch.cuda.synchronize(self.device)

    def _run(self, xs, n):
        """Logits [n, 1000] FP32 of the inputs xs (tensors of [k, 3, 224, 224], n rows in all)."""
        fit = [b for b in self.graphs if b >= n]
        if fit:
            g, x, y = self.graphs[min(fit)]
            row = 0
            for t in xs:  # one copy each: FP32 NCHW to the graph's FP16 channels-last input
                x[row:row + t.shape[0]].copy_(t)
                row += t.shape[0]
            g.replay()
            return y[:n].clone()  # the next replay writes y again
        x = torch.cat([t.to(self.device) for t in xs]).to(self.dtype)
        if self.gpu:
            x = x.contiguous(memory_format=torch.channels_last)
        return self._forward(x)

    def execute(self, requests):
        with torch.inference_mode():
            xs, sizes, on_gpu = [], [], []
            for r in requests:
                t = pb_utils.get_input_tensor_by_name(r, "PIXELS")
                on_gpu.append(not t.is_cpu())
                xs.append(torch.utils.dlpack.from_dlpack(t.to_dlpack()))
                sizes.append(xs[-1].shape[0])
            logits = self._run(xs, sum(sizes))
            out, row = [], 0
            for n, gpu in zip(sizes, on_gpu):
                part = logits[row:row + n]
                row += n
                # ON_GPU: whether PIXELS reached this model in GPU memory (a test reads it).
                flag = torch.full((n, 1), int(gpu), dtype=torch.int32, device=part.device)
                # Tensors, not capsules: the stub then waits for torch's stream before it reads them.
                out.append(pb_utils.InferenceResponse([pb_utils.Tensor.from_dlpack("LOGITS", part),
                                                       pb_utils.Tensor.from_dlpack("ON_GPU", flag)]))
            return out
