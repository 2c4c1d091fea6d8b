"""The fused loops' intrinsics: float32 bit casts, and the wide-vector attribute."""

from __future__ import annotations

import numba
import numpy as np

from bigkern.kernels.loop_intrinsics import (
    WIDE_VECTOR_ATTRIBUTE,
    float32_bits,
    float32_from_bits,
    prefer_wide_vectors,
)


@numba.njit
def _bits_and_back(values: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    prefer_wide_vectors()
    bits = np.empty(values.shape, np.int32)
    scaled = np.empty(values.shape, np.float32)
    for j in range(values.shape[0]):
        bits[j] = float32_bits(values[j])
        scaled[j] = float32_from_bits(float32_bits(values[j]) + (np.int32(shift[j]) << 23))
    return bits, scaled


def test_bit_casts_are_numpy_views_and_an_exponent_shift_scales_by_a_power_of_two():
    values = np.array([1.0, -2.5, 0.75, 3e-30, 1e30], dtype=np.float32)
    shift = np.array([3, -2, -120, 10, -60])
    bits, scaled = _bits_and_back(values, shift)
    np.testing.assert_array_equal(bits, values.view(np.int32))
    np.testing.assert_array_equal(scaled, values * np.ldexp(np.float32(1), shift))


def test_the_function_that_asks_for_wide_vectors_carries_the_attribute():
    (ir,) = _bits_and_back.inspect_llvm().values()
    assert WIDE_VECTOR_ATTRIBUTE in ir
