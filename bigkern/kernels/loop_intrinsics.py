"""Three numba intrinsics for the fused loops: float32 bits, and the vector width of a loop.

* :func:`float32_bits` and :func:`float32_from_bits` reinterpret a float32 as the
  int32 of its bits and back (LLVM's ``bitcast``: no instruction once
  vectorized), so a loop can put ``2^k`` into a float's exponent field in
  registers, without a second sweep over an int32 view of its output;
* :func:`prefer_wide_vectors`, called once in a compiled function, lets LLVM
  vectorize that function's loops at the widest width the CPU has. On Intel
  CPUs with AVX-512 LLVM keeps to 256-bit vectors unless told otherwise (its
  ``prefer-256-bit`` tuning, which clang lifts with ``-mprefer-vector-width=512``),
  while numpy's own float32 ``exp`` runs 512 bits wide; the call gives the
  function the attribute that clang's flag sets, ``"prefer-vector-width"="512"``.
  A CPU without AVX-512 keeps its widest vectors (AVX2's 256 bits); other
  architectures ignore the attribute.

They are resolved when the calling function is compiled, so the numba cache holds
their effect like the rest of the function's code.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["WIDE_VECTOR_ATTRIBUTE", "float32_bits", "float32_from_bits", "prefer_wide_vectors"]

#: The LLVM function attribute that :func:`prefer_wide_vectors` sets (clang's
#: ``-mprefer-vector-width=512``).
WIDE_VECTOR_ATTRIBUTE = '"prefer-vector-width"="512"'


@intrinsic
def float32_bits(typingctx: Any, value: Any) -> Any:  # pragma: no cover - compiled
    """The int32 whose bits are those of the float32 ``value`` (compiled code only)."""
    if value != types.float32:
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], ir.IntType(32))

    return types.int32(types.float32), codegen


@intrinsic
def float32_from_bits(typingctx: Any, bits: Any) -> Any:  # pragma: no cover - compiled
    """The float32 whose bits are the low 32 bits of the integer ``bits`` (compiled code
    only; numba widens int32 arithmetic to 64 bits, and LLVM narrows it back here)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        low = args[0] if bits.bitwidth == 32 else builder.trunc(args[0], ir.IntType(32))
        return builder.bitcast(low, ir.FloatType())

    return types.float32(bits), codegen


@intrinsic
def prefer_wide_vectors(typingctx: Any) -> Any:  # pragma: no cover - compiled
    """Let LLVM vectorize the calling function's loops at the CPU's widest width.

    Sets :data:`WIDE_VECTOR_ATTRIBUTE` on the function being compiled; emits no
    instruction. llvmlite's attribute set accepts only attributes without a value,
    so the string attribute is added to the set directly (it renders as written).
    """

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        attributes = builder.function.attributes
        if isinstance(attributes, set):  # as llvmlite keeps them; else the default width
            set.add(attributes, WIDE_VECTOR_ATTRIBUTE)
        return context.get_dummy_value()

    return types.none(), codegen
