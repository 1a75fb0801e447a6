#include "spec/kernel_rules.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace apnn::rules {

int PlaneGroups::mmas() const {
  int n = 0;
  for (const auto& row : repeat)
    for (int r : row) n += r;
  return n;
}

// Sets in order of first appearance, one per key of a pair's weight (the weight itself, or
// its sign); a set's weight is its pairs' smallest magnitude, and each pair repeats weight /
// set weight times (plane weights are signed powers of two: whole multiples).
static PlaneGroups group_pairs(const OperandFormat& w, const OperandFormat& x, bool by_sign) {
  PlaneGroups g;
  std::map<long long, int> index;
  g.group_of.assign(w.bits, std::vector<int>(x.bits, 0));
  g.repeat.assign(w.bits, std::vector<int>(x.bits, 1));
  for (int s = 0; s < w.bits; ++s)
    for (int t = 0; t < x.bits; ++t) {
      const long long wt = w.plane_weight(s) * x.plane_weight(t);
      const long long key = by_sign ? (wt < 0 ? -1 : 1) : wt;
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, static_cast<int>(g.weight.size())).first;
        g.weight.push_back(wt);
      } else if (std::llabs(wt) < std::llabs(g.weight[it->second])) {
        g.weight[it->second] = wt;
      }
      g.group_of[s][t] = it->second;
    }
  for (int s = 0; s < w.bits; ++s)
    for (int t = 0; t < x.bits; ++t)
      g.repeat[s][t] = static_cast<int>(w.plane_weight(s) * x.plane_weight(t) / g.weight[g.group_of[s][t]]);
  return g;
}

PlaneGroups plane_groups(const OperandFormat& w, const OperandFormat& x) { return group_pairs(w, x, false); }

PlaneGroups merged_plane_groups(const OperandFormat& w, const OperandFormat& x) {
  const PlaneGroups exact = plane_groups(w, x);
  const PlaneGroups g = group_pairs(w, x, true);
  const bool fewer = g.weight.size() < exact.weight.size();
  return fewer && 2 * g.mmas() <= 3 * exact.mmas() ? g : exact;
}

PlaneGroups pair_groups(const OperandFormat& w, const OperandFormat& x) {
  PlaneGroups g;
  g.group_of.assign(w.bits, std::vector<int>(x.bits, 0));
  g.repeat.assign(w.bits, std::vector<int>(x.bits, 1));
  for (int s = 0; s < w.bits; ++s)
    for (int t = 0; t < x.bits; ++t) {
      g.group_of[s][t] = s * x.bits + t;
      g.weight.push_back(w.plane_weight(s) * x.plane_weight(t));
    }
  return g;
}

static bool wgmma_has_n(int n) { return n == 8 || n == 16 || n == 24 || (n % 16 == 0 && n <= 256); }

// folds_sets, with the exact sets (plane_groups) at hand. The stacked pairs kernel_plane_groups
// may hold instead need not enter: they fit only in kMaxAccumulatorRegs (128).
static bool folds_exact_sets(const Tile& t, const OperandFormat& w, const OperandFormat& x, const PlaneGroups& exact) {
  const int q = x.bits;
  if (t.halo || t.cluster < 2 || t.warps_m != 8 || t.warps_n != 1 || q < 2 || !wgmma_has_n(q * t.bn) ||
      accumulator_regs(t, q + 1) > kTmaMaxAccumulatorRegs)
    return false;
  const int regs = accumulator_regs(t, static_cast<int>(exact.weight.size()));
  return regs > kTmaMaxAccumulatorRegs ||
         (regs > kTmaFoldAboveRegs && t.bn <= 64 && wgmma_x_stack(t, w, x, exact) == 1);
}

bool folds_sets(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  return folds_exact_sets(t, w, x, plane_groups(w, x));
}

// The most sets a tile's kernel holds: q + 1 where it folds them (folds_sets), else
// plane_groups' (kernel_plane_groups takes those or fewer).
static int held_sets(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  const PlaneGroups exact = plane_groups(w, x);
  return folds_exact_sets(t, w, x, exact) ? x.bits + 1 : static_cast<int>(exact.weight.size());
}

