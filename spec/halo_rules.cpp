// The halo conv core's rules (spec/kernel_rules.h, templates/conv_sm90a_halo.cuh): what its tile
// and spec must be, its grid geometry, shared memory and the shapes it launches.
#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "spec/kernel_rules.h"

namespace apnn::rules {

std::string halo_tile_error(const Tile& t, const OperandFormat& w, const OperandFormat& x) {
  const char* core = "tile.core \"halo\"";
  if (t.bm != 128) return fmt::format("{} needs bm 128 (two warpgroups of 64 rows), got {}", core, t.bm);
  if (t.bn < 16 || t.bn > 128 || t.bn % 16 != 0)
    return fmt::format("{} needs bn a multiple of 16 from 16 to 128 (a wgmma N, one readout thread a column), got {}", core,
                       t.bn);
  if (t.bk != 256) return fmt::format("{} needs bk 256 (one k256 slice a wgmma), got {}", core, t.bk);
  if (t.stages < 2 || t.stages > 8) return fmt::format("tile.stages must be 2..8, got {}", t.stages);
  if (t.warps_m != 8 || t.warps_n != 1)
    return fmt::format("{} needs warps 8x1 (two consumer warpgroups), got {}x{}", core, t.warps_m, t.warps_n);
  if (t.cluster != 1) return fmt::format("{} takes no cluster (tile.cluster 1), got {}", core, t.cluster);
  const int groups = static_cast<int>(plane_groups(w, x).weight.size());
  if (const int regs = accumulator_regs(t, groups); regs > kHaloMaxAccumulatorRegs)
    return fmt::format("{} with bn {} needs {} accumulator registers per thread for w{}a{} ({} weight groups), limit {}: "
                       "use a smaller bn",
                       core, t.bn, regs, w.bits, x.bits, groups, kHaloMaxAccumulatorRegs);
  return {};
}

std::string halo_kernel_error(const Tile& t, const KernelSpec& spec) {
  if (std::string why = halo_tile_error(t, spec.w, spec.x); !why.empty()) return why;
  const ConvParams& c = spec.conv;
  if (spec.op != Op::Apconv) return "tile.core \"halo\" is for op apconv only";
  const bool k3 = c.kh == 3 && c.kw == 3 && c.ph == 1 && c.pw == 1, k1 = c.kh == 1 && c.kw == 1 && c.ph == 0 && c.pw == 0;
  if (!(k3 || k1) || c.sh != c.sw || (c.sh != 1 && c.sh != 2))
    return fmt::format("tile.core \"halo\" needs kernel [3, 3] with pad [1, 1] or kernel [1, 1] with pad [0, 0], and stride "
                       "[1, 1] or [2, 2], got kernel [{}, {}], pad [{}, {}], stride [{}, {}]",
                       c.kh, c.kw, c.ph, c.pw, c.sh, c.sw);
  if (spec.epilogue.pool())
    return "tile.core \"halo\" takes chains without a pool (its readout is per output pixel): epilogue has a pool";
  // Its bm 128 holds whole packed words, and its shared memory (the default core's formula
  // in check_epilogue_tile does not apply) is checked at launch, where C is known.
  return {};
}

HaloGeometry halo_geometry(const ConvParams& c, int64_t Ho, int64_t Wo, int bn, int align) {
  HaloGeometry g;
  const int halo = c.kh == 1 ? 0 : (c.sh == 1 ? 2 : 1);  // a 1x1 kernel reads no neighbours
  g.pw = static_cast<int>(std::min<int64_t>((Wo + halo + align - 1) / align * align, 1 << 20));
  g.rows = static_cast<int>(std::min<int64_t>(Ho, bn / g.pw));
  if (g.rows <= 0) return g;
  g.row_tiles = static_cast<int>((Ho + g.rows - 1) / g.rows);
  g.box_rows = g.rows + halo;
  g.slot_bytes = (g.box_rows * g.pw * 16 + 127) / 128 * 128;
  return g;
}

bool halo_output_map(const KernelSpec& spec, int64_t Ho, int64_t Wo, const HaloGeometry& geo) {
  const int64_t elem = output_element_bytes(spec), box = int64_t{geo.rows} * Wo;
  return spec.epilogue.empty() && spec.x.offset() == 0 && geo.rows > 0 && geo.pw % 8 == 0 && Wo % 2 == 0 && box <= 256 &&
         box * elem % 16 == 0 && Ho * Wo * elem % 16 == 0;
}

HaloGeometry halo_launch_geometry(const KernelSpec& spec, int64_t Ho, int64_t Wo) {
  const HaloGeometry g = halo_geometry(spec.conv, Ho, Wo, spec.tile->bn);
  const HaloGeometry padded = halo_geometry(spec.conv, Ho, Wo, spec.tile->bn, 8);
  return padded.rows == g.rows && halo_output_map(spec, Ho, Wo, padded) ? padded : g;
}

namespace {

int64_t halo_m_tiles(int64_t O) { return (O + 127) / 128; }  // a block keeps one M tile of 128 channels
// The resident W: p planes x the kernel's positions x chunks/2 k256 slices x 128 rows x 32
// bytes. One chunk (C <= 128): a box of 128 16-byte rows a position and plane, and one of zero
// weights.
int64_t halo_w_bytes(const KernelSpec& spec, int64_t C) {
  const int64_t chunks = halo_chunks(C), positions = int64_t{spec.conv.kh} * spec.conv.kw;
  return chunks == 1 ? (spec.w.bits * positions + 1) * 128 * 16 : spec.w.bits * positions * (chunks / 2) * 128 * 32;
}

}  // namespace

int64_t halo_sms_per_m_tile(int64_t O, int sm_count) { return sm_count / halo_m_tiles(O); }

int64_t halo_grid(int64_t O, int64_t tiles, int sm_count) {
  return halo_m_tiles(O) * std::min<int64_t>(halo_sms_per_m_tile(O, sm_count), tiles);
}

int64_t halo_shared_bytes(const KernelSpec& spec, int64_t C, const HaloGeometry& geo) {
  const Tile& t = *spec.tile;
  const int64_t chunks = halo_chunks(C), phases = spec.conv.sh == 1 || spec.conv.kh == 1 ? 1 : 4;
  const int64_t pitch = t.bn + (8 - t.bn % 32 + 32) % 32;  // conv_sm90a_halo.cuh's kStgPitch
  // Barriers: full and empty a stage (two full ones at an odd count: a warpgroup's each), W's.
  return 1024 + halo_w_bytes(spec, C) + t.stages * spec.x.bits * phases * chunks * geo.slot_bytes + 2 * 64 * pitch * 4 +
         ((t.stages % 2 != 0 ? 3 : 2) * t.stages + 1) * 8;
}

std::string halo_launch_error(const KernelSpec& spec, int64_t C, int64_t O, int64_t Ho, int64_t Wo, int max_smem,
                              int sm_count) {
  const Tile& t = *spec.tile;
  // A block keeps one M tile (its W stays in shared memory): the grid is a multiple of them.
  if (const int64_t tiles_m = halo_m_tiles(O); tiles_m > sm_count)
    return fmt::format("shape: out-channels {} make {} tiles of 128 rows, more than the {} SMs the halo core's blocks (one "
                       "M tile each) need",
                       O, tiles_m, sm_count);
  if (const int64_t chunks = halo_chunks(C); chunks != 1 && (chunks % 2 != 0 || chunks > 6))
    return fmt::format("shape: in-channels {} pads to {} chunks of 128, which tile.core \"halo\" cannot take: it needs C up "
                       "to 128, 129-256, 385-512 or 641-768 (one chunk a kernel position, or whole k256 slices; W in shared "
                       "memory)",
                       C, chunks);
  const HaloGeometry g = halo_launch_geometry(spec, Ho, Wo);
  if (g.rows <= 0 || g.pw * spec.conv.sh > 256)
    return fmt::format("shape: a {}-wide output needs grid rows of {} columns, which tile.core \"halo\" with bn {} cannot hold "
                       "(a row at most bn columns, a box at most 256 per side)",
                       Wo, g.pw, t.bn);
  if (const int64_t smem = halo_shared_bytes(spec, C, g); smem > max_smem) {
    const int64_t w_bytes = halo_w_bytes(spec, C);
    return fmt::format("shape: tile.core \"halo\" needs {} bytes of shared memory for {} in-channels ({} of them W's, {} "
                       "stages), limit {}: {}",
                       smem, C, w_bytes, t.stages, max_smem,
                       w_bytes + 2 * 64 * 8 * 4 > max_smem ? "use the default core" : "use fewer stages, a smaller bn or the default core");
  }
  return {};
}

}  // namespace apnn::rules
