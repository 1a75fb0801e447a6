// APConv as an implicit GEMM on the binary core: rows = output channels (weights,
// [s][o][kh][kw][cw]), columns = output pixels (n, ho, wo), K = (kh, kw, channel words).
// The X tile is gathered from the channel-major layout (conv_layout.h): each 16-byte
// chunk is 128 channels of one input pixel. Padded positions are zero-filled, which
// removes them from every AND product; the epilogue then corrects offset encodings
// over the valid positions only (input-aware padding: a padded value is 0 for every
// encoding, also for +-1 activations where 0 has no bit pattern):
//   Y = sum_g w_g*acc_g + beta_w*colsum[p] + beta_x*SWvalid(o,p) + beta_w*beta_x*C*nvalid[p]
// colsum (the activations' plane-weighted popcount over the valid window positions) and
// nvalid (how many positions are valid) are worked out per tile column at the start of the
// block into a table in shared memory, after the pipeline and staging buffers: a separate
// kernel for them cost a dependent launch per conv.
// Traits add kKh kKw kSh kSw kPh kPw.
#pragma once
#include "epilogue.cuh"
#include "fast_div.cuh"
#include "gemm_sm80.cuh"

namespace apnn {

// One tile column's entry of the column table: the offset corrections' terms, and where its
// conv pixel goes (worked out once per tile, so the epilogue does no divisions).
struct alignas(16) ConvColumn {
  i32 colsum;  // the activations' plane-weighted popcount over the valid window positions
  i32 nvalid;  // valid window positions
  i32 p;       // the conv pixel (n*Ho + ho)*Wo + wo, or -1 for a column without one
  i32 out;     // its NCHW output offset for channel 0, n*O*Ho*Wo + ho*Wo + wo, or -1
};

// The launch's divisors (engine/conv_runner.cpp fills them): the index math of the gather
// plan, the column table and the tile order divides by these only.
struct ConvDivisors {
  FastDiv howo, wo;    // conv pixel -> (image, row, column)
  FastDiv out_hw, wp;  // pooled pixel -> (image, row, column); Ho*Wo and Wo without a pool
  FastDiv cw;          // K word -> (kernel position, word of the pixel's channels)
  FastDiv tiles_m;     // tile -> (M tile, column tile) on the persistent core
};
static_assert(sizeof(ConvDivisors) == 48, "engine/conv_runner.cpp's ConvKernelDivisors mirrors this layout");

// Core: the binary core that loads the tiles (GemmSm80, or GemmSm90a in conv_sm90a.cuh);
// the accumulator fragment is GemmSm80's shape on both (Frag).
template <class T, class CoreT = GemmSm80<T>>
struct ConvProblem {
  using Core = CoreT;
  using Frag = GemmSm80<T>;
  using E = typename T::Epi;
  static constexpr int kKHW = T::kKh * T::kKw;
  // A fused pool maps each window's kSS conv pixels to adjacent tile columns, so the tile
  // holds kOutPerTile whole windows (the rest of its columns idle).
  static constexpr int kSS = E::kPool ? E::kPoolSize * E::kPoolSize : 1;
  static constexpr int kOutPerTile = T::kBN / kSS;
  const u32* __restrict__ a_planes;
  i64 a_plane_stride;
  int a_rows, a_ld, k_words;  // O, Kh*Kw*CW, Kh*Kw*CW
  const u32* __restrict__ xp;
  const i32* __restrict__ rowsum;
  const i32* __restrict__ possum;
  const i32* __restrict__ pixsum;  // per input pixel: the activations' plane-weighted popcount
  EpilogueArgs epi;
  u32* smem;
  int C, H, W, Ho, Wo, CW, P;  // P = N*Ho*Wo conv output pixels
  int Hp, Wp;                  // output after pooling (Ho, Wo without a pool)
  int out_pixels, out_hw, out_cw;
  // The tile of output columns (pixels) this block computes and its tile of output channels
  // (the tile being computed, on the persistent core: conv_sm90a.cuh's begin_tile).
  mutable int col_tile, m_tile;
  ConvDivisors dv;

  // Conv pixel p = (n*Ho + ho)*Wo + wo -> (n, ho, wo).
  __device__ __forceinline__ void split_pixel(int p, int& n, int& ho, int& wo) const {
    n = dv.howo.div(p);
    const int r = p - n * (Ho * Wo);
    ho = dv.wo.div(r);
    wo = r - ho * Wo;
  }