// One result set of weight 1 for folded tiles (the pairs' weights apply as they fold).
static PlaneGroups folded_groups(const OperandFormat& w, const OperandFormat& x) {
  PlaneGroups g;
  g.group_of.assign(w.bits, std::vector<int>(x.bits, 0));
  g.repeat.assign(w.bits, std::vector<int>(x.bits, 1));
  g.weight = {1};
  g.folded = true;
  return g;
}

int wgmma_x_stack(const Tile& t, const OperandFormat& w, const OperandFormat& x, const PlaneGroups& g) {
  if (g.folded) return x.bits;  // a W plane's q sets are one temporary
  if (t.warps_n != 1 || (w.bits < 2 && t.cluster > 1)) return 1;
  for (int s = 0; s < w.bits; ++s)
    for (int u = 0; u < x.bits; ++u)
      if (g.group_of[s][u] != s * x.bits + u || g.repeat[s][u] != 1) return 1;
  for (int d = x.bits; d > 1; --d)
    if (x.bits % d == 0 && wgmma_has_n(d * t.bn)) return d;
  return 1;
}

PlaneGroups kernel_plane_groups(const KernelSpec& spec, const std::string& arch) {
  const PlaneGroups exact = plane_groups(spec.w, spec.x);
  if (!spec.tile || !use_wgmma(spec, arch)) return exact;
  const Tile& t = *spec.tile;
  // The halo core's blocks are one an SM: nothing to gain from merged sets. (For 1x1 kernels,
  // whose combine was a quarter of the instructions, merged sets ran even with int32 output
  // and 7-11% slower with int16: bench/NOTES.md, session 33 call 3.)
  if (t.halo) return exact;
  if (spec.op == Op::Apmm) {
    if (folds_exact_sets(t, spec.w, spec.x, exact)) return folded_groups(spec.w, spec.x);
    if (wgmma_x_stack(t, spec.w, spec.x, exact) > 1) return exact;
    const PlaneGroups pairs = pair_groups(spec.w, spec.x);
    const bool fits =
        accumulator_regs(t, static_cast<int>(pairs.weight.size())) <= accumulator_limit(block_threads(t, spec.w, spec.x));
    return fits && wgmma_x_stack(t, spec.w, spec.x, pairs) > 1 ? pairs : exact;
  }
  const PlaneGroups merged = merged_plane_groups(spec.w, spec.x);
  return conv_blocks_per_sm(spec, arch, merged) > conv_blocks_per_sm(spec, arch, exact) ? merged : exact;
}

int conv_smem_blocks(const KernelSpec& spec, const std::string& arch) {
  // An SM has the opt-in maximum plus 1 KB, and each block reserves 1 KB.
  return (kMaxSharedBytes + 1024) / (launch_shared_bytes(spec, arch) + 1024);
}

int conv_blocks_per_sm(const KernelSpec& spec, const std::string& arch, const PlaneGroups& groups) {
  return std::min(conv_smem_blocks(spec, arch), conv_min_blocks(spec, arch, static_cast<int>(groups.weight.size())));
}

int tma_producer_warps(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  if (t.cluster <= 1) return 0;
  // Every launch asks (apmm_runner.cpp): build the groups only where even p*q sets would
  // not fit, as for the wide tiles.
  if (t.warps_m * t.warps_n != 8 || accumulator_regs(t, w.bits * x.bits) <= kMaxAccumulatorRegs) return 1;
  const int regs = accumulator_regs(t, held_sets(t, w, x));
  if (regs > kMaxAccumulatorRegs) return 4;
  // Merged sets (fewer than the plane pairs, so a wgmma per X plane) spilled above
  // kTmaOneWarpUnstackedRegs at 168 registers; folded sets stack (a W plane's q sets are one
  // wgmma) and did not.
  return regs > kTmaOneWarpUnstackedRegs && !folds_sets(t, w, x) ? 4 : 1;
}

int block_threads(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  if (t.halo) return kHaloThreads;
  return 32 * (t.warps_m * t.warps_n + tma_producer_warps(t, w, x));
}

int accumulator_regs(const Tile& t, int groups) {
  return groups * (t.bm / t.warps_m / 16) * (t.bn / t.warps_n / 8) * 4;
}

