"""Resampling weights for resizing one axis, built in numpy while importing.

Resizing (ONNX ``Resize``, torch's upsampling) is separable and linear in
the data: resizing an axis of ``size_in`` elements to ``size_out`` is a
``[size_out, size_in]`` matrix applied along it. A front end computes where
each output element samples the input (:func:`source_coordinates`), builds
the matrix (:func:`weights`: nearest, linear or cubic, optionally
antialiased) and applies it as a gather where every row copies one element
(:func:`copied`), else as a matmul. The semantics are ONNX Resize's (opsets
13 to 19) as the onnx reference implements them, computed in float64 in its
order, so that ties (a nearest coordinate at exactly .5) break the same way.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .. import ops
from ._common import Value, cast_to, matmul, numpy_or, reshaped

__all__ = ["MODES", "COORDINATE_MODES", "NEAREST_MODES", "source_coordinates", "tap_count", "weights", "copied",
           "resampled"]

MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def source_coordinates(mode: str, size_in: int, size_out: int, scale: float,
                       roi: tuple[np.floating, np.floating] = (np.float64(0.0), np.float64(1.0))) -> np.ndarray:
    """The input coordinate (float64, ``[size_out]``) that each output
    element samples, by coordinate transformation ``mode``. ``scale`` is the
    output's size over the input's before rounding (``size_out`` is its
    floor, or the size asked for); ``roi`` the (start, end) of
    tf_crop_and_resize, normalized to the input, in its own dtype (the
    reference computes with it there)."""
    y = np.arange(size_out, dtype=np.float64)
    width = scale * size_in  # fractional: half_pixel_symmetric centers the rounding off
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        return size_in / 2 * (1 - size_out / width) + (y + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return np.full(size_out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    if mode == "align_corners":
        return np.zeros(size_out) if width == 1 else y * (size_in - 1) / (width - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if width == 1:
            return np.full(size_out, (end - start) * (size_in - 1) / 2, np.float64) + start * (size_in - 1)
        return y * (end - start) * (size_in - 1) / (width - 1) + start * (size_in - 1)
    raise ValueError(f"coordinate transformation mode must be one of {COORDINATE_MODES}, got {mode!r}")


def _kernel_scale(mode: str, scale: float, antialias: bool) -> Optional[float]:
    """What an antialiased kernel's distances are multiplied by: ``min(scale, 1)``,
    so that it widens when downsampling; None for the plain kernels."""
    return min(scale, 1.0) if antialias and mode != "nearest" else None


def _first_tap(mode: str, kernel_scale: float) -> int:
    """An antialiased kernel's first tap, from the sample's left pixel (the
    kernel's support, 1 for linear and 2 for cubic, widened by 1 / kernel_scale)."""
    return int(math.floor(-(1 if mode == "linear" else 2) / kernel_scale) + 1)


def tap_count(mode: str, scale: float, antialias: bool = False) -> int:
    """How many input elements each output element weighs (always even)."""
    kernel_scale = _kernel_scale(mode, scale, antialias)
    if kernel_scale is not None:
        return 2 - 2 * _first_tap(mode, kernel_scale)
    return 4 if mode == "cubic" else 2


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel at distances ``d``, with coefficient ``a``."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _coefficients(ratio: np.ndarray, mode: str, scale: float, nearest_mode: str, cubic_a: float,
                  antialias: bool) -> np.ndarray:
    """The weight of each tap, ``[size_out, taps]``, from the sample's
    distance past its left pixel (``ratio`` in (0, 1]; 1 on a pixel)."""
    r = ratio[:, None]
    kernel_scale = _kernel_scale(mode, scale, antialias)
    if kernel_scale is not None:
        start = _first_tap(mode, kernel_scale)
        d = (np.arange(start, 2 - start) - r) * kernel_scale
        kernel = np.clip(1 - np.abs(d), 0, 1) if mode == "linear" else _cubic(d, cubic_a)
        return kernel / kernel.sum(axis=1, keepdims=True)
    if mode == "linear":
        return np.concatenate([1 - r, r], axis=1)
    if mode == "cubic":
        return _cubic(np.concatenate([r + 1, r, 1 - r, 2 - r], axis=1), cubic_a)
    if nearest_mode not in NEAREST_MODES:
        raise ValueError(f"nearest mode must be one of {NEAREST_MODES}, got {nearest_mode!r}")
    # On a pixel (ratio 1) every mode takes the pixel itself: the right tap.
    right = {"round_prefer_floor": r > 0.5, "round_prefer_ceil": r >= 0.5, "floor": r == 1, "ceil": r > 0}[nearest_mode]
    return np.concatenate([~right, right], axis=1).astype(np.float64)


