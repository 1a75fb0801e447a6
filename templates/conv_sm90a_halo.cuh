// APConv on the sm_90a wgmma core from halo tiles (bench/probes/conv_halo_probe.cu measured
// the design: bench/NOTES.md, session 25): 3x3 kernels with pad 1 and 1x1 kernels with pad 0,
// stride 1 or 2, and chains without a pool (per-element ops, and a quantize that packs the
// next layer's planes).
// conv_sm90a.cuh gathers each X tile with per-thread copies, one input pixel per kernel
// position; here the copy engine loads each tile's input once:
//
// - A tile is geo.rows output rows of one image, computed over a grid geo.pw columns wide
//   (pw > Wo: the grid's columns Wo.. are computed and dropped). Its input is one box of the
//   rows it needs x pw columns from column -1 (the copy engine zero-fills the padding). On
//   the grid, kernel position (kh, kw) reads box pixel j + kh*pw + kw for output column j:
//   every position's B operand is the same box, shifted by whole rows. A pixel's channels
//   come as k256 slices (two 16-byte chunks of 128 channels) in boxes of W's rows: 64 bytes
//   (two slices, the 64-byte swizzle) where C pads to 4 chunks, else 32 (one, the 32-byte
//   swizzle); C pads to 2, 4 or 6 chunks (W's shared memory). The wgmmas read a box shifted
//   by whole rows: the swizzle follows the address bits (bench/probes/conv_halo_probe.cu,
//   session 29: exact with the descriptor's base offset 0; rows of 16-byte chunks in boxes of
//   their own, as until then, cost 2-4x the copies' elements: the probe's 3x3/2 layer 11.19 ->
//   10.48 us). With one chunk (C <= 128) a slice is two kernel positions instead: X in
//   16-byte rows, not swizzled (core matrices of 8 rows x 16 bytes, SBO 128), the second
//   half's box the first's shifted by a column or row (its own LBO): five slices for nine
//   positions (pair()). n128 28x28x128 ran 24.5 us against the default core's 32.0, 3x3/2 to
//   256 16.3 against 24.6.
// - Stride 2: four phase grids (input rows 2i-1 / 2i x columns 2k-1 / 2k, boxes loaded with
//   element strides of 2); position (kh, kw) reads phase (kh == 1, kw == 1) shifted by
//   (kh == 2) rows and (kw == 2) columns of its grid.
// - 1x1 kernels (ResNet's stride-2 shortcuts): one position, so no halo: the grid is Wo
//   columns wide, one box of the tile's rows (every other row and column at stride 2, the
//   one phase) is its B operand, and at one chunk its single slice pairs the position with
//   the zero box. The default core ran these layers at a third of the write bandwidth: each
//   tile's one K step left its gather, wgmma and epilogue in series (session 10).
// - A block keeps one M tile (128 output channels): its W (p planes x 9 positions x chunks/2
//   k256 slices x 128 rows x 32 bytes) is loaded once and stays, in boxes of 64-byte rows
//   (two slices, the 64-byte swizzle) where C pads to 4 chunks, else of 32-byte rows (one
//   slice, the 32-byte swizzle); at one chunk, 16-byte rows (a position's) and a zero box.
//   Rows past O are zero-filled (a 4-D map with O its own dimension). A pipeline stage is one
//   tile's X boxes (q planes x phases x rows of one or two slices), each box in the slots of
//   the chunks it holds (geo.slot_bytes a chunk). W came in 16-byte rows until session 27,
//   and its load was most of the prologue: without it n128-14x14x256 ran 14.0 against 15.7
//   us, 7x7x512 12.7 against 15.6.
// - Warps: two consumer warpgroups (rows 0-63, 64-127), then a producer warpgroup whose
//   first thread issues every copy and whose registers go to the consumers (setmaxnreg, as
//   the TMA GEMM core's wide tiles). Warpgroup 1 starts once warpgroup 0's first wgmmas are
//   done, so that one's epilogue runs beside the other's wgmmas (n128-14x14x256: 16.04 ->
//   15.08 us in the probe). Where O <= 64 the warpgroups take alternate tiles instead, both
//   with the M tile's first 64 rows.
// - Epilogue: each warpgroup stages its 64 rows' combined sums (row pitch 8 mod 32 words:
//   8-byte writes of 8 rows in two wavefronts), then each thread walks one column's rows,
//   adding the offset encodings' terms (ConvProblem::correction, from the column's
//   ConvColumn worked out under the mainloop) and the chain's ops: a warp store is
//   consecutive output pixels. With a quantize, a thread takes its column's 32-row chunks
//   instead and gathers each row's code bits into one word a plane (QuantReadout).
#pragma once
#include "conv_sm80.cuh"
#include "ptx_sm90a.cuh"
#include "ptx_tma.cuh"