int conv_min_blocks(const KernelSpec& spec, const std::string& arch, int groups) {
  const Tile& t = *spec.tile;
  const int threads = 32 * t.warps_m * t.warps_n;  // no cluster: no producer
  const int regs = accumulator_regs(t, groups);
  if (conv_three_blocks(spec, arch, regs)) return 3;
  return threads <= 256 && regs <= 64 ? 2 : 1;
}

bool conv_three_blocks(const KernelSpec& spec, const std::string& arch, int accumulator_registers) {
  // Three 256-thread blocks leave 80 registers a thread (85 rounded down to the allocation
  // unit of 8). Only the kernel measured fits them without spills: w1 x a2 with unsigned
  // activations (merged sets, 32 accumulators), 8x1 warps, 4 stages of 512 bits: 80
  // registers, no spills. ptxas spilled at this bound with pm1 activations (their correction
  // terms), with 2-3 stages, and for other precisions (session 24's review). apnn verify, w1a2
  // batch 128 (session 24, device call 4): 392 tiles of 128x64 run one wave of three rather
  // than 1.48 of two, 7x7x512 17.43 -> 16.81 us and 14x14x256-o512 3x3/2 14.13 -> 13.69 (6
  // stages of two blocks against 4 of three); with 784 tiles, in two waves rather than three,
  // 28x28x128-o256 3x3/2 24.62 -> 30.19 (engine/untuned_conv_tile.cpp takes three only where they
  // fill the waves better). Fused chains hold more registers and keep two.
  const Tile& t = *spec.tile;
  return spec.op == Op::Apconv && spec.epilogue.empty() && spec.w.bits == 1 && spec.x.bits == 2 &&
         spec.x.enc == Encoding::Unsigned && t.warps_m == 8 && t.warps_n == 1 && t.bk == 512 && t.stages == 4 &&
         accumulator_registers <= 32 && use_wgmma(spec, arch) && conv_smem_blocks(spec, arch) >= 3;
}

int shared_bytes(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  return t.stages * (w.bits * t.bm + x.bits * t.bn) * (t.bk / 8);
}

static bool one_of(int v, std::initializer_list<int> allowed) {
  return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
}

std::string check_tile(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  if (t.halo) return halo_tile_error(t, w, x);
  if (!one_of(t.bm, {16, 32, 64, 128, 256})) return fmt::format("tile.bm must be one of 16, 32, 64, 128, 256, got {}", t.bm);
  if (!one_of(t.bn, {8, 16, 32, 64, 128, 256}) && !(t.cluster > 1 && one_of(t.bn, {96, 192})))
    return fmt::format("tile.bn must be one of 8, 16, 32, 64, 128, 256 (96 and 192 with a cluster: the TMA core), got {}",
                       t.bn);
  if (!one_of(t.bk, {256, 512, 1024}))
    return fmt::format("tile.bk must be one of 256, 512, 1024 (bits of K per step; the binary MMA consumes 256), got {}", t.bk);
  if (t.stages < 2 || t.stages > 8) return fmt::format("tile.stages must be 2..8, got {}", t.stages);
  if (!one_of(t.warps_m, {1, 2, 4, 8})) return fmt::format("tile.warps_m must be one of 1, 2, 4, 8, got {}", t.warps_m);
  if (!one_of(t.warps_n, {1, 2, 4, 8})) return fmt::format("tile.warps_n must be one of 1, 2, 4, 8, got {}", t.warps_n);
  if (!one_of(t.cluster, {1, 2, 4, 8})) return fmt::format("tile.cluster must be one of 1, 2, 4, 8, got {}", t.cluster);
  if (t.warps_m * t.warps_n * 32 > kMaxThreads)
    return fmt::format("tile.warps_m*warps_n = {} warps exceeds {} threads per block", t.warps_m * t.warps_n, kMaxThreads);
  if (t.bm % (16 * t.warps_m) != 0)
    return fmt::format("tile.bm={} does not divide into warps_m={} warp tiles of 16 rows", t.bm, t.warps_m);
  if (t.bn % (8 * t.warps_n) != 0)
    return fmt::format("tile.bn={} does not divide into warps_n={} warp tiles of 8 columns", t.bn, t.warps_n);
  const int groups = held_sets(t, w, x);
  const int regs = accumulator_regs(t, groups);
  const int limit = t.cluster > 1 ? kTmaMaxAccumulatorRegs : accumulator_limit(32 * t.warps_m * t.warps_n);
  if (regs > limit)
    return fmt::format("tile bm={} bn={} with {}x{} warps needs {} accumulator registers per thread for w{}a{} ({} weight groups), "
                       "limit {}{}",
                       t.bm, t.bn, t.warps_m, t.warps_n, regs, w.bits, x.bits, groups, limit,
                       t.cluster > 1 ? " on the TMA core: use a smaller tile" : ": use a smaller tile or more warps");
  const int smem = shared_bytes(t, w, x);
  if (smem > kMaxSharedBytes)
    return fmt::format("tile needs {} bytes of shared memory for w{}a{} (stages*(p*bm+q*bn)*bk/8), limit {}: use a smaller bk, "
                       "tile or fewer stages",
                       smem, w.bits, x.bits, kMaxSharedBytes);
  return {};
}