  // The conv pixel (n, ho, wo) that column c of tile `tile` computes; false if none.
  __device__ __forceinline__ bool column_pixel(int tile, int c, int& n, int& ho, int& wo) const {
    if constexpr (!E::kPool) {
      const int p = tile * T::kBN + c;
      if (p >= P) return false;
      split_pixel(p, n, ho, wo);
    } else {
      const int j = c / kSS, k = c - j * kSS;
      const int q = tile * kOutPerTile + j;
      if (j >= kOutPerTile || q >= out_pixels) return false;
      n = dv.out_hw.div(q);
      const int r = q - n * out_hw, hp = dv.wp.div(r), wp = r - hp * Wp;
      ho = hp * E::kPoolStride + k / E::kPoolSize;
      wo = wp * E::kPoolStride + k % E::kPoolSize;
    }
    return true;
  }

  // The X-tile gather. A thread's 16-byte chunks always sit in chunk column
  // tid % kChunksPerRow of tile rows tid / kChunksPerRow + i*kRowStep, so its pixels repeat
  // every kPix rows: their coordinates are worked out once per block (plan_columns), and a
  // K step costs one division (the kernel position of the thread's K word) instead of
  // several per chunk (device run 3 of session 3: integer index math was 60% of the issued
  // instructions, BMMA 2%). The plan packs a window's corner into 16-bit halves and indexes
  // pixels in 32 bits, so it is used only where both fit (plan_fits); other shapes take the
  // per-chunk path.
  static constexpr int kRowStep = Core::kThreads / Core::kChunksPerRow;
  static constexpr int kPix = kRowStep >= T::kBN ? 1 : T::kBN / kRowStep;
  static constexpr bool kPlanned = Core::kThreads % Core::kChunksPerRow == 0 &&
                                   (kRowStep % T::kBN == 0 || T::kBN % kRowStep == 0) && kPix <= 8;
  static constexpr int kNoPixel = -0x4000;  // an input row no kernel position reaches
  // The plan of the column tile being loaded (the persistent core loads ahead, across tiles).
  mutable int pix_base[kPix];  // (n*q*H + hi0)*W + wi0: plane 0's pixel index of kernel position (0, 0)
  mutable int pix_hw[kPix];    // hi0 << 16 | (wi0 & 0xffff), the top-left input pixel of the window
  mutable bool planned;        // plan_columns filled the plan (kPlanned and plan_fits)
  // The thread's K position (kernel position, word of the pixel's channels) for the K step
  // that starts at word k_next, carried from step to step: a division by CW per step was
  // about 25 of a step's 160 instructions per warp on the N=1 convs (session 7, call 1).
  mutable int k_next, k_pos, k_cw;
  mutable int step_pos, step_cw;  // one K step of Core::kRowWords words: whole kernel positions, then words

  // One X-tile chunk: 16 bytes from src, or zeros where !ok. Where kernel positions overlap,
  // one chunk holds a pixel's channels (C <= 128, so a K step spans several positions) and
  // the tile has at least 32 columns, the tile's columns read the same input pixels within a
  // step, and the copies go through L1, which serves the repeats (session 11, device calls
  // 5-6: n128-56x56x64 w1a2 115.6 -> 82.1 us, 28x28x128 42.6 -> 34.1; with C = 256 even,
  // with C = 512 up to 7% slower, 1x1 convs even, the N=1 C=128 layer's 8-column tiles 20%
  // slower).
  static constexpr bool kL1Gather = (T::kKh > T::kSh || T::kKw > T::kSw) && T::kBN >= 32;
  __device__ __forceinline__ void gather_chunk(void* dst, const u32* src, bool ok) const {
    if (kL1Gather && CW <= 4) {
      ptx::cp_async_16_l1(dst, ok ? src : xp, ok ? 16 : 0);
    } else {
      ptx::cp_async_16(dst, ok ? src : xp, ok ? 16 : 0);
    }
  }

  // H and W below 2^15 (16-bit corner halves), and every pixel index of the N*q planes below 2^31.
  static __device__ __forceinline__ bool plan_fits(int N, int H, int W) {
    return H < 0x8000 && W < 0x8000 && static_cast<i64>(N) * T::kXBits * H * W + static_cast<i64>(H) * W < (i64{1} << 31);
  }