namespace apnn {

// The launch's grid, worked out by engine/conv_runner.cpp (HaloKernelGeometry mirrors it).
struct HaloGeometry {
  int pw;          // grid columns a row: >= Wo + 2 at stride 1, Wo + 1 at stride 2, Wo for a 1x1 kernel
  int rows;        // output rows a tile: rows * pw <= kBN
  int row_tiles;   // tiles an image: ceil(Ho / rows)
  int box_rows;    // input rows a box: (rows + 2) at stride 1, (rows + 1) a phase at stride 2, rows for 1x1
  int slot_bytes;  // a box's shared memory: box_rows * pw * 16, rounded up to 128 (bulk copies' alignment)
  // Tile t's image, t / row_tiles, every tile: a division by the run-time row_tiles is about
  // 25 dependent instructions (5% of a 1x1 shortcut's consumer instructions; session 33,
  // call 2), the multiply-shift three, with no loop-carried registers (stepping the image and
  // row tile instead spilled a w1a2 bn 16 kernel).
  FastDiv image_of_tile;
};

// The halo core's layout keeps whether the warpgroups take alternate tiles only where its
// stage count is odd (ConvSm90aHalo::kSplitFull); at an even one the layout is as before.
template <bool kHas>
struct HaloAlternateFlag {
  bool alternate;  // O <= 64: the warpgroups on alternate tiles
};
template <>
struct HaloAlternateFlag<false> {};

template <class T>
struct ConvSm90aHalo {
  static constexpr int kS = T::kSh;
  static constexpr int kPositions = T::kKh * T::kKw;  // 9, or 1 for a 1x1 kernel
  static_assert(((T::kKh == 3 && T::kKw == 3 && T::kPh == 1 && T::kPw == 1) ||
                 (T::kKh == 1 && T::kKw == 1 && T::kPh == 0 && T::kPw == 0)) &&
                    T::kSw == kS && (kS == 1 || kS == 2),
                "halo core: 3x3 with pad 1 or 1x1 with pad 0, stride 1 or 2");
  static_assert(T::kBM == 128 && T::kWarpsM == 8 && T::kWarpsN == 1, "halo core: 128 rows, two warpgroups");
  using E = typename T::Epi;
  static_assert(!E::kPool, "halo core: chains without a pool (rules::halo_kernel_error)");
  static_assert(T::kBN % 16 == 0 && T::kBN <= 128, "halo core: a wgmma N, at most one readout thread a column");
  static constexpr int kBN = T::kBN;
  static constexpr int kConsumerWarps = 8, kThreads = 32 * (kConsumerWarps + 4);
  static constexpr int kPhases = kS == 1 || kPositions == 1 ? 1 : 4;
  static constexpr int kSliceW = 128 * 32;  // W: one k256 slice of one position, 128 rows of 32 bytes
  // W's and X's box rows, from a pixel's 16-byte chunks: 64 bytes (two k256 slices, the
  // 64-byte swizzle) where the slices pair up (4 chunks), 16 for one chunk (consume<0>), else
  // 32 (the 32-byte swizzle). The runner's maps take rules::halo_row_bytes(C), the same choice.
  static constexpr int row_bytes(int chunks) { return chunks == 1 ? 16 : chunks % 4 == 0 ? 64 : 32; }
  static constexpr int kStgPitch = kBN + (8 - kBN % 32 + 32) % 32;  // the least pitch >= kBN that is 8 mod 32
  static constexpr int kStgBytes = 64 * kStgPitch * 4;               // a warpgroup's staging
  // The plain output through the copy engine where the runner passes its map
  // (rules::halo_output_map): the staging holds a warpgroup's 64 channels x the tile's
  // rows*Wo pixels densely (the grid's halo columns dropped), each thread adding its columns'
  // terms (one a column: X without an offset) from a table the column owners write past it,
  // and one thread stores it as one box; no thread walks the rows. The layers it suits are
  // bound by the readout's dependent loads and stores (session 48's ncu).
  static constexpr bool kMapOut = E::kPlain && T::kOffsetX == 0;
  using Frag = GemmSm80<T>;    // the accumulator fragment and its combine
  using Prob = ConvProblem<T>;  // only its epilogue terms (the corrections, visit_pixel)
  using Acc = i32[T::kGroups][1][kBN / 8][4];
  // A chain's per-channel words sit in each staging row past the tile's columns (a pitch
  // leaves 8 or 24 words there), written once (a block keeps its M tile), so that the readout
  // takes a row's with one broadcast load: a quantize by thresholds keeps the thresholds and
  // code table (ChannelThresholds::code_table; spread_table for 2-bit codes, kSpread), the
  // float ops a RowParams. From global
  // memory, with the header's arithmetic, a row cost about 25 instructions and the fused
  // n128-14x14x256 bn+relu+q2 ran 25.6 us against the plain 15.0.
  static constexpr bool kRowParams = !E::kQThresholds && (E::kScaleBias || E::kQuantize);
  static constexpr int kRowWords = E::kQThresholds ? 1 << E::kQBits : (kRowParams ? 4 : 0);
  // 2-bit codes by thresholds keep ChannelThresholds::spread_table, shifted left by the row's
  // place in its group of 8, as the row's last word: shifted right by the code's count, its
  // two plane bits are in place in a word of 8 rows of both planes, and one LOP3 takes them in
  // (the code table's code took two instructions a plane).
  static constexpr bool kSpread = E::kQThresholds && E::kQBits == 2;
  static_assert(kRowWords <= kStgPitch - kBN && kRowWords <= 8, "halo core: a row's words past its columns");
  // Row r's RowParams, from the row words at a (row 0's) plus r rows.
  static __device__ __forceinline__ RowParams row_params_at(u32 a, int r) {
    RowParams p;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(p.scale), "=f"(p.bias), "=f"(p.q_scale), "=f"(p.q_zero)
                 : "r"(a + r * kStgPitch * 4));
    return p;
  }

  // One chunk a pixel (C <= 128): a k256 slice is two kernel positions, W's 16-byte
  // rows as one box a position (non-swizzled, the A descriptor's LBO between the two
  // positions' boxes) and X's second half the first's box shifted (the B descriptor's LBO).
  // Five slices cover the nine positions (one the single position of a 1x1 kernel), the
  // last one's second half a box of zero weights: W is p planes x the positions, then that
  // box (rules::halo_w_bytes).
  static constexpr int kPosW = 128 * 16;  // W of one position at one chunk
  static constexpr int kPairs = (kPositions + 1) / 2;
  static __device__ __forceinline__ int w_bytes(int chunks) {
    return chunks == 1 ? (T::kWBits * kPositions + 1) * kPosW : T::kWBits * kPositions * (chunks / 2) * kSliceW;
  }
  // The pairs (first, second position; -1 the zero box), each two positions on the same
  // phase grid, the second shifted by a column (or, for the fourth, a row) from the first.
  static __device__ __forceinline__ void pair(int slice, int& a, int& b) {
    constexpr int kS1[5][2] = {{0, 1}, {3, 4}, {6, 7}, {2, 5}, {8, -1}};
    constexpr int kS2[5][2] = {{0, 2}, {6, 8}, {3, 5}, {1, 7}, {4, -1}};
    a = kPositions == 1 ? 0 : (kS == 1 ? kS1[slice][0] : kS2[slice][0]);
    b = kPositions == 1 ? -1 : (kS == 1 ? kS1[slice][1] : kS2[slice][1]);
  }