bool choose_warps(Tile* t, const OperandFormat& w, const OperandFormat& x) {
  // Fewest warps first (at least 4 to hide latency); among equal counts, square-ish warp tiles
  // (more MMAs per fragment load).
  // Tiles too small for 4 warps fall back to 2 or 1.
  static const int grids[][2] = {{2, 2}, {1, 4}, {4, 1}, {2, 4}, {4, 2}, {1, 8}, {8, 1}, {4, 4},
                                 {2, 8}, {8, 2}, {1, 2}, {2, 1}, {1, 1}};
  for (const auto& gr : grids) {
    Tile c = *t;
    c.warps_m = gr[0];
    c.warps_n = gr[1];
    if (check_tile(c, w, x).empty()) {
      *t = c;
      return true;
    }
  }
  return false;
}

Tile default_tile(const OperandFormat& w, const OperandFormat& x) {
  KernelSpec plain;
  plain.w = w;
  plain.x = x;
  return default_tile(plain);
}

int staging_bytes(const Tile& t, const Epilogue& e) { return e.staged() ? t.bn * (t.bm + 4) * 4 : 0; }

// APConv's column table: 16 bytes per tile column (ConvColumn in templates/conv_sm80.cuh).
static int conv_table_bytes(const Tile& t, const KernelSpec& spec) { return spec.op == Op::Apconv ? t.bn * 16 : 0; }

int kernel_shared_bytes(const Tile& t, const KernelSpec& spec) {
  return std::max(shared_bytes(t, spec.w, spec.x), staging_bytes(t, spec.epilogue)) + conv_table_bytes(t, spec);
}

std::string check_epilogue_tile(const Tile& t, const KernelSpec& spec) {
  const Epilogue& e = spec.epilogue;
  // A block's packed words must fall inside one 128-channel row group of the output layout:
  // with bm = 256 the last block of O = 70 would own words 4..7 of a 4-word row.
  if (e.quantize() && (t.bm % 32 != 0 || t.bm > 128))
    return fmt::format("tile.bm must be 32, 64 or 128 with a quantize epilogue (each packed word holds 32 output "
                       "channels, a packed row 128), got {}",
                       t.bm);
  if (const EpilogueOp* pool = e.pool(); pool && t.bn < pool->size * pool->size)
    return fmt::format("tile.bn must hold a whole {}x{} pooling window ({} columns) with a pool epilogue, got {}", pool->size,
                       pool->size, pool->size * pool->size, t.bn);
  if (const int smem = kernel_shared_bytes(t, spec); smem > kMaxSharedBytes)
    return fmt::format("tile needs {} bytes of shared memory with the epilogue's staging (bn*(bm+4)*4) and conv column "
                       "table (bn*16), limit {}: use a smaller tile",
                       smem, kMaxSharedBytes);
  return {};
}

std::string check_kernel_tile(const Tile& t, const KernelSpec& spec) {
  if (t.halo) return halo_kernel_error(t, spec);
  if (std::string why = check_tile(t, spec.w, spec.x); !why.empty()) return why;
  if (std::string why = tma_tile_error(t, spec); !why.empty()) return why;
  return check_epilogue_tile(t, spec);
}

