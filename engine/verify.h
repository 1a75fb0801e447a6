// GPU result vs the CPU reference on fresh random inputs, and the kernel's time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "apnn/conv_layout.h"
#include "apnn/engine.h"
#include "engine/epilogue_device.h"
#include "runtime/steady_timing.h"

namespace apnn {

struct VerifyReport {
  std::string canonical, arch, device;
  nlohmann::json shape;          // {"m","n","k"} or {"batch","in_channels",...}
  uint64_t seed = 0;
  std::string output;            // "int32", "float32" or the packed format ("2-bit unsigned, packed")
  uint64_t checked = 0;          // output words compared (values, then any per-pixel sums)
  int distinct = 0;              // packed outputs: how many quantizer levels occur (a spread check)
  uint64_t mismatches = 0;
  std::string first_mismatch;    // "index i: gpu G, cpu C" when mismatches > 0
  Timing timing;                 // the kernel's median time (us) over repeats of back-to-back launches, their
                                 // launches, repeats and input sets (sets 0: not timed)
  double pack_us = 0;            // packing both operands once
  double tops = 0;               // logical multiply-adds x2 per second, 1e12
  nlohmann::json timeline;       // verify_apmm with timeline: summarize_timeline of the timed launches
  nlohmann::json to_json() const;
  std::string to_text() const;
};

// The CPU references (plain integer products) split over all cores: large shapes take seconds.
std::vector<int32_t> reference_apmm(const std::vector<int16_t>& W, const std::vector<int16_t>& X, const ApmmShape& s);
std::vector<int32_t> reference_conv(const ConvGeometry& g, const std::vector<int16_t>& W, const std::vector<int16_t>& X);

// What output buffers hold before a checked launch: a word the kernel does not write cannot
// pass the comparison.
inline constexpr uint32_t kPoison = 0xdeadbeefu;

// The words a layer's GPU buffers must hold after the chain: int32 values, int16 pairs (an
// odd count's last half left as the poison's), float32 bits, or packed planes and their
// per-pixel sums. `y` is the int32 output as dims_before (N, C, H, W).
struct ExpectedOutput {
  std::vector<uint32_t> values, sums;
  int distinct = 0;  // packed: distinct quantized values
};
ExpectedOutput expected_output(const Epilogue& e, const EpilogueParams& p, const std::vector<int32_t>& y,
                               const OutputDims& dims_before);
// Random chain parameters that spread y (N, C, H, W) over the quantizer's levels
// (fitted_epilogue_params).
EpilogueParams verify_params(const Epilogue& e, const std::vector<int32_t>& y, const OutputDims& dims, uint64_t seed);
// Counts the words of `got` that differ from `want` into rep (checked, mismatches, first).
void compare_output(const LayerBuffers& got, const ExpectedOutput& want, VerifyReport* rep);

// Random inputs (and chain parameters); timing_launches = 0 skips timing. The timing
// rotates through input_sets sets of other random inputs, each with its own output
// (engine/input_sets.h; 1 to kMaxInputSets), 0 for rotation_sets' count (enough to span 4x
// the L2 cache, 2 to 32), as `apnn bench` and `apnn tune` time. One set stays in L2 where it
// fits: 5-8% faster at 1024x4096x4096 (bench/NOTES.md, session 16).
// timeline: the kernel's per-block phase times over the timed launches (engine/timeline.h;
// needs APNN_TIMELINE and a TMA-core tile, else Error(InvalidInput)).
VerifyReport verify_apmm(Engine& engine, const KernelSpec& spec, const ApmmShape& shape, uint64_t seed,
                         int timing_launches = TimingRule{}.launches, int input_sets = 0, bool timeline = false);
VerifyReport verify_apconv(Engine& engine, const KernelSpec& spec, const ConvShape& shape, uint64_t seed,
                           int timing_launches = TimingRule{}.launches, int input_sets = 0);

}  // namespace apnn
