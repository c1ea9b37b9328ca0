"""STAND-IN detector for ensemble_crops: NOT a trained model.

From the SHA-256 of an image's encoded bytes (trailing zero padding
dropped: a batched UINT8 request pads shorter images with zeros) it gives
1 to 4 boxes, x1, y1, x2, y2 as fractions of the image's width and height,
and the count; rows past the count are NaN, as detectors pad. A box may
reach past the right or bottom edge (up to 1.2), as detector boxes do,
which Sluice clips. Deterministic and numpy-only, so that tests can check
what the ensemble cropped.
"""

import hashlib

import numpy as np

MAX = 8


def boxes(data):
    """bytes → (float32 [MAX, 4], int32 count)."""
    h = hashlib.sha256(bytes(data).rstrip(b"\0")).digest()
    n = 1 + h[0] % 4
    out = np.full((MAX, 4), np.nan, dtype=np.float32)
    for k in range(n):
        a, b, c, d = h[1 + 4 * k : 5 + 4 * k]
        x1, y1 = a / 255 * 0.7, b / 255 * 0.7
        out[k] = (x1, y1, x1 + 0.1 + c / 255 * 0.4, y1 + 0.1 + d / 255 * 0.4)
    return out, np.int32(n)


class TritonPythonModel:
    def execute(self, requests):
        import triton_python_backend_utils as pb_utils

        responses = []
        for request in requests:
            images = pb_utils.get_input_tensor_by_name(request, "IMAGE").as_numpy()
            found = [boxes(row.tobytes()) for row in images]
            b = np.stack([f[0] for f in found])
            n = np.array([[f[1]] for f in found], dtype=np.int32)
            responses.append(
                pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("BOXES", b), pb_utils.Tensor("COUNT", n)])
            )
        return responses