  __device__ __forceinline__ void plan_columns(int n0, int N) const {
    planned = false;
    if constexpr (kPlanned) {
      if (!plan_fits(N, H, W)) return;
      planned = true;
      k_next = -1;
      step_pos = dv.cw.div(Core::kRowWords);
      step_cw = Core::kRowWords - step_pos * CW;
      const int r0 = static_cast<int>(threadIdx.x) / Core::kChunksPerRow;
#pragma unroll
      for (int j = 0; j < kPix; ++j) {
        int n = 0, ho = 0, wo = 0;
        const bool ok = column_pixel(n0 / T::kBN, (j * kRowStep + r0) % T::kBN, n, ho, wo);
        const int hi0 = ok ? ho * T::kSh - T::kPh : kNoPixel, wi0 = wo * T::kSw - T::kPw;
        pix_base[j] = (n * T::kXBits * H + hi0) * W + wi0;
        pix_hw[j] = static_cast<int>(static_cast<u32>(hi0) << 16 | (static_cast<u32>(wi0) & 0xffffu));
      }
    }
  }

  __device__ __forceinline__ void load_b(u32* dst, int n0, int kword0) const {
    constexpr int kChunks = Core::kRowsB * Core::kChunksPerRow;
    if constexpr (kPlanned) {
      if (planned) {
        load_b_planned(dst, kword0);
        return;
      }
    }
    const int tile = n0 / T::kBN;
    for (int c = threadIdx.x; c < kChunks; c += Core::kThreads) {
      const int row = c / Core::kChunksPerRow;
      const int col = c % Core::kChunksPerRow;
      const int t = row / T::kBN;
      const int kword = kword0 + col * 4;
      int n = 0, ho = 0, wo = 0;
      bool ok = kword < k_words && column_pixel(tile, row % T::kBN, n, ho, wo);
      const u32* src = xp;
      if (ok) {
        const int pos = dv.cw.div(kword), cw = kword - pos * CW;
        const int kh = pos / T::kKw, kw = pos - kh * T::kKw;
        const int hi = ho * T::kSh - T::kPh + kh, wi = wo * T::kSw - T::kPw + kw;
        ok = hi >= 0 && hi < H && wi >= 0 && wi < W;
        src = xp + ((static_cast<i64>(n * T::kXBits + t) * H + hi) * W + wi) * CW + cw;
      }
      gather_chunk(Core::chunk(dst, row, col), src, ok);
    }
  }

  __device__ __forceinline__ void load_b_planned(u32* dst, int kword0) const {
    constexpr int kChunks = Core::kRowsB * Core::kChunksPerRow;
    constexpr int kIters = (kChunks + Core::kThreads - 1) / Core::kThreads;
    const int col = static_cast<int>(threadIdx.x) % Core::kChunksPerRow;
    const int r0 = static_cast<int>(threadIdx.x) / Core::kChunksPerRow;
    const int kword = kword0 + col * 4;
    const bool k_ok = kword < k_words;
    int pos = k_pos, cw = k_cw;
    if (kword0 != k_next) {  // not the step after the last one (the block's first step)
      pos = dv.cw.div(kword);
      cw = kword - pos * CW;
    }
    k_next = kword0 + Core::kRowWords;
    k_pos = pos + step_pos;
    k_cw = cw + step_cw;
    if (k_cw >= CW) {
      k_cw -= CW;
      ++k_pos;
    }
    const int kh = pos / T::kKw, kw = pos - kh * T::kKw;
    const int koff = kh * W + kw, plane = H * W;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int row = i * kRowStep + r0;
      if (kChunks % Core::kThreads != 0 && row >= Core::kRowsB) break;
      const int j = i % kPix, t = row / T::kBN;
      const int hi = (pix_hw[j] >> 16) + kh, wi = static_cast<short>(pix_hw[j] & 0xffff) + kw;
      const bool ok = k_ok && static_cast<u32>(hi) < static_cast<u32>(H) && static_cast<u32>(wi) < static_cast<u32>(W);
      const u32* src = xp + static_cast<i64>(pix_base[j] + t * plane + koff) * CW + cw;
      gather_chunk(Core::chunk(dst, row, col), src, ok);
    }
  }

  // Whether tile column c has a conv pixel (the column table, filled before the mainloop).
  __device__ __forceinline__ bool column_valid(int c) const { return column_table()[c].p >= 0; }

