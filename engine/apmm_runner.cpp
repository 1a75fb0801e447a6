#include "engine/apmm_runner.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "apnn/bitplane_layout.h"
#include "apnn/error.h"
#include "engine/tile_choice.h"
#include "generator/generate.h"
#include "runtime/device.h"
#include "runtime/tensor_map.h"
#include "runtime/driver_api.h"
#include "spec/kernel_rules.h"

namespace apnn {

namespace {
// Kernels index in int32 and round M up to a 128-bit packed row: keep that below 2^31.
constexpr int64_t kMaxDim = (int64_t{1} << 31) - 256;
}  // namespace

int64_t apmm_max_k(const KernelSpec& spec) {
  return std::min(kMaxDim / rules::largest_product(spec), rules::max_reduction(spec));
}

void check_apmm_shape(const KernelSpec& spec, const ApmmShape& s) {
  const struct { const char* name; int64_t v; } dims[] = {{"M", s.M}, {"N", s.N}, {"K", s.K}};
  for (const auto& d : dims) {
    if (d.v < 1) throw Error(ErrorKind::InvalidInput, fmt::format("shape: {} must be >= 1, got {}", d.name, d.v));
    if (d.v > kMaxDim) throw Error(ErrorKind::InvalidInput, fmt::format("shape: {}={} exceeds {}", d.name, d.v, kMaxDim));
  }
  // Refuse a K at which |W.X^T| could leave the output's type (int32, or int16 where the spec
  // asks for it) rather than wrap silently.
  if (const int64_t kmax = apmm_max_k(spec); s.K > kmax)
    throw Error(ErrorKind::InvalidInput, fmt::format("shape: K={} can overflow the {} output for {} x {} (|y| up to {}); "
                                                     "K must be <= {}",
                                                     s.K, rules::output_element_name(spec), spec.w.describe(),
                                                     spec.x.describe(), s.K * rules::largest_product(spec), kmax));
}

ApmmRunner::ApmmRunner(std::shared_ptr<Kernel> kernel) : kernel_(std::move(kernel)) {
  check_tile_fits_device(kernel_->compiled.spec);
}

PackedOperand ApmmRunner::pack(const char* entry, int bits, const DeviceBuffer& values, int64_t rows, int64_t K) {
  PackedOperand p;
  p.rows = rows;
  p.K = K;
  p.ld = bitplane_ld_words(K);
  p.planes = DeviceBuffer(static_cast<size_t>(bitplane_words(bits, rows, K)) * 4);
  p.rowsum = DeviceBuffer(static_cast<size_t>(rows) * 4);
  CUdeviceptr src = values.ptr(), planes = p.planes.ptr(), rowsum = p.rowsum.ptr();
  long long r = rows;
  int k = static_cast<int>(K), ld = static_cast<int>(p.ld);
  void* args[] = {&src, &r, &k, &ld, &planes, &rowsum};
  LaunchDims d;
  const int64_t rows_per_block = kPackThreads / 32;
  d.grid_x = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
  d.block_x = kPackThreads;
  kernel_->module->launch(entry, d, args);
  return p;
}

PackedOperand ApmmRunner::pack_w(const DeviceBuffer& values, int64_t rows, int64_t K) {
  return pack(kPackWKernel, kernel_->compiled.spec.w.bits, values, rows, K);
}

PackedOperand ApmmRunner::pack_x(const DeviceBuffer& values, int64_t rows, int64_t K) {
  return pack(kPackXKernel, kernel_->compiled.spec.x.bits, values, rows, K);
}

namespace {

// The TMA core's view of a packed operand: a 3-D tensor of words (ld, rows, planes), read
// in boxes of one K step's words (bk 1024: 32 words, 128 bytes, the 128-byte swizzle; bk
// 512: 16 words, the 64-byte swizzle, as the wgmma descriptors read them) by box_rows rows
// by box_planes planes. Out-of-range boxes read zeros.
CUtensorMap operand_map(const PackedOperand& op, int planes, int bk, unsigned box_rows, unsigned box_planes) {
  const unsigned words = static_cast<unsigned>(bk / 32);
  const TiledMapShape shape{CU_TENSOR_MAP_DATA_TYPE_UINT32,
                            4,
                            3,
                            {static_cast<cuuint64_t>(op.ld), static_cast<cuuint64_t>(op.rows), static_cast<cuuint64_t>(planes)},
                            {words, box_rows, box_planes},
                            bk == 1024 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B};
  return encode_tiled_map(op.planes.ptr(), shape, [&] {
    return fmt::format("operand {} planes x {} rows x {} words, box {}x{}x{}", planes, op.rows, op.ld, box_planes, box_rows,
                       words);
  });
}

// The output (M rows of N, int32 or int16) as a 2-D tensor for the wgmma core's staged bulk
// stores (int16 as uint16: the copy moves bits): boxes of 128-byte rows (32 or 64 columns,
// the 128-byte swizzle) by one warpgroup's 64 rows (apmm_sm90a.cuh's stage_box).
CUtensorMap output_map(const DeviceBuffer& y, int64_t M, int64_t N, int elem_bytes) {
  const bool i16 = elem_bytes == 2;
  const TiledMapShape shape{i16 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_INT32,
                            elem_bytes,
                            2,
                            {static_cast<cuuint64_t>(N), static_cast<cuuint64_t>(M)},
                            {static_cast<cuuint32_t>(128 / elem_bytes), 64},
                            CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_NONE};
  return encode_tiled_map(y.ptr(), shape, [&] { return fmt::format("{} output {} x {}", i16 ? "int16" : "int32", M, N); });
}

}  // namespace

LaunchDims ApmmRunner::gemm_dims(int64_t M, int64_t N) const {
  const KernelSpec& s = kernel_->compiled.spec;
  const Tile& t = *s.tile;
  LaunchDims d;
  d.block_x = rules::block_threads(t, s.w, s.x);
  // The core the module was generated with (not the environment now: APNN_DISABLE_WGMMA).
  const bool wgmma = kernel_->compiled.wgmma_core;
  if (t.cluster > 1) {  // persistent clusters, each block with its producer warp or warpgroup
    const int64_t patches = rules::tma_patches(t, s.w, s.x, M, N);
    if (patches > (int64_t{1} << 28))
      throw Error(ErrorKind::InvalidInput, fmt::format("shape: M={} N={} needs {} patches of {} tiles of {}x{}, above 2^28",
                                                       M, N, patches, t.cluster, t.bm, t.bn));
    d.smem_bytes = static_cast<unsigned>(rules::core_shared_bytes(s, true));
    d.grid_x = static_cast<unsigned>(t.cluster);
    const int64_t resident = std::max(1, kernel_->module->max_active_clusters(kApmmKernel, d));
    d.grid_x = static_cast<unsigned>(t.cluster * std::min(patches, resident));
    d.early_start = true;  // the kernel waits for the previous one before touching memory (gemm_sm90a_tma.cuh)
    return d;
  }
  if (wgmma) {
    const int64_t tiles = ((M + t.bm - 1) / t.bm) * ((N + t.bn - 1) / t.bn);
    if (tiles > (int64_t{1} << 31) - 1)
      throw Error(ErrorKind::InvalidInput, fmt::format("shape: M={} N={} needs {} tiles of {}x{}, above 2^31-1", M, N, tiles,
                                                       t.bm, t.bn));
    d.smem_bytes = static_cast<unsigned>(rules::core_shared_bytes(s, true));
    d.grid_x = kernel_->module->persistent_grid(kApmmKernel, d.block_x, d.smem_bytes, tiles);
    d.early_start = true;  // the kernel waits for the previous one before touching memory (apmm_sm90a.cuh)
    return d;
  }
  d.grid_x = static_cast<unsigned>((M + t.bm - 1) / t.bm);
  d.grid_y = static_cast<unsigned>((N + t.bn - 1) / t.bn);
  if (d.grid_y > 65535)
    throw Error(ErrorKind::InvalidInput, fmt::format("shape: N={} needs {} column tiles of {}, above the grid limit 65535", N,
                                                     d.grid_y, t.bn));
  d.smem_bytes = static_cast<unsigned>(rules::core_shared_bytes(s, false));
  return d;
}

void ApmmRunner::gemm(const PackedOperand& w, const PackedOperand& x, const EpilogueDevice& ep, LayerBuffers& out) {
  if (w.K != x.K)
    throw Error(ErrorKind::InvalidInput, fmt::format("shape: W has K={} but X has K={}", w.K, x.K));
  CUdeviceptr wp = w.planes.ptr(), ws = w.rowsum.ptr(), xp = x.planes.ptr(), xs = x.rowsum.ptr();
  EpilogueKernelArgs epi = ep.args(out);
  int m = static_cast<int>(w.rows), n = static_cast<int>(x.rows), k = static_cast<int>(w.K), ld = static_cast<int>(w.ld);
  const KernelSpec& s = kernel_->compiled.spec;
  const Tile& t = *s.tile;
  const LaunchDims d = gemm_dims(w.rows, x.rows);
  // The most tiles a block runs (a cluster, patches): persistent grids cover the tiles in rounds.
  const int64_t blocks = int64_t{d.grid_x} * d.grid_y / t.cluster;
  const int64_t tiles = t.cluster > 1 ? rules::tma_patches(t, s.w, s.x, w.rows, x.rows)
                                      : ((w.rows + t.bm - 1) / t.bm) * ((x.rows + t.bn - 1) / t.bn);
  prepare_sums(s, w.rows, (tiles + blocks - 1) / blocks, out, epi);
  if (!kernel_->compiled.wgmma_core) {
    void* args[] = {&wp, &ws, &xp, &xs, &epi, &m, &n, &k, &ld};
    kernel_->module->launch(kApmmKernel, d, args);
    return;
  }
  // Both wgmma cores take the output's tensor map for staged bulk stores (in a pipeline slot,
  // or the TMA core's whole-tile staging); those need a row stride of whole 16 bytes, other
  // widths and chains store directly (a chain's output is not the integer tensor the map describes).
  const int out_bytes = rules::output_element_bytes(s);
  int tma_store = s.epilogue.empty() && (n * out_bytes) % 16 == 0 &&
                  (rules::wgmma_stages_output(t, s.w, s.x) || rules::tma_output_staging_bytes(t, s.w, s.x, out_bytes) > 0);
  CUtensorMap ymap{};
  if (tma_store) ymap = output_map(out.values, m, n, out_bytes);
  if (t.cluster == 1) {
    void* args[] = {&wp, &ws, &xp, &xs, &epi, &m, &n, &k, &ld, &ymap, &tma_store};
    kernel_->module->launch(kApmmKernel, d, args);
    return;
  }
  // The TMA core reads the operands through tensor maps, which hold their addresses: encoded
  // for every launch (host work of about a microsecond, against the tens of microseconds this
  // core is chosen for), with boxes as the core loads them: a whole tile of all planes where
  // no peer shares it, else this block's part of one plane.
  const rules::ClusterShape c = rules::cluster_shape(t, s.w, s.x);
  CUtensorMap wmap = operand_map(w, s.w.bits, t.bk, t.bm / c.n, c.n == 1 ? s.w.bits : 1);
  CUtensorMap xmap = operand_map(x, s.x.bits, t.bk, t.bn / c.m, c.m == 1 ? s.x.bits : 1);
  void* args[] = {&wmap, &xmap, &ws, &xs, &epi, &m, &n, &k, &ld, &ymap, &tma_store};
  kernel_->module->launch(kApmmKernel, d, args);
}

}  // namespace apnn