  // Shared memory from a 1024-byte boundary: W, the stages, the two stagings, then the
  // mbarriers: kStages full ones (twice that at an odd count), kStages empty ones and W's
  // (rules::halo_shared_bytes counts the same).
  // Where O <= 64 the warpgroups take alternate tiles; with an odd stage count a stage's tiles
  // then alternate between them, so each warpgroup gets its own full barrier a stage: a parity
  // wait on a barrier shared with the other warpgroup could pass a phase early (its previous
  // load not landed yet), which let the producer arrive twice on one phase (a Warp Illegal
  // Instruction, session 36).
  static constexpr bool kSplitFull = T::kStages % 2 != 0;
  struct Layout : HaloAlternateFlag<kSplitFull> {
    u32 w, stages, staging, full0, empty0, wfull;
    int chunks, stage_bytes;
    // The block's i-th tile's full barrier, and the parity of the phase that brings it.
    __device__ __forceinline__ u32 full(int i) const {
      if constexpr (kSplitFull) return full0 + 8 * (i % T::kStages + (this->alternate ? T::kStages * (i & 1) : 0));
      else return full0 + 8 * (i % T::kStages);
    }
    __device__ __forceinline__ u32 full_parity(int i) const {
      if constexpr (kSplitFull) return this->alternate ? (i / (2 * T::kStages)) & 1 : (i / T::kStages) & 1;
      else return (i / T::kStages) & 1;
    }
    __device__ __forceinline__ Layout(u32 base, int cw, const HaloGeometry& geo, bool alt) {
      if constexpr (kSplitFull) this->alternate = alt;
      chunks = cw / 4;
      stage_bytes = T::kXBits * kPhases * chunks * geo.slot_bytes;
      w = base;
      stages = w + w_bytes(chunks);
      staging = stages + T::kStages * stage_bytes;
      full0 = staging + 2 * kStgBytes;
      empty0 = full0 + T::kStages * 8 * (kSplitFull ? 2 : 1);
      wfull = empty0 + T::kStages * 8;
    }
  };

  // Kernel position -> (phase grid, rows and columns shifted on it); a 1x1 kernel's one
  // position reads its grid unshifted.
  static __device__ __forceinline__ void position(int pos, int& phase, int& dr, int& dc) {
    const int kh = pos / 3, kw = pos - kh * 3;
    phase = kS == 1 || kPositions == 1 ? 0 : (kh == 1) * 2 + (kw == 1);
    dr = kPositions == 1 ? 0 : (kS == 1 ? kh : kh == 2);
    dc = kPositions == 1 ? 0 : (kS == 1 ? kw : kw == 2);
  }