Tile default_tile(const KernelSpec& spec) {
  const OperandFormat& w = spec.w;
  const OperandFormat& x = spec.x;
  // Shape-independent default; shrink bk, then the tile, until it is legal.
  for (int bm : {64, 32})
    for (int bn : {64, 32})
      for (int bk : {512, 256}) {
        Tile t;
        t.bm = bm;
        t.bn = bn;
        t.bk = bk;
        t.stages = 3;
        if (choose_warps(&t, w, x) && check_epilogue_tile(t, spec).empty()) return t;
      }
  if (!spec.epilogue.empty())  // a chain may need bm >= 32 and bn >= 9: the smallest such tiles
    for (int bn : {16, 8}) {
      Tile t;
      t.bm = 32;
      t.bn = bn;
      t.bk = 256;
      t.stages = 2;
      if (choose_warps(&t, w, x) && check_epilogue_tile(t, spec).empty()) return t;
    }
  Tile t;  // 16x16 fits every precision (at most 32 groups x 8 registers with 1x2 warps)
  t.bm = 16;
  t.bn = 16;
  t.bk = 256;
  t.stages = 2;
  t.warps_m = 1;
  t.warps_n = 2;
  return t;
}

std::string wgmma_tile_error(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  if (std::string why = check_tile(t, w, x); !why.empty()) return why;
  if (t.warps_m % 4 != 0 || t.bm != 16 * t.warps_m)
    return fmt::format("wgmma core: warps_m must be a multiple of 4 and bm == 16*warps_m, got bm={} warps_m={}", t.bm,
                       t.warps_m);
  const int wn = t.bn / t.warps_n;
  if (!one_of(wn, {8, 16, 32, 64, 96, 128, 192, 256}))
    return fmt::format("wgmma core: bn/warps_n must be a wgmma N of 8, 16, 32, 64, 96, 128, 192 or 256, got {}", wn);
  if (wgmma_shared_bytes(t, w, x) > kMaxSharedBytes)
    return fmt::format("wgmma core: tile needs {} bytes of shared memory with alignment, limit {}",
                       wgmma_shared_bytes(t, w, x), kMaxSharedBytes);
  return {};
}

int wgmma_shared_bytes(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  return shared_bytes(t, w, x) + kWgmmaSmemSlack;
}

// The wgmma core's launch: its aligned pipeline, or an APConv chain's staging if larger
// (it reuses the pipeline's buffers), plus the column table. An APMM quantize chain stages
// its codes beside the pipeline (apmm_code_staging_bytes), which a persistent block keeps
// filling with its next tile.
static int wgmma_core_bytes(const Tile& t, const KernelSpec& spec) {
  if (spec.op == Op::Apmm) return wgmma_shared_bytes(t, spec.w, spec.x) + apmm_code_staging_bytes(t, spec.epilogue);
  return std::max(wgmma_shared_bytes(t, spec.w, spec.x), staging_bytes(t, spec.epilogue)) + conv_table_bytes(t, spec);
}

int apmm_code_staging_bytes(const Tile& t, const Epilogue& e) { return e.quantize() ? t.bn * (t.bm + 16) : 0; }

SumsPath quantize_sums_path(const KernelSpec& spec, int64_t O, int64_t tiles_per_block) {
  if (!spec.epilogue.quantize()) return SumsPath::None;
  if (!spec.tile) return SumsPath::ZeroedFirst;
  // The halo core's readout has several threads a pixel (never Stored); it settles each add
  // under its next tile's mainloop (session 44). It takes no pool.
  if (spec.tile->halo) return SumsPath::Scratch;
  // pooled_store adds a pixel's sum per 32-row chunk (never Stored); its blocks run one tile
  // (staged conv chains are not persistent: conv_persistent), so the last line's scratch.
  if (O <= spec.tile->bm && !spec.epilogue.pool()) return SumsPath::Stored;
  // APMM's cp.async wgmma core defers its adds too (templates/apmm_sm90a.cuh); a grid of one
  // tile a block (mma.sync, convs) settles them at once, and so does the TMA core (clusters).
  if (spec.op == Op::Apmm && spec.tile->cluster <= 1) return SumsPath::Scratch;
  return tiles_per_block <= kScratchTilesPerBlock ? SumsPath::Scratch : SumsPath::ZeroedFirst;
}