  // The column table: a ConvColumn per tile column, after the pipeline's buffers and the
  // staging buffer (rules::kernel_shared_bytes counts kBN * 16 bytes for it).
  static constexpr int kStagingBytes = E::kStaged ? T::kBN * (T::kBM + 4) * 4 : 0;
  static constexpr int kTableOffset = Core::kSmemBytes > kStagingBytes ? Core::kSmemBytes : kStagingBytes;
  __device__ __forceinline__ ConvColumn* column_table() const {
    return reinterpret_cast<ConvColumn*>(reinterpret_cast<char*>(smem) + kTableOffset);
  }

  // Column c's table entry without its colsum, calling f(k, i) for each kernel position k
  // of its window inside the image (i: that input pixel's index into pixsum). Chains without
  // a weight offset never read colsum, and their callers load nothing.
  static constexpr bool kColsum = T::kOffsetW != 0;
  template <class F>
  __device__ __forceinline__ ConvColumn visit_column(int tile, int c, F&& f) const {
    int n = 0, ho = 0, wo = 0;
    if (!column_pixel(tile, c, n, ho, wo)) return ConvColumn{0, 0, -1, -1};
    return visit_pixel(n, ho, wo, f);
  }
  // The same for conv pixel (n, ho, wo) (conv_sm90a_halo.cuh maps its columns itself).
  template <class F>
  __device__ __forceinline__ ConvColumn visit_pixel(int n, int ho, int wo, F&& f) const {
    ConvColumn e{0, 0, -1, -1};
    e.p = (n * Ho + ho) * Wo + wo;
    e.out = n * a_rows * (Ho * Wo) + ho * Wo + wo;
#pragma unroll
    for (int kh = 0; kh < T::kKh; ++kh) {
      const int hi = ho * T::kSh - T::kPh + kh;
      if (hi < 0 || hi >= H) continue;
#pragma unroll
      for (int kw = 0; kw < T::kKw; ++kw) {
        const int wi = wo * T::kSw - T::kPw + kw;
        if (wi < 0 || wi >= W) continue;
        f(kh * T::kKw + kw, (static_cast<i64>(n) * H + hi) * W + wi);
        ++e.nvalid;
      }
    }
    return e;
  }

  // Fills the column table; the mainloop's first barrier publishes it to the epilogue.
  __device__ __forceinline__ void fill_column_table(int tile) const {
    for (int c = threadIdx.x; c < T::kBN; c += Core::kThreads) {
      i32 sum = 0;
      ConvColumn e = visit_column(tile, c, [&](int, i64 i) {
        if (kColsum) sum += pixsum[i];
      });
      e.colsum = sum;
      column_table()[c] = e;
    }
  }

  // The same in two halves, so that the wgmma core can issue the first tile's pixsum loads
  // before the pipeline's first copies and sum them after: their latency then overlaps the
  // copies'. Summed at once, the loads held up the first barrier (12% of the stall samples on
  // n128-56x56x64, session 11 call 5). Only for windows of at most 9 positions: the loaded
  // values stay in registers through the first copies (an 11x11 kernel's 121 spilled).
  static constexpr bool kPrefetchColumns = kKHW <= 9;
  struct ColumnLoads {
    ConvColumn entry;                     // colsum left 0
    i32 v[kPrefetchColumns ? kKHW : 1];  // pixsum at each kernel position inside the image, else 0
  };
  __device__ __forceinline__ void load_column(int tile, int c, ColumnLoads& l) const {
#pragma unroll
    for (int k = 0; k < kKHW && kPrefetchColumns; ++k) l.v[k] = 0;
    l.entry = visit_column(tile, c, [&](int k, i64 i) {
      if (kColsum && kPrefetchColumns) l.v[k] = pixsum[i];
    });
  }
  __device__ __forceinline__ void store_column(int c, const ColumnLoads& l) const {
    ConvColumn e = l.entry;
#pragma unroll
    for (int k = 0; k < kKHW && kPrefetchColumns; ++k) e.colsum += l.v[k];
    column_table()[c] = e;
  }

