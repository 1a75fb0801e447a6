#include "engine/conv_runner.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "apnn/epilogue_reference.h"
#include "apnn/error.h"
#include "engine/fast_div.h"
#include "engine/tile_choice.h"
#include "generator/generate.h"
#include "runtime/device.h"
#include "runtime/driver_api.h"
#include "runtime/tensor_map.h"
#include "spec/kernel_rules.h"

namespace apnn {

namespace {

unsigned blocks(int64_t items, int64_t per_block) { return static_cast<unsigned>((items + per_block - 1) / per_block); }

// Mirrors apnn::ConvDivisors of templates/conv_sm80.cuh, passed by value to the conv kernel.
struct ConvKernelDivisors {
  FastDivArgs howo, wo, out_hw, wp, cw, tiles_m;
};
static_assert(sizeof(ConvKernelDivisors) == 48, "six FastDivs of two u32");
// Mirrors apnn::HaloGeometry of templates/conv_sm90a_halo.cuh: the rules' five ints, then
// the multiply-shift of a division by row_tiles (a tile's image).
struct HaloKernelGeometry {
  rules::HaloGeometry geo;
  FastDivArgs image_of_tile;
};
static_assert(sizeof(rules::HaloGeometry) == 20, "pw, rows, row_tiles, box_rows, slot_bytes");
static_assert(sizeof(HaloKernelGeometry) == 28, "five ints and a FastDiv of two u32");

// The halo core's view of the packed planes (conv_layout.h) as byte tensors
// (templates/conv_sm90a_halo.cuh), both in boxes of rules::halo_row_bytes(C) rows (one or two
// k256 slices in the swizzle of that span, row_swizzle; one 16-byte chunk not swizzled).
// W: {C/8 bytes, Kh*Kw positions, O, p}, boxes of a row x one position x 128 rows (rows past O
// read zeros). X: {C/8 bytes, W, H, N*q planes}, boxes of a row x the grid's columns x the
// box's rows, every `stride`-th pixel (element strides), from column -1 (padding reads zeros;
// column 0 for a 1x1 kernel): the wgmmas read it shifted by whole rows.
// A box row's swizzle: the span of one row (64 or 32 bytes), none for 16.
CUtensorMapSwizzle row_swizzle(int row_bytes) {
  return row_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : row_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
}

// The plain output (N, O, Ho*Wo) as the halo core stores it: a warpgroup's 64 channels x one
// tile's rows*Wo pixels a box, dense in shared memory.
CUtensorMap halo_output_tensor_map(const DeviceBuffer& y, const KernelSpec& s, const ConvGeometry& g,
                                   const rules::HaloGeometry& geo) {
  const int elem = rules::output_element_bytes(s);
  const TiledMapShape shape{elem == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_INT32,
                            elem,
                            3,
                            {static_cast<cuuint64_t>(g.Ho() * g.Wo()), static_cast<cuuint64_t>(g.O), static_cast<cuuint64_t>(g.N)},
                            {static_cast<cuuint32_t>(geo.rows * g.Wo()), 64, 1},
                            CU_TENSOR_MAP_SWIZZLE_NONE,
                            CU_TENSOR_MAP_L2_PROMOTION_NONE};
  return encode_tiled_map(y.ptr(), shape, [&] {
    return fmt::format("halo core output {}x{}x{}, box {}x64", g.N, g.O, g.Ho() * g.Wo(), geo.rows * g.Wo());
  });
}

CUtensorMap halo_map(const DeviceBuffer& planes, const cuuint64_t (&dims)[4], const cuuint32_t (&box)[4], int stride,
                     CUtensorMapSwizzle swizzle, const char* what) {
  const cuuint32_t s = static_cast<cuuint32_t>(stride);
  const TiledMapShape shape{CU_TENSOR_MAP_DATA_TYPE_UINT8,
                            1,
                            4,
                            {dims[0], dims[1], dims[2], dims[3]},
                            {box[0], box[1], box[2], box[3]},
                            swizzle,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                            {1, s, s, 1}};
  return encode_tiled_map(planes.ptr(), shape, [&] {
    return fmt::format("halo core {} {}x{}x{}x{} bytes, box {}x{}x{}x{}", what, dims[0], dims[1], dims[2], dims[3], box[0],
                       box[1], box[2], box[3]);
  });
}

}  // namespace

ConvGeometry conv_geometry(const KernelSpec& spec, const ConvShape& s) {
  if (spec.op != Op::Apconv) throw Error(ErrorKind::InvalidInput, "conv: the spec's op is not apconv");
  const struct { const char* name; int64_t v; } dims[] = {
      {"batch", s.N}, {"in-channels", s.C}, {"height", s.H}, {"width", s.W}, {"out-channels", s.O}};
  for (const auto& d : dims) {
    if (d.v < 1) throw Error(ErrorKind::InvalidInput, fmt::format("shape: {} must be >= 1, got {}", d.name, d.v));
    if (d.v > (1 << 24)) throw Error(ErrorKind::InvalidInput, fmt::format("shape: {}={} exceeds {}", d.name, d.v, 1 << 24));
  }
  ConvGeometry g;
  g.N = s.N, g.C = s.C, g.H = s.H, g.W = s.W, g.O = s.O;
  g.kh = spec.conv.kh, g.kw = spec.conv.kw, g.sh = spec.conv.sh, g.sw = spec.conv.sw, g.ph = spec.conv.ph,
  g.pw = spec.conv.pw;
  if (g.H + 2 * g.ph < g.kh || g.W + 2 * g.pw < g.kw)
    throw Error(ErrorKind::InvalidInput, fmt::format("shape: the {}x{} kernel does not fit the {}x{} input padded by ({}, {})",
                                                     g.kh, g.kw, g.H, g.W, g.ph, g.pw));
  const int64_t limit = (int64_t{1} << 31) - 1;
  if (g.N * g.Ho() * g.Wo() > limit || g.N * g.O * g.Ho() * g.Wo() > limit || g.N * s.C * g.H * g.W > limit)
    throw Error(ErrorKind::InvalidInput, "shape: the tensors exceed 2^31 elements");
  const int64_t K = g.C * g.kh * g.kw, kmax = rules::max_reduction(spec);
  if (K > kmax)
    throw Error(ErrorKind::InvalidInput, fmt::format("shape: in-channels*kernel = {} can overflow the {} output for {} x {}; "
                                                     "it must be <= {}",
                                                     K, rules::output_element_name(spec), spec.w.describe(),
                                                     spec.x.describe(), kmax));
  return g;
}

ConvRunner::ConvRunner(std::shared_ptr<Kernel> kernel) : kernel_(std::move(kernel)) {
  check_tile_fits_device(kernel_->compiled.spec);
}

PackedConvWeights ConvRunner::pack_w(const DeviceBuffer& values, const ConvGeometry& g) {
  const int bits = kernel_->compiled.spec.w.bits;
  PackedConvWeights p;
  p.O = g.O;
  p.C = g.C;
  const int64_t khw = int64_t{g.kh} * g.kw;
  p.planes = DeviceBuffer(static_cast<size_t>(conv_weight_words(bits, g.O, g.C, g.kh, g.kw)) * 4);
  p.possum = DeviceBuffer(static_cast<size_t>(g.O * khw) * 4);
  p.rowsum = DeviceBuffer(static_cast<size_t>(g.O) * 4);
  p.rowsum.fill_u32(0);  // accumulated with atomics
  CUdeviceptr src = values.ptr(), planes = p.planes.ptr(), possum = p.possum.ptr(), rowsum = p.rowsum.ptr();
  int o = static_cast<int>(g.O), c = static_cast<int>(g.C), k = static_cast<int>(khw);
  int cw = static_cast<int>(conv_channel_words(g.C));
  void* args[] = {&src, &o, &c, &k, &cw, &planes, &possum, &rowsum};
  LaunchDims d;
  d.grid_x = blocks(g.O * khw, kPackThreads / 32);
  d.block_x = kPackThreads;
  kernel_->module->launch(kPackWKernel, d, args);
  return p;
}

PackedConvActivations ConvRunner::pack_x(const DeviceBuffer& values, const ConvGeometry& g) {
  const int bits = kernel_->compiled.spec.x.bits;
  PackedConvActivations p;
  p.N = g.N, p.C = g.C, p.H = g.H, p.W = g.W;
  p.planes = DeviceBuffer(static_cast<size_t>(conv_activation_words(bits, g.N, g.C, g.H, g.W)) * 4);
  p.pixsum = DeviceBuffer(static_cast<size_t>(g.N * g.H * g.W) * 4);
  CUdeviceptr src = values.ptr(), planes = p.planes.ptr(), pixsum = p.pixsum.ptr();
  int n = static_cast<int>(g.N), c = static_cast<int>(g.C), h = static_cast<int>(g.H), w = static_cast<int>(g.W);
  int cw = static_cast<int>(conv_channel_words(g.C));
  void* args[] = {&src, &n, &c, &h, &w, &cw, &planes, &pixsum};
  LaunchDims d;
  d.grid_x = blocks(g.N * g.H * g.W, kPackThreads / 32);
  d.block_x = kPackThreads;
  kernel_->module->launch(kPackXKernel, d, args);
  return p;
}

DeviceBuffer ConvRunner::unpack_x(const PackedConvActivations& x) {
  DeviceBuffer out(static_cast<size_t>(x.N * x.C * x.H * x.W) * 2);
  CUdeviceptr planes = x.planes.ptr(), dst = out.ptr();
  int n = static_cast<int>(x.N), c = static_cast<int>(x.C), h = static_cast<int>(x.H), w = static_cast<int>(x.W);
  int cw = static_cast<int>(conv_channel_words(x.C));
  void* args[] = {&planes, &n, &c, &h, &w, &cw, &dst};
  LaunchDims d;
  d.grid_x = blocks(x.N * x.C * x.H * x.W, kPackThreads);
  d.block_x = kPackThreads;
  kernel_->module->launch(kUnpackXKernel, d, args);
  return out;
}

OutputDims ConvRunner::dims(const KernelSpec& spec, const ConvGeometry& g) {
  OutputDims d{g.N, g.O, 0, 0};
  pooled_size(spec.epilogue, g.Ho(), g.Wo(), &d.H, &d.W);
  return d;
}

void ConvRunner::conv(const PackedConvWeights& w, const PackedConvActivations& x, const ConvGeometry& g,
                      const EpilogueDevice& ep, LayerBuffers& out) {
  const KernelSpec& s = kernel_->compiled.spec;
  const Tile& t = *s.tile;
  int n = static_cast<int>(g.N), c = static_cast<int>(g.C), h = static_cast<int>(g.H), wd = static_cast<int>(g.W);
  int ho = static_cast<int>(g.Ho()), wo = static_cast<int>(g.Wo()), o = static_cast<int>(g.O);
  int cw = static_cast<int>(conv_channel_words(g.C));
  CUdeviceptr wp = w.planes.ptr(), rowsum = w.rowsum.ptr(), possum = w.possum.ptr(), xp = x.planes.ptr();
  CUdeviceptr pixsum = x.pixsum.ptr();
  EpilogueKernelArgs epi = ep.args(out);
  const OutputDims od = dims(s, g);  // after the chain's pool
  const int64_t tiles_m = blocks(g.O, t.bm);
  ConvKernelDivisors dv{fast_div(g.Ho() * g.Wo()), fast_div(g.Wo()), fast_div(od.H * od.W),
                        fast_div(od.W),          fast_div(cw),      fast_div(tiles_m)};
  void* args[] = {&wp, &rowsum, &possum, &xp, &pixsum, &epi, &o, &n, &c, &h, &wd, &ho, &wo, &cw, &dv};
  LaunchDims d;
  d.block_x = rules::block_threads(t, s.w, s.x);
  // The core the module was generated with (not the environment now: APNN_DISABLE_WGMMA).
  const bool wgmma = kernel_->compiled.wgmma_core;
  d.smem_bytes = static_cast<unsigned>(rules::core_shared_bytes(s, wgmma));
  // A fused pool gives each column tile bn / size^2 whole windows (templates/conv_sm80.cuh).
  const EpilogueOp* pool = s.epilogue.pool();
  const int64_t col_tiles = pool ? blocks(od.pixels(), t.bn / (pool->size * pool->size)) : blocks(g.N * g.Ho() * g.Wo(), t.bn);
  if (t.halo) {
    const DeviceInfo& dev = current_device();
    if (std::string why = rules::halo_launch_error(s, g.C, g.O, g.Ho(), g.Wo(), dev.max_smem_optin, dev.sm_count);
        !why.empty())
      throw Error(ErrorKind::InvalidInput, why);
    const rules::HaloGeometry geo = rules::halo_launch_geometry(s, g.Ho(), g.Wo());
    const int64_t tiles = g.N * geo.row_tiles;
    const uint64_t cw_bytes = static_cast<uint64_t>(cw) * 4;
    const cuuint64_t wdims[4] = {cw_bytes, static_cast<cuuint64_t>(g.kh * g.kw), static_cast<cuuint64_t>(g.O),
                                 static_cast<cuuint64_t>(s.w.bits)};
    const int row = rules::halo_row_bytes(g.C);
    const cuuint32_t wbox[4] = {static_cast<cuuint32_t>(row), 1, 128, 1};
    const cuuint64_t xdims[4] = {cw_bytes, static_cast<cuuint64_t>(g.W), static_cast<cuuint64_t>(g.H),
                                 static_cast<cuuint64_t>(g.N * s.x.bits)};
    const cuuint32_t xbox[4] = {static_cast<cuuint32_t>(row), static_cast<cuuint32_t>(geo.pw * g.sh),
                                static_cast<cuuint32_t>(geo.box_rows * g.sh), 1};
    CUtensorMap wmap = halo_map(w.planes, wdims, wbox, 1, row_swizzle(row), "weights");
    CUtensorMap xmap = halo_map(x.planes, xdims, xbox, g.sh, row_swizzle(row), "activations");
    HaloKernelGeometry kgeo{geo, fast_div(geo.row_tiles)};
    // The plain output through the copy engine where its boxes fit (rules::halo_output_map).
    int map_out = rules::halo_output_map(s, g.Ho(), g.Wo(), geo);
    CUtensorMap ymap{};
    if (map_out) ymap = halo_output_tensor_map(out.values, s, g, geo);
    void* hargs[] = {&wmap, &xmap, &rowsum, &possum, &pixsum, &epi, &o, &n, &c, &h, &wd, &ho, &wo, &cw, &dv, &kgeo, &ymap, &map_out};
    d.block_x = rules::kHaloThreads;
    d.smem_bytes = static_cast<unsigned>(rules::halo_shared_bytes(s, g.C, geo));
    d.grid_x = static_cast<unsigned>(rules::halo_grid(g.O, tiles, dev.sm_count));
    d.early_start = true;  // the kernel waits for the previous one before touching memory
    prepare_sums(s, g.O, blocks(tiles, d.grid_x / blocks(g.O, 128)), out, epi);  // a block keeps one M tile (rules::halo_grid)
    kernel_->module->launch(kConvKernel, d, hargs);
    return;
  }
  if (wgmma) {
    // Each block a contiguous share of the tiles, M tiles fastest: a persistent grid where
    // rules::conv_persistent says so, else one block per tile (templates/conv_sm90a.cuh).
    const int64_t tiles = tiles_m * col_tiles;
    if (tiles > (int64_t{1} << 31) - 1)
      throw Error(ErrorKind::InvalidInput, fmt::format("shape: {} output tiles of {}x{}, above 2^31-1", tiles, t.bm, t.bn));
    // The kernel counts columns as col_tiles * bn in int32 (a pooled tile holds bn / size^2
    // windows, so this can pass N*O*Ho*Wo's limit by the window size).
    if (col_tiles * t.bn > (int64_t{1} << 31) - 1)
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("shape: {} column tiles of {} columns exceed 2^31-1 columns: use a smaller batch", col_tiles,
                              t.bn));
    d.grid_x = rules::conv_persistent(s) ? kernel_->module->persistent_grid(kConvKernel, d.block_x, d.smem_bytes, tiles)
                                         : static_cast<unsigned>(tiles);
    d.early_start = true;  // the kernel waits for the previous one before touching memory (conv_sm90a.cuh)
    prepare_sums(s, g.O, blocks(tiles, d.grid_x), out, epi);
    kernel_->module->launch(kConvKernel, d, args);
    return;
  }
  if (col_tiles > 65535)
    throw Error(ErrorKind::InvalidInput,
                pool ? fmt::format("shape: {} pooled output pixels need {} column tiles of {} windows, above the grid "
                                   "limit 65535",
                                   od.pixels(), col_tiles, t.bn / (pool->size * pool->size))
                     : fmt::format("shape: {} output pixels need {} column tiles of {}, above the grid limit 65535",
                                   g.N * g.Ho() * g.Wo(), col_tiles, t.bn));
  d.grid_x = blocks(g.O, t.bm);
  d.grid_y = static_cast<unsigned>(col_tiles);
  prepare_sums(s, g.O, 1, out, epi);  // a block a tile
  kernel_->module->launch(kConvKernel, d, args);
}

}  // namespace apnn
