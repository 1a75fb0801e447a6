// Fills the tile of a spec that has none, for a concrete problem on a target: the recorded
// winner of `apnn tune` (include/apnn/tuning.h) when there is one, else the paper's TLP/CI
// heuristic (spec/kernel_rules.h). A spec with a tile is returned as is.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "apnn/engine.h"
#include "apnn/spec.h"

namespace apnn {

// What the heuristic and the tuning database need to know of the GPU.
struct Target {
  std::string arch, device;
  int sm_count = 0;
  int max_smem = 0;  // opt-in dynamic shared memory per block
};
Target current_target();                         // the current GPU (Error NoDriver/NoDevice without one)
Target nominal_target(const std::string& arch);  // no GPU: the flagship of that arch (sm_90/sm_90a: H100 SXM)

// The problem in GEMM terms (M rows of W, N columns, K bits) and as the tuning key's shape.
struct Problem {
  int64_t M = 0, N = 0, K_bits = 0;
  nlohmann::json shape;
};
Problem apmm_problem(const ApmmShape& s);
Problem conv_problem(const KernelSpec& spec, const ConvShape& s);

// Where a resolved tile came from: the spec, the tuning database, or untuned_tile.
enum class TileSource { Spec, Tuned, Untuned };
const char* tile_source_name(TileSource s);  // "spec" | "tuned" | "untuned"

// Tuned winner (database at TuningDb::default_path()) or heuristic, for `target`.
KernelSpec resolve_tile(const KernelSpec& spec, const Problem& p, const Target& t, TileSource* source = nullptr);
// What a request without a recorded winner gets (what `apnn tune` compares its winner with):
// on sm_90a the halo core for the 3x3 and 1x1 convs it runs faster (untuned_halo_tile), the
// wgmma core's tile for a plain APMM where it fills half a wave and K >= 1024 bits; else the
// paper's heuristic, adjusted on sm_90a where it lands on the wgmma core (APMM with K < 1024
// bits: 512-bit cluster tiles or 64-row cp.async tiles for a plain output, the heuristic's
// tile with warps along N on mma.sync for a chain and for int16 at K <= 256 bits; APConv: one
// warpgroup column for narrow tiles, bk 1024 under a wave; over a wave, tall tiles of 3x3
// convs with 512-bit steps and deeper pipelines, or three blocks per SM where they fill the
// waves better).
// engine/untuned_apmm_tile.cpp and untuned_conv_tile.cpp say which measurements fitted these.
Tile untuned_tile(const KernelSpec& spec, const Problem& p, const Target& t);
// Its two parts: the halo core's tile (templates/conv_sm90a_halo.cuh) for a 3x3 pad-1 or 1x1
// pad-0 APConv of stride 1 or 2 on sm_90a, up to 4 plane pairs, whose size the core runs, whose
// accumulators allow bn 32, and whose tiles of an M tile number at least half the SMs it may
// have (batch 32 and up on the bench's 7x7-14x14 layers); not while APNN_DISABLE_WGMMA is
// set. Else (nullopt) the default cores' tile below.
std::optional<Tile> untuned_halo_tile(const KernelSpec& spec, const Problem& p, const Target& t);
Tile untuned_default_core_tile(const KernelSpec& spec, const Problem& p, const Target& t);
// Its two halves, by op: engine/untuned_apmm_tile.cpp and engine/untuned_conv_tile.cpp.
Tile untuned_apmm_tile(const KernelSpec& spec, const Problem& p, const Target& t);
Tile untuned_conv_tile(const KernelSpec& spec, const Problem& p, const Target& t);
// rules::halo_launch_error for a halo tile's spec and a conv problem on target t.
std::string halo_problem_error(const KernelSpec& spec, const Problem& p, const Target& t);
// The same for the current GPU.
KernelSpec with_tile_for(const KernelSpec& spec, const Problem& p);

// Tiles are validated against the H100's 227 KB; other GPUs allow less (sm_86: 99 KB).
// Throws Error(InvalidInput) naming the tile and the device's limit before any launch.
void check_tile_fits_device(const KernelSpec& canonical);

}  // namespace apnn
