"""Runs this version folder's model.onnx with ONNX Runtime (CPU) in Triton's
python backend: the inputs and outputs are the config's, by name, and
every request of a batch goes through one session run.

The example models classifier, classifier_crops and detector each carry
this same file (a test keeps the copies equal: a model folder must stand
alone, to be copied or replaced by itself). Their model.onnx is an
untrained network that scripts/onnx_models.py writes (make triton).

Config parameter intra_op_threads (default 1): ONNX Runtime's threads for
one batch. One leaves the other cores to Sluice's decoders, which share the
server's CPU.
"""

import json
import os

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        path = os.path.join(args["model_repository"], args["model_version"], "model.onnx")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} is missing: scripts/onnx_models.py writes it (make triton)")
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(params.get("intra_op_threads", "1"))
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.inputs = [t["name"] for t in config["input"]]
        self.outputs = [t["name"] for t in config["output"]]

    def execute(self, requests):
        # Dynamic batching hands over several requests: one run for all,
        # the rows split back by request.
        feeds = {n: [pb_utils.get_input_tensor_by_name(r, n).as_numpy() for r in requests] for n in self.inputs}
        sizes = [len(x) for x in feeds[self.inputs[0]]]
        try:
            results = self.session.run(self.outputs, {n: np.concatenate(xs) for n, xs in feeds.items()})
        except Exception as e:  # noqa: BLE001 (ONNX Runtime's errors have no common base)
            err = pb_utils.TritonError(f"ONNX Runtime: {e}")
            return [pb_utils.InferenceResponse(error=err) for _ in requests]
        responses, start = [], 0
        for n in sizes:
            rows = [np.ascontiguousarray(r[start : start + n]) for r in results]
            out = [pb_utils.Tensor(name, r) for name, r in zip(self.outputs, rows)]
            responses.append(pb_utils.InferenceResponse(output_tensors=out))
            start += n
        return responses
