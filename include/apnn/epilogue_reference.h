// CPU reference of fused epilogue chains (include/apnn/epilogue.h defines the arithmetic;
// this follows it operation for operation, so GPU results match bit for bit).
#pragma once
#include <cstdint>
#include <vector>

#include "apnn/epilogue.h"

namespace apnn {

// A layer's output after its chain, as (images, channels, height, width): apconv
// (N, O, Ho', Wo'), apmm (1, M, 1, N) so that y[m][n] is channel m of pixel n.
struct EpilogueResult {
  OutputType type = OutputType::Int32;
  int64_t N = 0, C = 0, H = 0, W = 0;
  std::vector<int32_t> i32;     // Int32, and Int16 (the same values, which fit)
  std::vector<float> f32;       // Float32
  std::vector<int16_t> values;  // Packed: the quantized values, NCHW (pack with conv_reference.h)
};

// y: the int32 output (N, C, H, W) before the chain. Throws Error(InvalidInput) when a pool
// window does not fit H x W, or for parameters check_epilogue_params rejects.
EpilogueResult epilogue_reference(const Epilogue& e, const EpilogueParams& p, const int32_t* y, int64_t N, int64_t C,
                                  int64_t H, int64_t W);

// The quantized value that epilogue_reference writes for the accumulator y of channel o,
// for a chain with quantize and without pool (element ops only). Parameters as checked by
// check_epilogue_params.
int16_t quantized_element(const Epilogue& e, const EpilogueParams& p, int32_t y, int64_t o);

// Output spatial size after the chain's pool (H, W without one); Error(InvalidInput) naming
// the sizes when the window does not fit.
void pooled_size(const Epilogue& e, int64_t H, int64_t W, int64_t* Hp, int64_t* Wp);

// Random parameters that spread a layer's outputs over the quantizer's levels, for tests and
// verification, fitted to the data y (N, C, H, W): scale_bias normalizes the values that reach it (after any
// ops before it) to about mean 0, spread 1 with random per-channel jitter (every fourth
// channel's scale negative), and the
// quantizer's levels span the 2nd..98th percentile of the values that reach it.
EpilogueParams fitted_epilogue_params(const Epilogue& e, const int32_t* y, int64_t N, int64_t C, int64_t H, int64_t W,
                                      uint64_t seed);

}  // namespace apnn
