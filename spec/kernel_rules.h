// What the APMM kernel family can run: plane-pair accumulator groups, legal
// tiles, and the default tile. Shared by spec validation and the generator.
#pragma once
#include <string>
#include <vector>

#include "apnn/encoding.h"
#include "apnn/spec.h"

namespace apnn::rules {

// Plane pairs (s, t) whose products carry the same weight alpha_s*gamma_t share one
// accumulator set: p+q-1 sets for unsigned x unsigned instead of p*q.
struct PlaneGroups {
  std::vector<std::vector<int>> group_of;  // [s][t]
  std::vector<long long> weight;           // [group]
};
PlaneGroups plane_groups(const OperandFormat& w, const OperandFormat& x);

inline constexpr int kMaxAccumulatorRegs = 128;           // per thread; beyond it the kernel spills
inline constexpr int kMaxSharedBytes = 227 * 1024;        // opt-in dynamic shared memory on sm_80/sm_90
inline constexpr int kMaxThreads = 512;

int accumulator_regs(const Tile& t, int groups);
int shared_bytes(const Tile& t, const OperandFormat& w, const OperandFormat& x);

// Empty string when legal, else the reason, naming the tile field and the allowed values.
std::string check_tile(const Tile& t, const OperandFormat& w, const OperandFormat& x);

// Warp grid for a tile given only bm/bn/bk/stages: the fewest warps (at least 4)
// that keep accumulators within budget. Returns false if none does.
bool choose_warps(Tile* t, const OperandFormat& w, const OperandFormat& x);

Tile default_tile(const OperandFormat& w, const OperandFormat& x);

}  // namespace apnn::rules
