# Reads PIXELS where Triton left it (GPU tensors through DLPack when it can)
# and returns each image's mean, and whether the tensor arrived on the GPU.
# On the GPU it costs one float32 reduction over the batch, in place, and a
# copy of B floats to the host: it must not be what bounds the ensemble.
import numpy as np
import triton_python_backend_utils as pb_utils

try:
    import torch
    import torch.utils.dlpack
except ImportError:  # a local CPU test without torch
    torch = None


class TritonPythonModel:
    def initialize(self, args):
        pb_utils.Logger.log_info(f"consumer: torch {getattr(torch, '__version__', None)}, "
                                 f"kind {args.get('model_instance_kind')}, device {args.get('model_instance_device_id')}")

    def execute(self, requests):
        out = []
        for r in requests:
            t = pb_utils.get_input_tensor_by_name(r, "PIXELS")
            on_gpu = not t.is_cpu()
            if torch is not None:
                x = torch.utils.dlpack.from_dlpack(t.to_dlpack())
                mean = x.reshape(x.shape[0], -1).mean(dim=1, keepdim=True).cpu().numpy()
            else:
                x = t.as_numpy()
                mean = x.reshape(x.shape[0], -1).mean(axis=1, keepdims=True, dtype=np.float64).astype(np.float32)
            flag = np.full((mean.shape[0], 1), int(on_gpu), np.int32)
            if torch is not None:
                # Through DLPack: the stub's numpy path returned empty
                # tensors under the machine's numpy 2 (seen on the H200).
                outs = [pb_utils.Tensor.from_dlpack("MEAN", torch.utils.dlpack.to_dlpack(torch.from_numpy(mean))),
                        pb_utils.Tensor.from_dlpack("ON_GPU", torch.utils.dlpack.to_dlpack(torch.from_numpy(flag)))]
            else:
                outs = [pb_utils.Tensor("MEAN", mean), pb_utils.Tensor("ON_GPU", flag)]
            out.append(pb_utils.InferenceResponse(outs))
        return out