bool wgmma_disabled_by_env() {
  const char* off = std::getenv("APNN_DISABLE_WGMMA");
  return off && *off && std::strcmp(off, "0") != 0;
}

bool use_wgmma(const KernelSpec& spec, const std::string& arch) {
  if (arch != "sm_90a" || !spec.tile) return false;
  // A wgmma core without an mma.sync form: only an explicit tile takes it while
  // APNN_DISABLE_WGMMA is set (the untuned choice and apnn tune then leave it out).
  if (spec.tile->halo) return true;
  if (wgmma_disabled_by_env()) return false;
  const Tile& t = *spec.tile;
  return wgmma_tile_error(t, spec.w, spec.x).empty() && wgmma_core_bytes(t, spec) <= kMaxSharedBytes;
}

std::string core_family(const KernelSpec& spec, const std::string& arch) {
  if (!use_wgmma(spec, arch)) return "mma.sync";
  return spec.tile->halo ? "wgmma-halo" : spec.tile->cluster > 1 ? "wgmma-tma" : "wgmma";
}

// Measured on the bench's batch-8 and batch-128 ResNet-18 layers (bench/NOTES.md, session
// 9, device calls 1-3): a persistent grid for every precision made w2a8 1.1-1.7x faster
// (its 16 plane pairs take small tiles, many per SM) but w1a2 0.76-1.05x and w2a2 / w1a4
// about even, so only the heavy precisions take it. Staged chains write their output
// through the pipeline's buffers, which a next tile would be loading.
bool conv_persistent(const KernelSpec& spec) {
  return spec.op == Op::Apconv && !spec.epilogue.staged() && spec.w.bits * spec.x.bits >= 8;
}

bool choose_wgmma_warps(Tile* t, const OperandFormat& w, const OperandFormat& x) {
  for (int wn : {1, 2, 4, 8}) {
    Tile c = *t;
    c.warps_m = c.bm / 16;
    c.warps_n = wn;
    if (wgmma_tile_error(c, w, x).empty()) {
      *t = c;
      return true;
    }
  }
  return false;
}

int core_shared_bytes(const KernelSpec& spec, bool wgmma_core) {
  const Tile& t = *spec.tile;
  if (t.halo) return static_cast<int>(halo_shared_bytes(spec, 0, HaloGeometry{}));  // without W and stages: they need C
  if (t.cluster > 1) return tma_spec_shared_bytes(t, spec);
  return wgmma_core ? wgmma_core_bytes(t, spec) : kernel_shared_bytes(t, spec);
}

bool wgmma_stages_output(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  const int warpgroups = t.warps_m * t.warps_n / 4;
  return t.bn / t.warps_n == 256 && shared_bytes(t, w, x) / t.stages >= warpgroups * 2 * 64 * 128;
}

int output_element_bytes(const KernelSpec& spec) { return spec.epilogue.int16_out ? 2 : 4; }

const char* output_element_name(const KernelSpec& spec) { return spec.epilogue.int16_out ? "int16" : "int32"; }

int64_t largest_product(const KernelSpec& spec) {
  const int64_t wmax = std::max(std::llabs(spec.w.min_value()), std::llabs(spec.w.max_value()));
  const int64_t xmax = std::max(std::llabs(spec.x.min_value()), std::llabs(spec.x.max_value()));
  return wmax * xmax;
}

int64_t output_limit(const KernelSpec& spec) { return spec.epilogue.int16_out ? 32767 : (int64_t{1} << 31) - 1; }

int64_t max_reduction(const KernelSpec& spec) { return output_limit(spec) / largest_product(spec); }

std::string output_error(const KernelSpec& spec) {
  if (!spec.epilogue.int16_out) return {};
  if (!spec.epilogue.empty())
    return "field 'output' \"int16\" needs a spec without an epilogue chain (a chain sets its own output)";
  if (const int64_t p = largest_product(spec); p > output_limit(spec))
    return fmt::format("field 'output' \"int16\" cannot hold one product of {} x {} (|w*x| up to {})", spec.w.describe(),
                       spec.x.describe(), p);
  return {};
}