  // Sum of the weights' plane-weighted popcounts over the kernel positions that fall
  // inside the image for pixel p: rowsum away from the border, else the out-of-line loop.
  __device__ __forceinline__ u32 valid_weight_sum(int o, int p, int nvalid) const {
    return nvalid == kKHW ? static_cast<u32>(rowsum[o]) : border_weight_sum(o, p);
  }
  __device__ __noinline__ u32 border_weight_sum(int o, int p) const {
    int n, ho, wo;
    split_pixel(p, n, ho, wo);
    u32 sum = 0;
    for (int kh = 0; kh < T::kKh; ++kh) {
      const int hi = ho * T::kSh - T::kPh + kh;
      if (hi < 0 || hi >= H) continue;
      for (int kw = 0; kw < T::kKw; ++kw) {
        const int wi = wo * T::kSw - T::kPw + kw;
        if (wi >= 0 && wi < W) sum += static_cast<u32>(possum[o * kKHW + kh * T::kKw + kw]);
      }
    }
    return sum;
  }

  // The corrected int32 conv output of channel o at the tile column whose table entry is col
  // (wrapping u32 arithmetic). col is a copy in registers: read through the table, the
  // entry was loaded again after every output store (session 11, the generated PTX).
  template <class Acc>
  __device__ __forceinline__ u32 corrected(const Acc& acc, int mi, int ni, int e, int o, const ConvColumn& col) const {
    return Frag::combine(acc, mi, ni, e) + correction(o, col);
  }
  // The offset encodings' terms of channel o at the column of entry col (0 without offsets).
  __device__ __forceinline__ u32 correction(int o, const ConvColumn& col) const {
    u32 v = 0;
    if constexpr (T::kOffsetW != 0 || T::kOffsetX != 0) {
      if (T::kOffsetW != 0) v += static_cast<u32>(T::kOffsetW) * static_cast<u32>(col.colsum);
      if (T::kOffsetX != 0) v += static_cast<u32>(T::kOffsetX) * valid_weight_sum(o, col.p, col.nvalid);
      if (T::kOffsetW != 0 && T::kOffsetX != 0)
        v += static_cast<u32>(T::kOffsetW * T::kOffsetX) * static_cast<u32>(C) * static_cast<u32>(col.nvalid);
    }
    return v;
  }

  // The unstaged chains' output value of channel o at the tile column of table entry col:
  // the corrected sum through the chain's ops (epilogue.cuh).
  template <class Acc>
  __device__ __forceinline__ typename E::Final output(const Acc& acc, int mi, int ni, int e, int o,
                                                      const ConvColumn& col) const {
    return E::post(E::pre(static_cast<i32>(corrected(acc, mi, ni, e, o, col)), o, epi), o, epi);
  }

  // For the staged epilogue: tile column c of this block (valid by the caller's check).
  template <class Acc>
  __device__ __forceinline__ u32 value(const Acc& acc, int mi, int ni, int e, int o, int c) const {
    const ConvColumn col = column_table()[c];
    return corrected(acc, mi, ni, e, o, col);
  }
  // The same through a column read once for all of a thread's rows (epilogue.cuh's
  // quantized_store): Column, column(c), valid(column), value(..., column).
  using Column = ConvColumn;
  static constexpr bool kColumnsFirst = false;  // a handle is a shared-memory table entry
  static constexpr bool kRowTerms = true;        // value() may read what row o needs
  __device__ __forceinline__ ConvColumn column(int c) const { return column_table()[c]; }
  __device__ __forceinline__ static bool valid(const ConvColumn& col) { return col.p >= 0; }
  template <class Acc>
  __device__ __forceinline__ u32 value(const Acc& acc, int mi, int ni, int e, int o, const ConvColumn& col) const {
    return corrected(acc, mi, ni, e, o, col);
  }

  __device__ __forceinline__ void store(const i32 (&acc)[T::kGroups][Frag::kMI][Frag::kNI][4], int m_base, int n_base,
                                        int g, int tig) const {
    if constexpr (E::kStaged) {
      staged_store<T, Frag>(*this, acc, m_base, n_base, g, tig, m_tile * T::kBM, col_tile);
    } else {
      store_columns(acc, m_base, n_base - col_tile * T::kBN, g, tig);
    }
  }

