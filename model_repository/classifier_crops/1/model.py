"""STAND-IN classifier of crops for ensemble_crops: NOT a trained model.

Each crop is scored by the classifier stand-in's own function (loaded from
../classifier/1/model.py, so that the two cannot drift apart and a test can
compare with the classifier model itself); unused crops, which Sluice
leaves all zeros, score zeros.
"""

import importlib.util
import os

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        path = os.path.join(args["model_repository"], "..", "classifier", "1", "model.py")
        spec = importlib.util.spec_from_file_location("classifier_standin", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        self.scores = mod.scores

    def execute(self, requests):
        responses = []
        for request in requests:
            crops = pb_utils.get_input_tensor_by_name(request, "CROPS").as_numpy()
            b, m = crops.shape[:2]
            flat = crops.reshape(b * m, 3, 224, 224)
            s = self.scores(flat)
            s[~flat.reshape(b * m, -1).any(axis=1)] = 0
            out = pb_utils.Tensor("SCORES", s.reshape(b, m, 1000).astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
