// The TMA-fed wgmma core's rules (spec/kernel_rules.h): how a cluster shares an operand tile,
// the patches it covers, the output staging beside the pipeline, and what a cluster tile must be.
#include <string>

#include <fmt/format.h>

#include "spec/kernel_rules.h"

namespace apnn::rules {

bool cluster_shares_x(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  return x.bits * t.bn >= w.bits * t.bm;
}

ClusterShape cluster_shape(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  const bool x_larger = cluster_shares_x(t, w, x);
  switch (t.cluster) {
    case 2: return x_larger ? ClusterShape{2, 1} : ClusterShape{1, 2};
    case 4: return {2, 2};
    case 8: return x_larger ? ClusterShape{4, 2} : ClusterShape{2, 4};
    default: return {1, 1};
  }
}

int64_t tma_patches(const Tile& t, const OperandFormat& w, const OperandFormat& x, int64_t M, int64_t N) {
  const ClusterShape c = cluster_shape(t, w, x);
  const int64_t tm = (M + t.bm - 1) / t.bm, tn = (N + t.bn - 1) / t.bn;
  return (tm + c.m - 1) / c.m * ((tn + c.n - 1) / c.n);
}

int tma_output_staging_bytes(const Tile& t, const OperandFormat& w, const OperandFormat& x, int out_bytes) {
  // Whole boxes of 128-byte rows a warpgroup (32 int32 or 64 int16 columns), else plain stores.
  if (t.cluster <= 1 || (t.bn / t.warps_n) % (128 / out_bytes) != 0) return 0;
  auto fits = [&](int bytes) { return wgmma_shared_bytes(t, w, x) + bytes + kTmaBarrierBytes <= kMaxSharedBytes; };
  const int whole = t.bm * t.bn * out_bytes;
  const int boxes = t.warps_m * t.warps_n / 4 * 2 * kTmaStagingBoxBytes;
  return fits(whole) ? whole : (fits(boxes) ? boxes : 0);
}

bool tma_output_staged_whole(const Tile& t, const OperandFormat& w, const OperandFormat& x, int out_bytes) {
  return tma_output_staging_bytes(t, w, x, out_bytes) == t.bm * t.bn * out_bytes;
}

int tma_shared_bytes(const Tile& t, const OperandFormat& w, const OperandFormat& x, int out_bytes) {
  return wgmma_shared_bytes(t, w, x) + tma_output_staging_bytes(t, w, x, out_bytes) + kTmaBarrierBytes;
}

int tma_spec_output_staging_bytes(const Tile& t, const KernelSpec& spec) {
  return spec.epilogue.empty() ? tma_output_staging_bytes(t, spec.w, spec.x, output_element_bytes(spec)) : 0;
}

int tma_spec_shared_bytes(const Tile& t, const KernelSpec& spec) {
  return wgmma_shared_bytes(t, spec.w, spec.x) + tma_spec_output_staging_bytes(t, spec) + kTmaBarrierBytes +
         apmm_code_staging_bytes(t, spec.epilogue);
}

std::string tma_tile_error(const Tile& t, const KernelSpec& spec) {
  if (t.cluster == 1) return {};
  const std::string field = fmt::format("tile.cluster {}", t.cluster);
  if (spec.op != Op::Apmm) return field + " (the TMA core) is for op apmm only";
  if (t.bk != 1024 && t.bk != 512)
    return fmt::format("{} needs bk 1024 or 512 (one 128- or 64-byte TMA row per operand row), got {}", field, t.bk);
  if (std::string why = wgmma_tile_error(t, spec.w, spec.x); !why.empty()) return field + ": " + why;
  const ClusterShape c = cluster_shape(t, spec.w, spec.x);
  if (t.bm % (8 * c.n) != 0)
    return fmt::format("{} multicasts 1/{} of the W tile, which must be whole 8-row atoms: bm must be a multiple of {}, "
                       "got {}",
                       field, c.n, 8 * c.n, t.bm);
  if (t.bn % (8 * c.m) != 0)
    return fmt::format("{} multicasts 1/{} of the X tile, which must be whole 8-row atoms: bn must be a multiple of {}, "
                       "got {}",
                       field, c.m, 8 * c.m, t.bn);
  if (const int threads = block_threads(t, spec.w, spec.x); threads > kMaxThreads)
    return fmt::format("{} adds producer warps: {} warps exceed {} threads per block", field, threads / 32, kMaxThreads);
  if (const int bytes = tma_spec_shared_bytes(t, spec); bytes > kMaxSharedBytes)
    return fmt::format("{}: tile needs {} bytes of shared memory with alignment and barriers, limit {}", field, bytes,
                       kMaxSharedBytes);
  return {};
}

}  // namespace apnn::rules
