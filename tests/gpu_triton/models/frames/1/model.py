# An upstream model that leaves decoded images in GPU memory, as a video
# decoder or a detector would: it decodes each JPEG with OpenCV (RGB) and
# returns it as a CUDA tensor through DLPack, so that Triton hands the
# next step (a Sluice decoded-input model) device memory.
import cv2
import numpy as np
import torch
import torch.utils.dlpack
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.device = torch.device("cuda", int(args["model_instance_device_id"]))

    def execute(self, requests):
        out = []
        for r in requests:
            # Through DLPack, as consumer's model.py reads its input.
            enc = torch.utils.dlpack.from_dlpack(pb_utils.get_input_tensor_by_name(r, "IMAGE").to_dlpack()).cpu().numpy()
            imgs = [cv2.cvtColor(cv2.imdecode(np.ascontiguousarray(row), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB) for row in enc]
            frame = torch.from_numpy(np.stack(imgs)).to(self.device)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor.from_dlpack("FRAME", torch.utils.dlpack.to_dlpack(frame))]))
        return out
