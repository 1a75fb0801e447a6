// Empirical tuning: every legal tile of a spec for one problem on the current GPU,
// compiled in parallel, each checked once against the CPU reference, timed, and the
// winner recorded in the tuning database (include/apnn/tuning.h).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apnn/engine.h"
#include "engine/tile_choice.h"

namespace apnn {

struct TuneCandidate {
  Tile tile;
  double us = 0;        // per-launch time (median of the final rounds for finalists); 0 when it failed
  bool exact = false;   // matched the CPU reference
  bool finalist = false;  // timed in the final rounds (the sweep's fastest and the untuned tile)
  std::string error{};  // why it failed, if it did
};

// What a sweep covers: `threads` parallel NVRTC compiles, and the candidates on the listed
// core families only (rules::kCoreFamilies; empty: every core). The untuned tile is timed
// for the comparison wherever it runs.
struct TuneOptions {
  unsigned threads = 1;
  std::vector<std::string> cores{};
};

struct TuneResult {
  std::string key;                      // the tuning database key
  bool recorded = false;                // the winner went into the database: no slower than the untuned tile
                                        // and than the tile the database held (prior_tile)
  std::vector<TuneCandidate> ranked;    // finalists by their medians, then the sweep's order, then failures
  double heuristic_us = 0;              // the untuned choice, a finalist; 0 if it failed
  std::string heuristic_error;          // why it failed, if it did
  Tile heuristic_tile;
  std::optional<Tile> prior_tile;       // the database's tile for the key before this sweep, timed in its final rounds
  double prior_us = 0;                  // its median there; 0 if it failed or there was none
  double seconds = 0;
  nlohmann::json to_json(size_t top) const;
};

// Every tile that check_kernel_tile accepts and whose launch on `arch`'s core fits in the
// device's shared memory; on sm_90a also the TMA core's (tile.cluster 2, 4, 8) and, for a
// 3x3 pad-1 or 1x1 pad-0 conv of stride 1 or 2, the halo core's.
std::vector<Tile> legal_tiles(const KernelSpec& spec, const std::string& arch, int max_smem);

// The tiles a sweep of `problem` on `target` times: the legal ones (halo tiles where the
// shape fits them) on the listed core families (empty: all), listed before the CPU
// reference so that a filter leaving none fails at once: Error(InvalidInput) then, naming
// the cores and the arch, and for an unknown core name.
std::vector<Tile> tune_candidates(const KernelSpec& spec, const Problem& problem, const Target& target,
                                  const std::vector<std::string>& cores);

// progress(done, total, phase) is called from the calling thread only.
using TuneProgress = std::function<void(size_t, size_t, const char*)>;
// Error(InvalidInput) for a core name outside rules::kCoreFamilies (before any GPU work) or
// when no legal tile of the spec runs on the listed cores for this shape.
TuneResult tune_apmm(Engine& engine, const KernelSpec& spec, const ApmmShape& shape, const TuneOptions& options,
                     const TuneProgress& progress);
TuneResult tune_apconv(Engine& engine, const KernelSpec& spec, const ConvShape& shape, const TuneOptions& options,
                       const TuneProgress& progress);
// The names of `cores` checked against rules::kCoreFamilies: Error(InvalidInput) naming the first unknown one.
void check_core_names(const std::vector<std::string>& cores);

}  // namespace apnn
