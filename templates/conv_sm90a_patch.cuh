// APConv with stride 1 on the sm_90a wgmma core, without an im2col gather: each block loads
// the input rows its tile's windows cover (a "patch") once per channel group, and the
// wgmma B descriptors address every kernel position as a shifted view of that patch.
//
// Why: conv_sm90a.cuh gathers a 16-byte chunk per (pixel, kernel position, channel chunk),
// so every input pixel crosses L2 kh*kw times per tile; at batch 128 that made the layer
// L2-bound (ncu, session 5 device call 3: n128-56x56x64 at 68% L2 throughput, 150 us).
//
// Virtual pixels: the batch is one tall padded image of N*Hp rows of Wp = W + 2*pw pixels
// (Hp = H + 2*ph, image n in rows n*Hp..), and the tile's columns are consecutive positions
// v = R*Wp + wo of the output grid over it. Output pixel (R, wo) at kernel position (kh, kw)
// reads padded pixel (R + kh, wo + kw), patch element v - r0*Wp + kh*Wp + kw, with r0 the
// tile's first row. Consecutive columns are consecutive 16-byte patch elements, which is
// exactly a K-major core matrix without swizzle (8 rows of 16 bytes, SBO 128): a position is
// a start-address shift. Columns with wo >= Wo or R % Hp >= Ho (the kw-1 past each row, the
// kh-1 past each image) compute values the epilogue drops.
//
// K order: (channel group, kernel position, chunk). A channel group is g 128-bit chunks
// (g = 2 when the chunk count CC is even, else 1). A 256-bit wgmma K step pairs two
// 16-byte units: with g = 2 the two chunks of one position (LBO = one patch plane); with
// g = 1 two consecutive positions (LBO = their patch offset difference, positive), the last
// of an odd count paired with a zero weight unit. The weights are loaded in the same unit
// order into planes [unit][row] of 16 bytes (LBO = one unit plane).
//
// Shared memory: two column tables (2 x bn x 16 bytes), then kStages slots of
//   A: p planes x units x bm x 16 bytes (units = 2*KHW for g = 2, KHW rounded up to even for g = 1)
//   B: q planes x g chunks x patch_px x 16 bytes (patch_px = rmax*Wp + 1: the zero unit's
//      B half may read one element past the last row)
// The runner computes g, rmax and the bytes (rules::conv_patch_layout) and launches a
// persistent grid.
#pragma once
#include "conv_sm90a.cuh"

namespace apnn {

// The slot layout, worked out by the runner (engine/conv_runner.cpp) and passed in.
struct ConvPatchLayout {
  int g;          // 128-bit chunks per channel group: 1 or 2
  int groups;     // channel groups = K stages: CC / g
  int units;      // 16-byte weight units per group (A planes)
  int patch_px;   // elements per patch plane
  int a_bytes;    // A part of a slot
  int slot_bytes; // A + B
  int tiles_n;    // column tiles: ceil(N*Hp*Wp / bn)
};

template <class T>
struct ConvPatchSm90a {
  using Core = GemmSm90a<T>;
  static constexpr int kKHW = T::kKh * T::kKw;
  static constexpr int kNI = Core::kNI;
  static constexpr int kWN = Core::kWN;

  // Patch offset (elements) of kernel position pos.
  static __device__ __forceinline__ int pos_offset(int pos, int Wp) { return (pos / T::kKw) * Wp + pos % T::kKw; }

  // Persistent: block b computes tiles b, b + gridDim.x, ... (M tiles fastest); the (tile,
  // group) sequence is one pipeline, so the next tile's first groups load while this one
  // finishes and stores. Each tile's column table alternates between two buffers: tile i+2
  // refills i's only after the barriers of tile i+1, which every thread reaches after its
  // epilogue of tile i.
  template <class Problem>
  static __device__ __forceinline__ void run(char* smem, Problem& prob, const ConvPatchLayout& L) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wg = warp >> 2;
    const int wg_m = wg / Core::kWgN, wg_n = wg % Core::kWgN;
    const int g = lane >> 2, tig = lane & 3;
    const int Wp = prob.W + 2 * T::kPw, Hp = prob.H + 2 * T::kPh;
    const int O = prob.a_rows, CW = prob.CW;
    const int tiles_m = (O + T::kBM - 1) / T::kBM;
    const int ntiles = tiles_m * L.tiles_n;
    if (static_cast<int>(blockIdx.x) >= ntiles) return;
    const int steps = ((ntiles - 1 - static_cast<int>(blockIdx.x)) / static_cast<int>(gridDim.x) + 1) * L.groups;
    ConvColumn* tables = reinterpret_cast<ConvColumn*>(smem);
    char* pipe = smem + 2 * T::kBN * sizeof(ConvColumn);
    const u32 pipe_base = ptx::smem_addr(pipe);

