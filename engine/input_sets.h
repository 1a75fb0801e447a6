// Input sets for timing a kernel: several packed copies of random operands, each a slice of
// one random draw at a different offset (distinct data, never all zeros), with an output
// per set. Timing cycles through them (runtime/steady_timing.h, rotation_sets) so that the
// L2 cache holds none between two uses of one; `apnn bench` and `apnn tune` time the same
// way. Set 0 reads the draw from element 0: its CPU reference uses the draw's prefix.
// The packed layout does not depend on the tile, so any module of the spec packs the sets
// and every tile of the spec can run on them.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/apmm_runner.h"
#include "engine/conv_runner.h"

namespace apnn {

struct ApmmInputSets {
  // sets: how many (at most kMaxSets); 0 picks rotation_sets for the device's L2.
  ApmmInputSets(ApmmRunner& packer, const KernelSpec& spec, const ApmmShape& s, int sets, uint64_t seed);
  int sets() const { return static_cast<int>(w.size()); }
  std::vector<int16_t> W, X;  // the draws (set i: from element i * kInputSetShift)
  std::vector<PackedOperand> w, x;
  std::vector<LayerBuffers> y;  // through the spec's chain
};

struct ConvInputSets {
  ConvInputSets(ConvRunner& packer, const KernelSpec& spec, const ConvGeometry& g, int sets, uint64_t seed);
  int sets() const { return static_cast<int>(w.size()); }
  std::vector<int16_t> W, X;
  std::vector<PackedConvWeights> w;
  std::vector<PackedConvActivations> x;
  std::vector<LayerBuffers> y;
};

constexpr size_t kInputSetShift = 1031;  // elements between the starts of two sets
constexpr int kMaxInputSets = 32;

}  // namespace apnn
