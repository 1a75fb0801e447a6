// Fused epilogue chains: what a quantized layer does to its int32 accumulators before they
// leave the kernel (the paper's section 5). A chain is part of the kernel spec, compiled in:
//   "epilogue": [{"op": "scale_bias"}, {"op": "relu"},
//                {"op": "pool", "kind": "max", "size": 2, "stride": 2},
//                {"op": "quantize", "bits": 2, "enc": "unsigned", "scale": "per_tensor"}]
//
// Rules: each op at most once; quantize, when present, is last; pool only in an apconv
// chain. The other ops may come in any order. Tiles: quantize needs bm in {32, 64, 128}
// (32 channels a packed word, 128 a packed row), pool needs bn >= size^2. Arithmetic, exactly (GPU and CPU reference
// perform the same float32 operations in the same order, so results match bit for bit):
//   value type   int32 (the accumulator) until scale_bias or an avg pool makes it float32
//   scale_bias   x = fmaf(float(x), scale[o], bias[o])            (o: output channel)
//   relu         x = x > 0 ? x : 0                                (in the current type)
//   pool max     the largest of the window's values, windows size x size, stride, no
//                padding, Hp = (Ho - size) / stride + 1 (floor)
//   pool avg     s = float(v[0]); s = s + float(v[i]) for the window in row-major order;
//                x = s / float(size * size)
//   quantize     t = floorf((float(x) - z) / s) with IEEE division (s, z per tensor or per
//                channel o), then clamped: k = min(max(t, lo), hi)
//                  unsigned: y = k,             lo = 0,          hi = 2^q - 1
//                  signed:   y = k,             lo = -2^(q-1),   hi = 2^(q-1) - 1
//                  pm1:      y = 2k - (2^q-1),  lo = 0,          hi = 2^q - 1
//                (NaN cannot arise: scales must be finite and > 0, biases and zero points finite.)
//                Without a pool, up to 3 bits, the kernels compare the accumulator with
//                per-channel thresholds found on this arithmetic (engine/quantize_thresholds.h):
//                the same results, without the float ops.
// Output: without quantize, int32 or float32 as above, in the op's layout (apmm: M x N,
// apconv: N x O x Ho' x Wo' after pooling); with quantize, the q-bit packed layout that the
// next layer reads: apconv writes conv_layout.h activations (C = O), apmm writes the
// bitplane_layout.h operand X' of the next GEMM (N rows of K' = M values), each with the
// plane-weighted popcount per pixel / row (pixsum / rowsum).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apnn/encoding.h"

namespace apnn {

enum class EpilogueOpKind { ScaleBias, Relu, Pool, Quantize };
enum class PoolKind { Max, Avg };
enum class QuantScale { PerTensor, PerChannel };

struct EpilogueOp {
  EpilogueOpKind kind = EpilogueOpKind::Relu;
  PoolKind pool = PoolKind::Max;  // pool
  int size = 2, stride = 2;       // pool: window 2..3, stride 1..size
  OperandFormat out{2, Encoding::Unsigned};  // quantize: bits 1..8 and encoding
  QuantScale scale = QuantScale::PerTensor;  // quantize
  bool operator==(const EpilogueOp& o) const {
    return kind == o.kind && pool == o.pool && size == o.size && stride == o.stride && out.bits == o.out.bits &&
           out.enc == o.out.enc && scale == o.scale;
  }
};

// Int16: the plain output narrowed to int16 (a spec's "output": "int16", apmm without a
// chain), exact because the launch refuses a K at which |y| could exceed 32767.
enum class OutputType { Int32, Float32, Packed, Int16 };

// An ordered, validated chain (see spec.h for parsing). Empty: the plain int32 (or int16) output.
struct Epilogue {
  std::vector<EpilogueOp> ops;
  // The plain output's element is int16, not int32 (spec field "output"; no ops): half the
  // bytes to write, for products whose range fits.
  bool int16_out = false;

  bool empty() const { return ops.empty(); }
  const EpilogueOp* find(EpilogueOpKind k) const {
    for (const EpilogueOp& op : ops)
      if (op.kind == k) return &op;
    return nullptr;
  }
  const EpilogueOp* pool() const { return find(EpilogueOpKind::Pool); }
  const EpilogueOp* quantize() const { return find(EpilogueOpKind::Quantize); }
  bool has(EpilogueOpKind k) const { return find(k) != nullptr; }
  OutputType output_type() const;
  // Needs the block's outputs staged in shared memory (pooling windows, 32-channel words).
  bool staged() const { return pool() != nullptr || quantize() != nullptr; }
  bool operator==(const Epilogue& o) const { return ops == o.ops && int16_out == o.int16_out; }
};

const char* epilogue_op_name(EpilogueOpKind k);

// Run-time parameters of a chain, host side. scale/bias: one per output channel (scale_bias);
// q_scale/q_zero: one (per_tensor) or one per output channel (per_channel).
struct EpilogueParams {
  std::vector<float> scale, bias, q_scale, q_zero;
};

// Throws Error(InvalidInput) naming the parameter when one is missing, has the wrong length
// (O output channels), is not finite, or (quantizer scales) is not > 0; or is given although
// the chain has no op that takes it.
void check_epilogue_params(const Epilogue& e, const EpilogueParams& p, int64_t channels);

}  // namespace apnn