    int ld_tile = blockIdx.x, ld_grp = 0;  // the next (tile, group) to load
    auto load_next = [&](int slot) {
      const int m0 = (ld_tile % tiles_m) * T::kBM, v0 = (ld_tile / tiles_m) * T::kBN;
      const int r0 = v0 / Wp, a0 = v0 - r0 * Wp;
      const int rows = (a0 + T::kBN - 1 + (T::kKh - 1) * Wp + T::kKw - 1) / Wp + 1;  // padded rows read
      const int grp = ld_grp;
      if (++ld_grp == L.groups) {
        ld_grp = 0;
        ld_tile += gridDim.x;
      }
      char* st = pipe + slot * L.slot_bytes;
      // A: unit u of row r of plane s <- weight word ((s*O + o)*KHW + pos)*CW + (grp*g + chunk)*4.
      const int a_count = T::kWBits * L.units * T::kBM;
      const int pos_per_plane = L.units / L.g;
      for (int i = threadIdx.x; i < a_count; i += Core::kThreads) {
        const int chunk = L.g == 2 ? i & 1 : 0;
        const int rest = L.g == 2 ? i >> 1 : i;
        const int r = rest % T::kBM, su = rest / T::kBM;  // su = s*pos_per_plane + pos
        const int s = su / pos_per_plane, pos = su - s * pos_per_plane;
        const int o = m0 + r;
        const bool ok = o < O && pos < kKHW;
        const u32* src = prob.a_planes + ((static_cast<i64>(s) * O + o) * kKHW + pos) * CW + (grp * L.g + chunk) * 4;
        const int u = pos * L.g + chunk;
        ptx::cp_async_16(st + ((s * L.units + u) * T::kBM + r) * 16, ok ? src : prob.a_planes, ok ? 16 : 0);
      }
      // B: element e of chunk plane (t, chunk) <- padded pixel (r0 + e/Wp, e%Wp) of the tall image,
      // zero in the padding and past the last image.
      char* sb = st + L.a_bytes;
      const int per_plane = rows * Wp;
      const int b_count = T::kXBits * L.g * per_plane;
      for (int i = threadIdx.x; i < b_count; i += Core::kThreads) {
        const int tc = i / per_plane, e = i - tc * per_plane;
        const int t = tc / L.g, chunk = tc - t * L.g;
        const int er = e / Wp, pc = e - er * Wp, pr = r0 + er;
        const int img = pr / Hp, hi = pr - img * Hp - T::kPh, wi = pc - T::kPw;
        const bool ok = img < prob.batch && static_cast<u32>(hi) < static_cast<u32>(prob.H) &&
                        static_cast<u32>(wi) < static_cast<u32>(prob.W);
        const u32* src =
            prob.xp + ((static_cast<i64>(img * T::kXBits + t) * prob.H + hi) * prob.W + wi) * CW + (grp * L.g + chunk) * 4;
        ptx::cp_async_16(sb + (tc * L.patch_px + e) * 16, ok ? src : prob.xp, ok ? 16 : 0);
      }
    };

    // One group's wgmmas: K step ks pairs units 2ks and 2ks+1; a0 is the tile's offset in its first row.
    auto mma_group = [&](i32(&acc)[T::kGroups][1][kNI][4], int slot, int a0, bool accumulate) {
      const u32 sa = pipe_base + slot * L.slot_bytes;
      const u32 sb = sa + L.a_bytes;
      const int ksteps = L.units / 2;
      for (int ks = 0; ks < ksteps; ++ks) {
        u32 b_start, b_lbo;
        if (L.g == 2) {
          b_start = (a0 + wg_n * kWN + pos_offset(ks, Wp)) * 16;
          b_lbo = L.patch_px * 16;
        } else {
          const int p0 = 2 * ks, p1 = 2 * ks + 1;
          b_start = (a0 + wg_n * kWN + pos_offset(p0, Wp)) * 16;
          b_lbo = p1 < kKHW ? (pos_offset(p1, Wp) - pos_offset(p0, Wp)) * 16 : 16;
        }
#pragma unroll
        for (int s = 0; s < T::kWBits; ++s)
#pragma unroll
          for (int t = 0; t < T::kXBits; ++t) {
            const u64 da = ptx::wgmma_desc(sa + ((s * L.units + 2 * ks) * T::kBM + wg_m * 64) * 16, T::kBM * 16, 128, 0);
            const u64 db = ptx::wgmma_desc(sb + t * L.g * L.patch_px * 16 + b_start, b_lbo, 128, 0);
            ptx::WgmmaB1<kWN>::mma(acc[T::group_of(s, t)][0], da, db,
                                   ks > 0 || !Core::first_of_group(s, t) || accumulate);
          }
      }
    };

