"""STAND-IN classifier for the example ensemble: NOT a trained model.

SCORES = softmax(W · pool(PIXELS)), where pool averages each channel over an
8x8 grid (192 features) and W is a fixed pseudo-random 1000x192 matrix
(seed 0). It is deterministic, cheap, and depends on every pixel region,
so tests can check that the ensemble passes the right tensor along.
"""

import numpy as np
import triton_python_backend_utils as pb_utils


def scores(pixels):
    """pixels: float32 [N, 3, 224, 224] → float32 [N, 1000]."""
    n = pixels.shape[0]
    pooled = pixels.reshape(n, 3, 8, 28, 8, 28).mean(axis=(3, 5)).reshape(n, 192)
    # In float64: a float32 product's rounding depends on how many rows
    # BLAS multiplies at once (seen: a crop's top score one float32 step
    # apart between a batch of 8 rows and one of 3), and a row's scores
    # must not depend on the batch it came in.
    logits = pooled.astype(np.float64) @ WEIGHTS.T
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


WEIGHTS = np.random.default_rng(0).standard_normal((1000, 192)).astype(np.float32).astype(np.float64)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            pixels = pb_utils.get_input_tensor_by_name(request, "PIXELS").as_numpy()
            out = pb_utils.Tensor("SCORES", scores(pixels))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
