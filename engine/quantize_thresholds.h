// Per-channel accumulator thresholds of a pool-free quantize chain, for the kernels that
// quantize by integer compares (spec/epilogue.h, quantize_by_thresholds).
//
// Each op of such a chain is monotone in the int32 accumulator y (float(y), fmaf by a finite
// scale, relu, subtracting a zero point, IEEE division by a scale > 0, floor, clamp), so per
// output channel the quantizer's level is a step function of y with at most 2^q - 1 steps.
// The thresholds where it steps are found by bisection over y on the CPU reference itself
// (quantized_element), so the compares reproduce it exactly for every int32 y.
#pragma once
#include <cstdint>
#include <vector>

#include "apnn/epilogue.h"

namespace apnn {

// Words per channel: 2^q - 1 thresholds (ascending; unused ones INT32_MAX), then a header
// word: base | steps << 8 | falling << 16, where the level at y is
//   base + (falling ? -1 : 1) * min(steps, #{k : y >= threshold k}).
// The level indexes the quantizer's values from its lowest (templates/epilogue.cuh turns it
// into the code bits).
int quantize_threshold_words(const Epilogue& e);

// The table for `channels` output channels (check_epilogue_params's parameters).
std::vector<int32_t> quantize_thresholds(const Epilogue& e, const EpilogueParams& p, int64_t channels);

// The level of accumulator y from one channel's words, as the kernel computes it.
int threshold_level(const int32_t* channel, int words, int32_t y);

// The level of a quantized value of the chain's encoding (0 for its lowest value).
int quantize_level(const EpilogueOp& q, int16_t value);

}  // namespace apnn