    i32 acc[T::kGroups][1][kNI][4];
    Core::zero_acc(acc);
#pragma unroll
    for (int st = 0; st < T::kStages - 1; ++st) {
      if (st < steps) load_next(st);
      ptx::cp_async_commit();
    }
    int i = 0;  // groups done, over all of this block's tiles
    for (int tile = blockIdx.x, it = 0; tile < ntiles; tile += gridDim.x, ++it) {
      const int m0 = (tile % tiles_m) * T::kBM, v0 = (tile / tiles_m) * T::kBN;
      const int a0 = v0 - (v0 / Wp) * Wp;
      prob.table = tables + (it & 1) * T::kBN;
      prob.fill_column_table_with([&](int c, int& n, int& ho, int& wo) { return prob.virtual_pixel(v0, c, n, ho, wo); });
      for (int kt = 0; kt < L.groups; ++kt, ++i) {
        ptx::cp_async_wait<T::kStages - 2>();
        ptx::fence_proxy_async();
        __syncthreads();  // group i landed, from every thread, visible to the tensor cores (and the table)
        Core::fence_acc(acc);
        ptx::wgmma_fence();
        mma_group(acc, i % T::kStages, a0, kt > 0);
        ptx::wgmma_commit();
        Core::fence_acc(acc);
        ptx::wgmma_wait<1>();
        __syncthreads();  // group i-1's slot is free
        if (i + T::kStages - 1 < steps) load_next((i + T::kStages - 1) % T::kStages);
        ptx::cp_async_commit();
      }
      ptx::wgmma_wait<0>();
      Core::fence_acc(acc);
      prob.store_columns(acc, m0 + wg_m * 64 + (warp & 3) * 16, wg_n * kWN, g, tig);
    }
  }
};

template <class T>
struct ConvPatchProblem : ConvProblem<T, GemmSm90a<T>> {
  using Base = ConvProblem<T, GemmSm90a<T>>;
  using E = typename Base::E;
  using Frag = GemmSm80<T>;
  static_assert(!T::Epi::kStaged, "the wgmma core has no fused epilogue yet");
  static_assert(T::kSh == 1 && T::kSw == 1, "the patch core is for stride 1");

  int batch;  // N: images in the tall padded image

  // Column c of the tile starting at virtual pixel v0: its output pixel (n, ho, wo), if any.
  __device__ __forceinline__ bool virtual_pixel(int v0, int c, int& n, int& ho, int& wo) const {
    const int wpad = this->W + 2 * T::kPw, hpad = this->H + 2 * T::kPh;
    const int v = v0 + c, row = v / wpad;
    wo = v - row * wpad;
    n = row / hpad;
    ho = row - n * hpad;
    return n < batch && ho < this->Ho && wo < this->Wo;
  }
};

template <class T>
__device__ __forceinline__ void conv_sm90a_patch(char* smem, const u32* wp, const i32* rowsum, const i32* possum,
                                                 const u32* xp, const i32* pixsum, const EpilogueArgs& epi, int O, int N,
                                                 int C, int H, int W, int Ho, int Wo, int CW, const ConvPatchLayout& L) {
  const int ld = ConvProblem<T>::kKHW * CW;
  const int P = N * Ho * Wo;
  ConvPatchProblem<T> prob{{wp, static_cast<i64>(O) * ld, O, ld, ld, xp, rowsum, possum, pixsum, epi,
                            reinterpret_cast<u32*>(smem), C, H, W, Ho, Wo, CW, P, Ho, Wo, P, Ho * Wo,
                            (O + 127) / 128 * 4, 0},
                           N};
  ConvPatchSm90a<T>::run(smem, prob, L);
}

}  // namespace apnn