  static __device__ void run(u32* smem, const TmaMap* wmap, const TmaMap* xmap, const Prob& prob, int N, int cw,
                             const HaloGeometry& geo, const TmaMap* ymap) {
    const u32 raw = ptx::smem_addr(smem);
    const Layout L(raw + ((1024u - (raw & 1023u)) & 1023u), cw, geo, prob.a_rows <= 64);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
      for (int i = 0; i < T::kStages; ++i) {
        ptx::mbar_init(L.full0 + 8 * i, 1);
        ptx::mbar_init(L.empty0 + 8 * i, prob.a_rows <= 64 ? 4 : kConsumerWarps);  // one warpgroup a tile where O <= 64
      }
      if constexpr (kSplitFull)  // the second warpgroup's full barriers
        for (int i = T::kStages; i < 2 * T::kStages; ++i) ptx::mbar_init(L.full0 + 8 * i, 1);
      ptx::mbar_init(L.wfull, 1);
      ptx::fence_mbar_init();
      // The tensor maps are kernel parameters, which no earlier kernel writes: fetched before
      // the dependency wait, they are at hand for the first copy after it.
      ptx::prefetch_tma_map(wmap);
      ptx::prefetch_tma_map(xmap);
      if (kMapOut && ymap != nullptr) ptx::prefetch_tma_map(ymap);
    }
    __syncthreads();
    // Launched with early_start (conv_runner.cpp): global memory only after the wait.
    ptx::grid_dependency_wait();
    // The block's M tile and its share of the tiles (image, row block); the grid is a multiple of tiles_m.
    const int tiles_m = (prob.a_rows + 127) / 128, m0 = (static_cast<int>(blockIdx.x) % tiles_m) * 128;
    const int first = static_cast<int>(blockIdx.x) / tiles_m, step = static_cast<int>(gridDim.x) / tiles_m;
    const int tiles = N * geo.row_tiles;
    if (warp >= kConsumerWarps) {
      ptx::setmaxnreg_dec<40>();
      if (warp == kConsumerWarps && lane == 0) produce(L, wmap, xmap, geo, m0, first, step, tiles);
      return;
    }
    ptx::setmaxnreg_inc<232>();
    // The k256 slices a position as a constant: with a run-time count ptxas fenced the
    // accumulators between the wgmmas (C7519). The runner allows 1 chunk (position pairs,
    // kSlices 0), 2, 4 or 6.
    switch (L.chunks / 2) {
      case 0: consume<0>(L, prob, geo, m0, first, step, tiles, ymap); break;
      case 1: consume<1>(L, prob, geo, m0, first, step, tiles, ymap); break;
      case 2: consume<2>(L, prob, geo, m0, first, step, tiles, ymap); break;
      case 3: consume<3>(L, prob, geo, m0, first, step, tiles, ymap); break;
      default: break;
    }
  }

  static __device__ void produce(const Layout& L, const TmaMap* wmap, const TmaMap* xmap, const HaloGeometry& geo, int m0,
                                 int first, int step, int tiles) {
    const u64 keep = ptx::policy_evict_last();
    const int row = row_bytes(L.chunks);  // W's and X's box rows
    if (L.chunks == 1) {
      ptx::mbar_arrive_expect_tx(L.wfull, T::kWBits * kPositions * kPosW);
      for (int s = 0; s < T::kWBits; ++s)
        for (int pos = 0; pos < kPositions; ++pos)
          ptx::tma_load_4d(L.w + (s * kPositions + pos) * kPosW, wmap, 0, pos, m0, s, L.wfull, keep);
    } else {
      const int slices = L.chunks / 2, boxes = slices * 32 / row;
      ptx::mbar_arrive_expect_tx(L.wfull, T::kWBits * kPositions * slices * kSliceW);
      for (int s = 0; s < T::kWBits; ++s)
        for (int pos = 0; pos < kPositions; ++pos)
          for (int b = 0; b < boxes; ++b)
            ptx::tma_load_4d(L.w + ((s * kPositions + pos) * boxes + b) * 128 * row, wmap, row * b, pos, m0, s, L.wfull,
                             keep);
    }
    const int box_bytes = geo.box_rows * geo.pw * 16;  // a chunk's bytes of a box
    int i = 0;
    for (int t = first; t < tiles; t += step, ++i) {
      const int slot = i % T::kStages, n = geo.image_of_tile.div(t), ho0 = (t - n * geo.row_tiles) * geo.rows;
      ptx::mbar_wait(L.empty0 + 8 * slot, ((i / T::kStages) & 1) ^ 1);
      const u32 full = L.full(i), st = L.stages + slot * L.stage_bytes;
      ptx::mbar_arrive_expect_tx(full, T::kXBits * kPhases * L.chunks * box_bytes);
      for (int x = 0; x < T::kXBits; ++x)
        for (int ph = 0; ph < kPhases; ++ph) {
          // Stride 1: rows ho0 - 1.., columns -1... Stride 2, phase (ra, cb): rows
          // 2 ho0 - 1 + ra.., columns -1 + cb.., every other one (the map's element strides).
          // A 1x1 kernel: rows kS ho0.., columns 0...
          const int ra = ph / 2, cb = ph % 2;
          const int h0 = kPositions == 1 ? kS * ho0 : (kS == 1 ? ho0 - 1 : 2 * ho0 - 1 + ra);
          const int w0 = kPositions == 1 ? 0 : (kS == 1 ? -1 : -1 + cb);
          // A box a row of one or two k256 slices (at one chunk, the chunk's 16-byte rows), in
          // the slots of the chunks it holds.
          for (int h = 0; h < L.chunks; h += row / 16)
            ptx::tma_load_4d(st + ((x * kPhases + ph) * L.chunks + h) * geo.slot_bytes, xmap, 16 * h, w0, h0,
                             n * T::kXBits + x, full, keep);
        }
    }
  }

  // The staging holds a tile's sums over the largest power of two that divides every group
  // weight (2 where the weights are pm1's 2 x the planes' 1, 2, ...): the combine of w1a2's
  // two sets is then one LEA a value where weights 2 and 4 took a shift and an IMAD, and the
  // readout shifts back in the IMAD or LEA that adds the corrections (64 instructions a warp
  // fewer each tile at bn 128; n128 w1a2 14x14x256-o512 3x3/2 10.27 -> 10.09 us, 28x28x128
  // int16 19.64 -> 19.42, 56x56x64 int32 48.5 -> 49.0, the rest even: session 48, call 4).
  static __device__ constexpr int stage_shift() {
    int bits = 0;  // every weight's magnitude: its lowest set bit is the largest common power of two
    for (int g = 0; g < T::kGroups; ++g) bits |= T::group_weight(g) < 0 ? -T::group_weight(g) : T::group_weight(g);
    int s = 0;
    while (s < 30 && ((bits >> s) & 1) == 0) ++s;
    return s;
  }
  // The sum from its staged value v, and with the corrections.
  static __device__ __forceinline__ u32 unstage(u32 v) {
    constexpr int kShift = stage_shift();
    return v << kShift;
  }
  static __device__ __forceinline__ i32 corrected(const Prob& prob, u32 v, int o, const ConvColumn& col) {
    return static_cast<i32>(unstage(v) + prob.correction(o, col));
  }

  // The chain's output of channel o from its staged value v (the plain int32 output: the sum
  // plus the corrections).
  static __device__ __forceinline__ typename E::Final value(const Prob& prob, u32 v, int o, const ConvColumn& col) {
    return E::post(E::pre(corrected(prob, v, o, col), o, prob.epi), o, prob.epi);
  }
  // The staged value at byte address a: volatile (after the warpgroup's barrier) but without a
  // memory clobber, so that a quantize's threshold loads may be issued around it.
  static __device__ __forceinline__ u32 staged(u32 a) {
    u32 v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(a));
    return v;
  }

  // One thread's readout of its column from the staging: rows r0, r0 + split, ... of the
  // warpgroup's, a warp store being consecutive output pixels. With split a constant and
  // all 64 rows valid the loop unrolls into immediate offsets: a run-time split and row
  // count cost twice the instructions a row (session 26, ncu: the library kernel executed
  // 1.6x the probe's instructions, most of them here).
  struct Readout {
    u32 stg;                 // the staged value of the warpgroup's row 0 at this column
    u32 prm;                 // row 0's RowParams (kRowParams)
    typename E::Out* y;      // its output (Final, or i16 for the plain int16 output)
    int step;                // output elements between channels (Ho*Wo)
    int row0;                // the warpgroup's first output channel
    int rows;                // its valid rows: 64 unless O ends inside it
    int r0, split;

    template <int kSplit>
    __device__ __forceinline__ void run(const Prob& prob, const ConvColumn& col) const {
      if constexpr (kSplit != 0) {
        if (rows == 64) {
#pragma unroll
          for (int k = 0; k < 64 / kSplit; ++k) store(prob, col, r0 + k * kSplit);
          return;
        }
      }
      for (int r = r0; r < rows; r += split) store(prob, col, r);
    }
    __device__ __forceinline__ void store(const Prob& prob, const ConvColumn& col, int r) const {
      if constexpr (kRowParams) {
        const RowParams p = row_params_at(prm, r);
        const i32 x = corrected(prob, staged(stg + r * kStgPitch * 4), row0 + r, col);
        y[static_cast<i64>(r) * step] = E::post_row(E::pre_row(x, p), p);
      } else {
        u32 v;
        asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(stg + r * kStgPitch * 4) : "memory");
        y[static_cast<i64>(r) * step] = static_cast<typename E::Out>(value(prob, v, row0 + r, col));
      }
    }
  };

  // A quantize chain's readout: one thread a column and 32-row chunk (chunks r0, r0 + split,
  // ... of the warpgroup's two). Each row's code (the channel's thresholds, or the chain's
  // float ops) goes bit by bit into one word a plane, so a chunk is kQBits word stores and
  // one sum where the int32 readout makes 32 stores. Rows past O keep zero bits: every
  // word of the block's 128 channels is written (the output row is whole 128-channel groups).
  struct QuantReadout {
    u32 stg;          // as Readout
    u32 thr;          // row 0's words: thresholds and code table, or RowParams
    u32* dst;         // plane 0's word of the warpgroup's first chunk at this pixel
    i64 plane_words;  // words between planes (Ho*Wo*CW')
    int row0, O, r0, split;
    int zero_words;   // words after the two chunks that are only padding (O <= 64: the row's other 64 channels)
    static constexpr int kWords = kSpread ? 4 : E::kQBits;  // a chunk's words while its rows go in

    // The code of y at row r (channel o): from the row's staged thresholds, else the float ops.
    __device__ __forceinline__ u32 code(const Prob& prob, i32 y, int o, int r) const {
      if constexpr (E::kQThresholds) {
        u32 w[kRowWords];
        const u32 a = thr + r * kStgPitch * 4;
        if constexpr (kRowWords == 2) {
          asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(w[0]), "=r"(w[1]) : "r"(a));
        } else {
#pragma unroll
          for (int k = 0; k < kRowWords; k += 4)
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(w[k]), "=r"(w[k + 1]), "=r"(w[k + 2]), "=r"(w[k + 3])
                         : "r"(a + 4 * k));
        }
        // The table shifted by one code (the spread table: one bit) per threshold y reaches.
        u32 x = w[kRowWords - 1];
        if constexpr (kSpread) {
          // 2-bit codes: the count by a bisection over the ascending thresholds (unused ones
          // INT32_MAX), two compares, a select and two shifts: one instruction fewer than a
          // compare and a shift a threshold (with the pre-shifted table, n128 14x14x256
          // bn+relu+q2 15.9 against 16.7 us, session 48).
          asm("{\n .reg .pred p, q;\n .reg .b32 t;\n setp.ge.s32 p, %1, %3;\n selp.b32 t, %4, %2, p;\n"
              " setp.ge.s32 q, %1, t;\n @p shr.b32 %0, %0, 2;\n @q shr.b32 %0, %0, 1;\n}\n"
              : "+r"(x)
              : "r"(y), "r"(w[0]), "r"(w[1]), "r"(w[2]));
        } else {
          // Else an ISETP and a predicated SHF a threshold (a count of the compares, then one
          // shift, took 2-3 more).
#pragma unroll
          for (int k = 0; k < kRowWords - 1; ++k)
            asm("{\n .reg .pred p;\n setp.ge.s32 p, %1, %2;\n @p shr.b32 %0, %0, %3;\n}\n"
                : "+r"(x)
                : "r"(y), "r"(w[k]), "n"(E::kQBits));
        }
        return x;  // the code in its low kQBits bits (spread: bits 0 and 16), the higher codes above
      } else {
        const RowParams p = row_params_at(thr, r);
        return quantize_code<E>(static_cast<float>(E::post_row(E::pre_row(y, p), p)), p.q_scale, p.q_zero);
      }
    }
    __device__ __forceinline__ void row(const Prob& prob, const ConvColumn& col, int chunk, int r,
                                        u32 (&word)[kWords]) const {
      const int o = row0 + 32 * chunk + r;
      const u32 v = staged(stg + (32 * chunk + r) * kStgPitch * 4);
      const u32 c = code(prob, corrected(prob, v, o, col), o, 32 * chunk + r);
      if constexpr (kSpread) {
        // Rows 8q..8q+7 in word q: the row's table comes shifted by r % 8, so its code's two
        // plane bits sit at bits r % 8 and 16 + r % 8, and one LOP3 takes them in.
        const u32 bits = c & (0x00010001u << (r & 7));
        // (As masks: at a run-time r, as past O, the compiler made `if (r >> 3 == q)` an indexed
        // store to local memory.)
#pragma unroll
        for (int q = 0; q < 4; ++q) word[q] |= bits & (0u - static_cast<u32>(r >> 3 == q));
      } else {
        // Bit s of the code to bit r of plane s's word: a shift and one LOP3 ((a & m) | b).
#pragma unroll
        for (int s = 0; s < E::kQBits; ++s) word[s] |= (r >= s ? c << (r - s) : c >> (s - r)) & (1u << r);
      }
    }
    // The spread form's four words of 8 rows of both planes -> each plane's 32 rows.
    static __device__ __forceinline__ void planes(u32 (&word)[kWords]) {
      if constexpr (kSpread) {
        // Plane 0's byte of each word of 8 rows, then plane 1's (bytes 0 and 2).
        const u32 lo = __byte_perm(word[0], word[1], 0x6240), hi = __byte_perm(word[2], word[3], 0x6240);
        word[0] = __byte_perm(lo, hi, 0x5410);
        word[1] = __byte_perm(lo, hi, 0x7632);
      }
    }
    // pending: where this tile's sum goes into the scratch, the add is stashed there, to be
    // issued at the thread's next tile's start (consume; epilogue.cuh's PixelSumAdd).
    __device__ __forceinline__ void run(const Prob& prob, const ConvColumn& col, PixelSumAdd& pending) const {
      i32 sum = 0;
      for (int chunk = r0; chunk < 2; chunk += split) {
        u32 word[kWords] = {};
        const int valid = O - (row0 + 32 * chunk);
        if (valid >= 32) {
#pragma unroll
          for (int r = 0; r < 32; ++r) row(prob, col, chunk, r, word);
        } else {
          for (int r = 0; r < valid; ++r) row(prob, col, chunk, r, word);
        }
        planes(word);
#pragma unroll
        for (int s = 0; s < E::kQBits; ++s) {
          dst[s * plane_words + chunk] = word[s];
          sum += plane_weight(E::kQBits, E::kQEnc, s) * __popc(word[s]);
        }
      }
      if (r0 == 0)
        for (int w = 2; w < 2 + zero_words; ++w)
#pragma unroll
          for (int s = 0; s < E::kQBits; ++s) dst[s * plane_words + w] = 0u;
      // Into the output's scratch (threads past chunk 1 hold no rows and do not count), or
      // into sums the runner zeroed (rules::quantize_sums_path).
      if (prob.epi.sum_scratch) {
        if (r0 < 2) pending.stash(col.p, sum);
      } else if (sum != 0) {
        atomicAdd(prob.epi.out_sum + col.p, sum);
      }
    }
  };

  template <int kSlices>
  static __device__ void consume(const Layout& L, const Prob& prob, const HaloGeometry& geo, int m0, int first, int step,
                                 int tiles, const TmaMap* ymap) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2, tid = threadIdx.x & 127;
    const int g = lane >> 2, tig = lane & 3;
    // W and X K-major in the 32- or 64-byte swizzle: SBO 8 rows, a k256 slice a row or its half
    // (the second half 32 bytes on; LBO unused); X read shifted by whole rows.
    // kSlices 0 (one chunk): W and X non-swizzled in 16-byte rows, SBO 128, each pair's LBO its own.
    constexpr int kRow = row_bytes(kSlices == 0 ? 1 : 2 * kSlices), kPerRow = kRow / 32 > 0 ? kRow / 32 : 1,
                  kBoxes = kSlices / kPerRow;
    constexpr u32 kWSwizzle = kRow == 64 ? 2 : (kRow == 32 ? 3 : 0);  // 2 the 64-byte swizzle, 3 the 32-byte, 0 none
    // O <= 64: the warpgroups take alternate tiles, both with W's rows 0-63 (as one warpgroup
    // a tile, the other's rows were past O: its wgmmas were wasted and it idled through the
    // readout, which the layers with 64 channels are bound by).
    const bool alternate = prob.a_rows <= 64;
    const int a_row = alternate ? 0 : wg * 64;  // this warpgroup's first row of the M tile
    const ptx::WgmmaDesc da = ptx::wgmma_desc(L.w + a_row * kRow, kSlices == 0 ? 0 : 16, 8 * kRow, kWSwizzle);
    const ptx::WgmmaDesc db = ptx::wgmma_desc(L.stages, kSlices == 0 ? 0 : 16, 8 * kRow, kWSwizzle);
    const u32 hi = da.hi;  // both descriptors' high word: W's and X's rows share SBO and swizzle
    const u32 stg = L.staging + wg * kStgBytes;
    const int O = prob.a_rows, HoWo = prob.Ho * prob.Wo, row0 = m0 + a_row;
    // This thread's readout column j of the grid and its rows r0, r0 + split, ...
    const int cols = geo.rows * geo.pw, split = 128 / cols;
    const int j = tid % cols, r0 = tid / cols, jr = j / geo.pw, jw = j - jr * geo.pw;
    const bool reads = r0 < split && jw < prob.Wo;
    // A pixel's quantized readouts: each M tile's, by both warpgroups (one where they take
    // alternate tiles), by up to two threads each (one a 32-row chunk).
    const int arrivals = (O + 127) / 128 * (alternate ? 1 : 2) * min(split, 2);
    if constexpr (kRowWords > 0) {
      // Published to the readout by the first tile's staging barrier.
      const int o = row0 + tid;
      if (tid < 64 && o < O) {
        const u32 a = stg + (tid * kStgPitch + kBN) * 4;
        if constexpr (E::kQThresholds) {
          ChannelThresholds<E> th;
          th.load(prob.epi, o);
#pragma unroll
          for (int k = 0; k < kRowWords - 1; ++k)
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a + 4 * k), "r"(th.t[k]) : "memory");
          u32 table;
          if constexpr (kSpread) table = th.spread_table() << (tid & 7);  // QuantReadout::row
          else table = th.code_table();
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a + 4 * (kRowWords - 1)), "r"(table) : "memory");
        } else {
          const RowParams p = row_params<E>(prob.epi, o);
          asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "f"(p.scale), "f"(p.bias), "f"(p.q_scale),
                       "f"(p.q_zero)
                       : "memory");
        }
      }
    }
    if constexpr (kSlices == 0) {
      // The zero box (the ninth position's partner), this warpgroup's 64 rows, made visible
      // to the wgmmas (the async proxy) before any reads it.
      const u32 z = L.w + T::kWBits * kPositions * kPosW + a_row * 16 + tid * 8;
      asm volatile("st.shared.v2.b32 [%0], {%1, %1};\n" ::"r"(z), "r"(0u) : "memory");
      ptx::fence_proxy_async();
      ptx::named_barrier(1 + wg, 128);
    }
    ptx::mbar_wait(L.wfull, 0);
    if (wg == 1 && !alternate) ptx::named_barrier(3, 256);  // the skew: after warpgroup 0's first wgmmas
    Acc acc;
    PixelSumAdd pending;  // QuantReadout's
    // The block's tiles first, first + step, ...: i counts them (the pipeline slot and phase).
    const int i_step = alternate ? 2 : 1;
    int i = alternate ? wg : 0;
    for (int t = first + i * step; t < tiles; t += i_step * step, i += i_step) {
      const int slot = i % T::kStages, n = geo.image_of_tile.div(t), ho0 = (t - n * geo.row_tiles) * geo.rows;
      // The column's table entry; its pixsum loads are issued here and summed after the
      // mainloop (summed here, each thread would wait for them before its first wgmma).
      ConvColumn col{0, 0, -1, -1};
      i32 pix[kPositions] = {};
      if (reads && ho0 + jr < prob.Ho)
        col = prob.visit_pixel(n, ho0 + jr, jw, [&](int k, i64 p) {
          if (Prob::kColsum) pix[k] = prob.pixsum[p];
        });
      if constexpr (E::kQuantize) pending.issue(prob.epi);  // the previous tile's sum
      ptx::mbar_wait(L.full(i), L.full_parity(i));
      fence_acc(acc);
      ptx::wgmma_fence();
      const u32 b_slot = db.lo + static_cast<u32>((slot * L.stage_bytes) >> 4);
      if constexpr (kSlices == 0) {
        // Five k256 slices of two positions. Descriptor LBOs (bits 16-29 of the low word, in
        // 16 bytes): W's between the two positions' boxes, X's one column or grid row.
#pragma unroll
        for (int k = 0; k < kPairs; ++k) {
          int pa, pb, phase, dr, dc, same_phase, dr_b, dc_b;  // pair() keeps both on one phase grid
          pair(k, pa, pb);
          position(pa, phase, dr, dc);
          position(pb < 0 ? pa : pb, same_phase, dr_b, dc_b);
          const u32 lbo_x = pb < 0 ? 1u : static_cast<u32>((dr_b - dr) * geo.pw + (dc_b - dc));
          const u32 shift = static_cast<u32>(dr * geo.pw + dc);
#pragma unroll
          for (int s = 0; s < T::kWBits; ++s) {
            const int wa = s * kPositions + pa, wb = pb < 0 ? T::kWBits * kPositions : s * kPositions + pb;
            const u32 a = da.lo + static_cast<u32>((wa * kPosW) >> 4) + (static_cast<u32>(((wb - wa) * kPosW) >> 4) << 16);
#pragma unroll
            for (int x = 0; x < T::kXBits; ++x) {
              const u32 b = b_slot + static_cast<u32>(((x * kPhases + phase) * geo.slot_bytes) >> 4) + shift + (lbo_x << 16);
#pragma unroll
              for (int r = 0; r < T::repeat(s, x); ++r)
                ptx::WgmmaB1<kBN>::mma(acc[T::group_of(s, x)][0], a, b, hi,
                                       k != 0 || r > 0 || !first_of_group<T>(s, x));
            }
          }
        }
      }
#pragma unroll
      for (int pos = 0; pos < (kSlices == 0 ? 0 : kPositions); ++pos) {
        int phase, dr, dc;
        position(pos, phase, dr, dc);
        const u32 shift = static_cast<u32>((dr * geo.pw + dc) * (kRow / 16));  // whole rows, in 16 bytes
#pragma unroll
        for (int k = 0; k < kSlices; ++k) {
          const bool first_step = pos == 0 && k == 0;
#pragma unroll
          for (int s = 0; s < T::kWBits; ++s) {
            const u32 a =
                da.lo + static_cast<u32>(((((s * kPositions + pos) * kBoxes + k / kPerRow) * 128 * kRow) + (k % kPerRow) * 32) >>
                                         4);
#pragma unroll
            for (int x = 0; x < T::kXBits; ++x) {
              // Slice k: its row's box (in the slots of its chunks), 32 bytes in for a row's second.
              const u32 b = b_slot +
                            static_cast<u32>(((((x * kPhases + phase) * L.chunks + k / kPerRow * (kRow / 16)) * geo.slot_bytes) +
                                              (k % kPerRow) * 32) >> 4) +
                            shift;
#pragma unroll
              for (int r = 0; r < T::repeat(s, x); ++r)
                ptx::WgmmaB1<kBN>::mma(acc[T::group_of(s, x)][0], a, b, hi,
                                       !first_step || r > 0 || !first_of_group<T>(s, x));
            }
          }
        }
      }
      ptx::wgmma_commit();
      fence_acc(acc);
      ptx::wgmma_wait<0>();
      fence_acc(acc);
      if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(L.empty0 + 8 * slot) : "memory");
      if (i < i_step) {  // the warpgroup's first tile
        if (wg == 0 && !alternate) ptx::named_barrier_arrive(3, 256);
        ptx::allow_dependent_launch();
      }
      if constexpr (kMapOut) {
        if (ymap != nullptr) {
          store_by_map(acc, stg, ymap, prob, geo, col, pix, r0, jr * prob.Wo + jw, jw < prob.Wo, n, ho0, row0);
          continue;
        }
      }
      ptx::named_barrier(1 + wg, 128);  // the last tile's readout is done with the staging
      // Where the map's store shares this body, this thread's fragment position once and each
      // (ni, half) an immediate offset from it: else ptxas rebuilt each address from r | c (45
      // more instructions a tile; v2's readout layers ran 5-12% slower, session 50). The chains
      // keep the per-store form, which ran 1.6% faster on 14x14x256 bn+relu+q2 (session 51).
      const u32 frag = stg + (((warp & 3) * 16 + g) * kStgPitch + 2 * tig) * 4;