  // The unstaged epilogue: the warp's rows from m_base and tile columns from c_base, each
  // column's pixel and output offset read from the column table. Output offsets are int32:
  // every output index is below 2^31 (conv_runner.cpp checks N*O*Ho*Wo), and 64-bit address
  // math per store was about a third of the epilogue's instructions at batch 128 (session 8,
  // device call 1).
  __device__ __forceinline__ void store_columns(const i32 (&acc)[T::kGroups][Frag::kMI][Frag::kNI][4], int m_base,
                                                int c_base, int g, int tig) const {
    if ((Ho * Wo) % 2 == 0) {
      store_column_pairs(acc, m_base, c_base, g, tig);
      return;
    }
    using Out = typename E::Out;  // Final, or i16 for the plain int16 output
    Out* const y = static_cast<Out*>(epi.out);
    const int O = a_rows, HoWo = Ho * Wo;
#pragma unroll
    for (int ni = 0; ni < Frag::kNI; ++ni) {
      const int c = c_base + ni * 8 + 2 * tig;
      const ConvColumn a = column_table()[c], b = column_table()[c + 1];
      // Two neighbouring columns that are neighbouring output elements at an even offset go
      // out as one store (8 bytes, int16 4).
      const bool pair = a.out >= 0 && b.out == a.out + 1;
#pragma unroll
      for (int mi = 0; mi < Frag::kMI; ++mi)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int o = m_base + mi * 16 + g + half * 8;
          if (o >= O) continue;
          const int row = o * HoWo, e = half * 2;
          if (pair) {
            store_pair(y + (row + a.out), output(acc, mi, ni, e, o, a), output(acc, mi, ni, e + 1, o, b),
                       ((row + a.out) & 1) == 0, true);
          } else {
            if (a.out >= 0) y[row + a.out] = static_cast<Out>(output(acc, mi, ni, e, o, a));
            if (b.out >= 0) y[row + b.out] = static_cast<Out>(output(acc, mi, ni, e + 1, o, b));
          }
        }
    }
  }

  // store_columns where Ho*Wo is even. A thread's column pair (c, c+1) starts at an even
  // conv pixel p (tiles and c are even), so p+1 exists whenever p does (N*Ho*Wo is even),
  // lies in the same image, and sits at an even output offset (o*Ho*Wo + n*O*Ho*Wo + p's
  // place in its image): every pair with a pixel is one aligned 8-byte store, with none of
  // the general path's per-pair tests (about half of its instructions, session 11).
  __device__ __forceinline__ void store_column_pairs(const i32 (&acc)[T::kGroups][Frag::kMI][Frag::kNI][4], int m_base,
                                                     int c_base, int g, int tig) const {
    typename E::Out* const y = static_cast<typename E::Out*>(epi.out);
    const int O = a_rows, HoWo = Ho * Wo;
#pragma unroll
    for (int ni = 0; ni < Frag::kNI; ++ni) {
      const int c = c_base + ni * 8 + 2 * tig;
      const ConvColumn a = column_table()[c];
      if (a.out < 0) continue;
      const ConvColumn b = column_table()[c + 1];
#pragma unroll
      for (int mi = 0; mi < Frag::kMI; ++mi)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int o = m_base + mi * 16 + g + half * 8, e = half * 2;
          if (o < O)
            store_pair(y + (o * HoWo + a.out), output(acc, mi, ni, e, o, a), output(acc, mi, ni, e + 1, o, b), true, true);
        }
    }
  }
};

template <class T>
__device__ __forceinline__ void conv_sm80(u32* smem, const u32* wp, const i32* rowsum, const i32* possum, const u32* xp,
                                          const i32* pixsum, const EpilogueArgs& epi, int O, int N, int C, int H, int W,
                                          int Ho, int Wo, int CW, const ConvDivisors& dv) {
  using E = typename T::Epi;
  const int ld = ConvProblem<T>::kKHW * CW;
  const int Hp = E::kPool ? (Ho - E::kPoolSize) / E::kPoolStride + 1 : Ho;
  const int Wp = E::kPool ? (Wo - E::kPoolSize) / E::kPoolStride + 1 : Wo;
  ConvProblem<T> prob{wp, static_cast<i64>(O) * ld, O,  ld, ld, xp, rowsum, possum, pixsum, epi, smem, C, H, W, Ho, Wo, CW,
                      N * Ho * Wo, Hp, Wp, N * Hp * Wp, Hp * Wp, (O + 127) / 128 * 4, static_cast<int>(blockIdx.y),
                      static_cast<int>(blockIdx.x), dv};
  prob.fill_column_table(prob.col_tile);
  prob.plan_columns(prob.col_tile * T::kBN, N);
  GemmSm80<T>::run(smem, prob);
}

}  // namespace apnn