def weights(x: np.ndarray, size_in: int, scale: float, mode: str, *, nearest_mode: str = "round_prefer_floor",
            cubic_a: float = -0.75, antialias: bool = False, exclude_outside: bool = False) -> np.ndarray:
    """The ``[len(x), size_in]`` float64 matrix that samples an axis of
    ``size_in`` elements at coordinates ``x`` (:func:`source_coordinates`)
    by interpolation ``mode`` (see :data:`MODES`); ``scale`` (output size
    over input size) stretches the antialiased kernels when downsampling.
    Taps past either end take the edge element, or, with
    ``exclude_outside``, weigh 0 (the others are renormalized)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    left = np.floor(x)
    # On a pixel, the sample is the right end of the interval to its left: ratio 1, not 0.
    coefficients = _coefficients(np.where(x == left, 1.0, x - left), mode, scale, nearest_mode, cubic_a, antialias)
    taps = coefficients.shape[1]
    # The window of taps around x (on a pixel, the pixel is its right middle
    # tap), found as the reference does, after a shift by half the window, so
    # that rounding there picks the same window.
    half = taps // 2
    shifted = x + half
    first = np.floor(shifted) + np.where(shifted == np.floor(shifted), 0, 1) - 2 * half
    index = first.astype(np.int64)[:, None] + np.arange(taps)
    if exclude_outside:
        coefficients = np.where((index < 0) | (index >= size_in), 0.0, coefficients)
        total = coefficients.sum(axis=1, keepdims=True)
        coefficients = coefficients / np.where(total == 0, 1.0, total)
    matrix = np.zeros((len(x), size_in))
    rows = np.broadcast_to(np.arange(len(x))[:, None], index.shape)
    np.add.at(matrix, (rows, np.clip(index, 0, size_in - 1)), coefficients)
    return matrix


def copied(matrix: np.ndarray) -> Optional[np.ndarray]:
    """The input index each output copies (int64, ``[size_out]``) when every
    row of ``matrix`` is a single 1 (nearest; linear on pixels), else None."""
    if np.all((matrix == 0) | (matrix == 1)) and np.all(matrix.sum(axis=1) == 1):
        return np.argmax(matrix, axis=1).astype(np.int64)
    return None


def resampled(x: Value, axis: int, weights: np.ndarray) -> Value:
    """``x`` with dim ``axis`` resized by ``weights`` ``[out, in]``: a gather
    where every output copies one element (exact, any dtype), else one
    matmul in float32 (float64 data in float64; float16 and bfloat16 cast
    up and back, as the reference computes in float64)."""
    index = copied(weights)
    if index is not None:
        if np.array_equal(index, np.arange(x.shape[axis])):
            return x
        return numpy_or([x], lambda v: np.take(v, index, axis), lambda v: ops.take(v, index, axis))
    dtype = np.dtype(x.dtype)
    work = dtype if dtype == np.float64 else np.dtype(np.float32)
    wide, shape = cast_to(x, work), list(x.shape)
    if axis == len(shape) - 1:
        return cast_to(matmul(wide, np.ascontiguousarray(weights.T, work)), dtype)
    view = reshaped(wide, [math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])])
    y = matmul(weights.astype(work), view)  # [out, in] @ [outer, in, inner]
    return cast_to(reshaped(y, shape[:axis] + [len(weights)] + shape[axis + 1:]), dtype)