#pragma unroll
      for (int ni = 0; ni < kBN / 8; ++ni)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          constexpr int kShift = stage_shift();
          const u32 v0 = Frag::template combine<kShift>(acc, 0, ni, 2 * half),
                    v1 = Frag::template combine<kShift>(acc, 0, ni, 2 * half + 1);
          const int r = (warp & 3) * 16 + g + 8 * half, c = 8 * ni + 2 * tig;
          const u32 at = kMapOut ? frag + (8 * half * kStgPitch + 8 * ni) * 4 : stg + (r * kStgPitch + c) * 4;
          asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(at), "r"(v0), "r"(v1) : "memory");
        }
      ptx::named_barrier(1 + wg, 128);
      // The add issued at this tile's start has come back under its mainloop (every thread
      // settles, so that none issues an add twice where its column is empty this tile).
      if constexpr (E::kQuantize) pending.settle(prob.epi, arrivals);
      if (col.p >= 0) {
#pragma unroll
        for (int k = 0; k < kPositions; ++k) col.colsum += pix[k];
        if constexpr (E::kQuantize) {
          // Output pixel col.p = n * Ho*Wo + pix of the packed layout (conv_layout.h, CW' = out_cw).
          u32* planes = static_cast<u32*>(prob.epi.out);
          const i64 plane_words = static_cast<i64>(HoWo) * prob.out_cw;
          u32* dst = planes + (static_cast<i64>(n) * (E::kQBits - 1) * HoWo + col.p) * prob.out_cw + row0 / 32;
          QuantReadout{stg + j * 4, stg + kBN * 4, dst, plane_words, row0, O, r0, split, alternate ? 2 : 0}
              .run(prob, col, pending);
        } else {
          auto* y = static_cast<typename E::Out*>(prob.epi.out);
          const Readout out{stg + j * 4, stg + kBN * 4, y + (col.out + row0 * HoWo), HoWo, row0, min(64, O - row0), r0, split};
          switch (split) {
            case 1: out.run<1>(prob, col); break;
            case 2: out.run<2>(prob, col); break;
            case 4: out.run<4>(prob, col); break;
            default: out.run<0>(prob, col); break;
          }
        }
      }
    }
    if constexpr (E::kQuantize) {
      pending.issue(prob.epi);
      pending.settle(prob.epi, arrivals);
    }
    // The warpgroup's boxes have reached global memory before the block ends (the next
    // kernel's dependency wait waits for the block, not for its bulk stores).
    if constexpr (kMapOut)
      if (ymap != nullptr && tid == 0) ptx::bulk_wait<0>();
  }

  // A word to shared memory at addr where the pair's dense pixel d is on the box (d >= 0).
  static __device__ __forceinline__ void store_on_box(u32 addr, u32 d, u32 v) {
    asm volatile("{\n .reg .pred p;\n setp.ge.s32 p, %2, 0;\n @p st.shared.b32 [%0], %1;\n}\n" ::"r"(addr), "r"(v), "r"(d)
                 : "memory");
  }

  // kMapOut: a tile's sums into the dense box and out through the copy engine (one thread).
  // Past the densest box a table a fragment column pair: both columns' terms and the pair's
  // dense pixel (-1 off the box). Threads 0..kBN-1 write their column's entry (a column
  // owner, r0 0, its term and pixel; the columns past the grid's a term 0 and pixel -1);
  // after the barrier every thread reads its pairs' entries and stages both its rows there.
  static __device__ __forceinline__ void store_by_map(const Acc& acc, u32 stg, const TmaMap* ymap, const Prob& prob,
                                                      const HaloGeometry& geo, const ConvColumn& col,
                                                      const i32 (&pix)[kPositions], int r0, int dense, bool in_row,
                                                      int n, int ho0, int row0) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, tid = threadIdx.x & 127, wg = warp >> 2;
    const int g = lane >> 2, tig = lane & 3;
    const u32 table = stg + 64 * kBN * 4;  // 16 bytes a column pair, kBN * 8 in all, within the pitch's spare words
    const int Wo = prob.Wo, box = geo.rows * Wo;
    if (tid < kBN) {
      const bool owner = r0 == 0;  // tid < cols: the thread of column j = tid
      u32 term = 0;
      if (owner) {
        i32 sum = col.colsum;
#pragma unroll
        for (int k = 0; k < kPositions; ++k) sum += pix[k];
        term = static_cast<u32>(T::kOffsetW) * static_cast<u32>(sum);
      }
      const u32 entry = table + 16 * (tid >> 1);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(entry + 4 * (tid & 1)), "r"(term) : "memory");
      if ((tid & 1) == 0)
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(entry + 8), "r"(owner && in_row ? dense : -1) : "memory");
    }
    if (tid == 0) ptx::bulk_wait_read<0>();  // the last box has left the staging
    ptx::named_barrier(1 + wg, 128);
    // Fragment columns c, c + 1 = 8 ni + 2 tig: the pair's entry gives both terms and its
    // pixel in the box, so a pair costs a load, two address adds and the stores' predicate
    // (int16) or their addresses' select (int32).
    // Stepping the grid's row and column a pair instead, the one-chunk variant (56x56x64's
    // and 28x28x128's) took 430 / 494 instructions (int32 / int16) from its last wgmma to the
    // box's store, against 338 / 354 here (SASS, host; session 50).
    constexpr int kE = sizeof(typename E::Out);
    const int r = (warp & 3) * 16 + g;
    const u32 a0 = stg + r * box * kE, b0 = a0 + 8 * box * kE, pairs = table + 16 * tig;
    // int16: the entries of four pairs are loaded before their stores. Each load is an asm
    // volatile ordered after the previous stores, so with one pair a load each store waits on
    // its load (short scoreboard, ncu). Session 51: four ahead ran 56x56x64 and 28x28x128
    // int16 3-7% faster but their int32 1-2% slower (not profiled: int32's pairs hold twice
    // the sums in registers), so int32 keeps one pair a load.
    constexpr int kPairs = kBN / 8, kBatch = kE == 2 ? 4 : 1;