bool launchable(const KernelSpec& spec, const std::string& arch, int max_smem) {
  const Tile& t = *spec.tile;
  return check_kernel_tile(t, spec).empty() && (t.cluster == 1 || use_wgmma(spec, arch)) &&
         (!t.halo || arch == "sm_90a") && launch_shared_bytes(spec, arch) <= max_smem;
}

int launch_shared_bytes(const KernelSpec& spec, const std::string& arch) {
  return core_shared_bytes(spec, use_wgmma(spec, arch));
}

bool wgmma_tile(Tile* out, const OperandFormat& w, const OperandFormat& x) {
  const int groups = static_cast<int>(plane_groups(w, x).weight.size());
  int wn = 256;
  while (wn > 8 && groups * wn / 2 > accumulator_limit(256)) wn /= 2;
  static const int steps[][2] = {{1024, 4}, {1024, 3}, {512, 4}, {512, 3}, {256, 4}, {256, 3}, {256, 2}};
  for (const auto& st : steps) {
    Tile t;
    t.bm = 128;
    t.bn = wn;
    t.bk = st[0];
    t.stages = st[1];
    t.warps_m = 8;
    t.warps_n = 1;
    if (wgmma_tile_error(t, w, x).empty()) {
      *out = t;
      return true;
    }
  }
  return false;
}

}  // namespace apnn::rules

namespace apnn::rules {

Tile heuristic_tile(const OperandFormat& w, const OperandFormat& x, int64_t M, int64_t N, int64_t K_bits,
                    int64_t tlp_threshold, int max_smem) {
  KernelSpec plain;
  plain.w = w;
  plain.x = x;
  return heuristic_tile(plain, M, N, K_bits, tlp_threshold, max_smem);
}

Tile heuristic_tile(const KernelSpec& spec, int64_t M, int64_t N, int64_t K_bits, int64_t wave, int max_smem) {
  const OperandFormat& w = spec.w;
  const OperandFormat& x = spec.x;
  // The M side first: 4 warps of 16 rows (8 from M > 512), no taller than M needs.
  int bm_top = M > 512 ? 128 : 64;
  while (bm_top > 16 && bm_top / 2 >= M) bm_top /= 2;
  // The widest K step whose padding adds at most a quarter to K (conv's 9 x 128-bit rows:
  // 1152 bits run as 5 steps of 256, not 2 of 1024).
  int bk = 256;
  for (int step : {1024, 512})
    if ((K_bits + step - 1) / step * step * 4 <= K_bits * 5) {
      bk = step;
      break;
    }
  // Warps stacked along M, 16 rows each; along N one warp for bn 8, two for 16, and for
  // wider tiles 16 columns a warp up to 8 warps in all. Where the accumulators do not fit
  // that grid, choose_warps's.
  auto make = [&](int bm, int bn, Tile* out) {
    for (int stages : {3, 2}) {
      Tile t;
      t.bm = bm;
      t.bn = bn;
      t.bk = bk;
      t.stages = stages;
      t.warps_m = std::min(8, bm / 16);
      t.warps_n = bn <= 16 ? bn / 8 : std::max(1, std::min(bn / 16, 8 / t.warps_m));
      if (!check_tile(t, w, x).empty() && !choose_warps(&t, w, x)) continue;
      if (check_kernel_tile(t, spec).empty() && kernel_shared_bytes(t, spec) <= max_smem) {
        *out = t;
        return true;
      }
    }
    return false;
  };
  const int64_t enough = std::max<int64_t>(1, wave * 9 / 10);  // a wave, its last blocks may be short
  for (int bm = bm_top; bm >= 16; bm /= 2) {
    Tile best, most_parallel;
    bool any = false, filled = false;
    for (int bn : {8, 16, 32, 64, 128}) {  // ascending: the last that fills a wave is the widest
      Tile t;
      if (!make(bm, bn, &t)) continue;
      if (!any) most_parallel = t;
      any = true;
      if (((M + bm - 1) / bm) * ((N + bn - 1) / bn) >= enough) {
        best = t;
        filled = true;
      }
    }
    if (any) return filled ? best : most_parallel;
  }
  return default_tile(spec);
}

}  // namespace apnn::rules