#pragma unroll
    for (int n0 = 0; n0 < kPairs; n0 += kBatch) {
      u32 t0[kBatch], t1[kBatch], d[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k)
        if (n0 + k < kPairs)
          asm volatile("ld.shared.v4.b32 {%0, %1, %2, _}, [%3];\n"
                       : "=r"(t0[k]), "=r"(t1[k]), "=r"(d[k])
                       : "r"(pairs + 64 * (n0 + k))
                       : "memory");
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        const int ni = n0 + k;
        if (ni >= kPairs) break;
        const u32 v00 = Frag::combine(acc, 0, ni, 0) + t0[k], v01 = Frag::combine(acc, 0, ni, 1) + t1[k],
                  v10 = Frag::combine(acc, 0, ni, 2) + t0[k], v11 = Frag::combine(acc, 0, ni, 3) + t1[k];
        const u32 a = a0 + d[k] * kE, b = b0 + d[k] * kE;
        if constexpr (kE == 2) {
          store_on_box(a, d[k], __byte_perm(v00, v01, 0x5410));
          store_on_box(b, d[k], __byte_perm(v10, v11, 0x5410));
        } else {
          // A pair off the box stores to this thread's 8 bytes past the table, not under a
          // predicate: the predicated stores compiled to a branch a pair (BSSY / BSYNC) with
          // the next pair's load behind it; session 52 ran 28x28x128 20.40 us against 22.06,
          // 3x3/2 56->28 24.46 against 25.44. int16's predicated stores stay: the spill ran
          // them 0.3-1.3% slower.
          static_assert(64 * kBN * 4 + kBN * 8 + 128 * 8 <= kStgBytes, "halo core: the map's table and spill past the box");
          const u32 spill = table + kBN * 8 + tid * 8;
          const bool on_box = static_cast<int>(d[k]) >= 0;
          asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(on_box ? a : spill), "r"(v00), "r"(v01) : "memory");
          asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(on_box ? b : spill), "r"(v10), "r"(v11) : "memory");
        }
      }
    }
    ptx::fence_proxy_async();  // the copy engine reads what these threads wrote
    ptx::named_barrier(1 + wg, 128);
    if (tid == 0) {
      ptx::tma_store_3d(ymap, ho0 * Wo, row0, n, stg);
      ptx::bulk_commit();
    }
  }
};

template <class T>
__device__ __forceinline__ void conv_sm90a_halo(u32* smem, const TmaMap* wmap, const TmaMap* xmap, const i32* rowsum,
                                                const i32* possum, const i32* pixsum, const EpilogueArgs& epi, int O, int N,
                                                int C, int H, int W, int Ho, int Wo, int CW, const ConvDivisors& dv,
                                                const HaloGeometry& geo, const TmaMap* ymap) {
  using Prob = typename ConvSm90aHalo<T>::Prob;
  const int P = N * Ho * Wo;
  // The problem's operand pointers and gather plan are not used: only its epilogue terms.
  const Prob prob{nullptr, 0,  O,  0,  0,  nullptr, rowsum, possum, pixsum, epi, smem, C, H, W, Ho, Wo, CW, P, Ho, Wo,
                  P,       Ho * Wo, (O + 127) / 128 * 4, 0, 0, dv};
  ConvSm90aHalo<T>::run(smem, wmap, xmap, prob, N, CW, geo, ymap);
}

}  // namespace apnn
