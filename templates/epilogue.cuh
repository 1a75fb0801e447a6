// Fused epilogue chains on the GEMM core's accumulators (include/apnn/epilogue.h has the
// arithmetic; the CPU reference follows it op for op). The chain is compiled in: the
// generator emits struct Epi with
//   typedefs Staged, Pooled, Final (i32 or float: the value after the ops before pool, after
//   pool, after the ops after pool), Out (the element written: Final, or i16 for the plain
//   int16 output), constants kPlain (no op: the int32 output) kStaged kPool
//   kPoolMax kPoolSize kPoolStride kQuantize kQBits kQEnc kQPerChannel kQThresholds
//   kScaleBias, and the straight-line functions pre(i32 accumulator, o, args) -> Staged and
//   post(Pooled, o, args) -> Final, and pre_row / post_row (the same with the channel's
//   parameters from a RowParams, for kernels that keep them per row).
// A Problem (apmm_sm80.cuh, conv_sm80.cuh) supplies the geometry: output channel o (the
// GEMM row), tile columns, and output pixels q = img * out_hw + pix.
#pragma once
#include "apnn_types.cuh"
#include "ptx_sm80.cuh"

namespace apnn {

// Run-time operands of a chain, one kernel parameter. Unused pointers are null.
struct EpilogueArgs {
  const float* scale;    // scale_bias: [O]
  const float* bias;     // scale_bias: [O]
  const float* q_scale;  // quantize: [1] or [O]
  const float* q_zero;   // quantize: [1] or [O]
  void* out;             // i32 / float values, or (quantize) packed planes
  i32* out_sum;          // quantize: per output pixel sum_s alpha_s*popc
  const i32* thresholds; // quantize by thresholds (Epi::kQThresholds): 2^q words a channel
  // quantize, or null: a word a pixel that the M tiles add their sums to, zero between
  // launches (add_pixel_sum, PixelSumAdd; rules::quantize_sums_path says where); null: they
  // add to out_sum, zeroed before the launch
  unsigned long long* sum_scratch;
};

struct alignas(8) f32x2 { float x, y; };

// Two adjacent outputs, one 8-byte store when both exist and are aligned.
__device__ __forceinline__ void store_pair(i32* out, i32 a, i32 b, bool pair_ok, bool second_ok) {
  if (pair_ok) *reinterpret_cast<i32x2*>(out) = i32x2{a, b};
  else { out[0] = a; if (second_ok) out[1] = b; }
}
__device__ __forceinline__ void store_pair(float* out, float a, float b, bool pair_ok, bool second_ok) {
  if (pair_ok) *reinterpret_cast<f32x2*>(out) = f32x2{a, b};
  else { out[0] = a; if (second_ok) out[1] = b; }
}
// The int16 output (a spec's "output": "int16"): a pair is one 4-byte store.
__device__ __forceinline__ void store_pair(i16* out, i32 a, i32 b, bool pair_ok, bool second_ok) {
  if (pair_ok) *reinterpret_cast<u32*>(out) = (static_cast<u32>(a) & 0xffffu) | (static_cast<u32>(b) << 16);
  else { out[0] = static_cast<i16>(a); if (second_ok) out[1] = static_cast<i16>(b); }
}

// The lowest code of the chain's quantizer before its bits are taken (signed: -2^(q-1)).
template <class E>
inline constexpr i32 kCodeLo = E::kQEnc == kEncSigned ? -(1 << (E::kQBits - 1)) : 0;

// Plane bits of y = clamp(floor((x - z) / s)) (pm1: y = 2k - (2^q - 1), bits = k).
template <class E>
__device__ __forceinline__ u32 quantize_code(float x, float s, float z) {
  constexpr float kLo = static_cast<float>(kCodeLo<E>);
  constexpr float kHi = E::kQEnc == kEncSigned ? static_cast<float>((1 << (E::kQBits - 1)) - 1)
                                                : static_cast<float>((1 << E::kQBits) - 1);
  float t = floorf((x - z) / s);
  t = t < kLo ? kLo : (t > kHi ? kHi : t);
  return static_cast<u32>(static_cast<i32>(t)) & ((1u << E::kQBits) - 1u);
}
template <class E>
__device__ __forceinline__ u32 quantize_code(float x, int o, const EpilogueArgs& a) {
  const int i = E::kQPerChannel ? o : 0;
  return quantize_code<E>(x, a.q_scale[i], a.q_zero[i]);
}

// One output channel's parameters of a chain (zero where the chain has no such op), for a
// kernel that keeps them per row rather than loading them from the arrays for every output:
// Epi::pre_row / post_row and quantize_code(x, p.q_scale, p.q_zero) read them.
struct alignas(16) RowParams {
  float scale, bias, q_scale, q_zero;
};
template <class E>
__device__ __forceinline__ RowParams row_params(const EpilogueArgs& a, int o) {
  RowParams p{0.0f, 0.0f, 0.0f, 0.0f};
  if constexpr (E::kScaleBias) p.scale = a.scale[o], p.bias = a.bias[o];
  if constexpr (E::kQuantize) {
    const int i = E::kQPerChannel ? o : 0;
    p.q_scale = a.q_scale[i], p.q_zero = a.q_zero[i];
  }
  return p;
}

// One channel's quantize thresholds (engine/quantize_thresholds.h has the layout and why they
// are exact), held in registers while the thread quantizes that channel's outputs.
template <class E>
struct ChannelThresholds {
  static constexpr int kSteps = E::kQThresholds ? (1 << E::kQBits) - 1 : 1;  // one word unused on the float path
  i32 t[kSteps];
  i32 base, steps, sign;  // base: the code (level + the encoding's lowest value) at the lowest accumulator
  __device__ __forceinline__ void load(const EpilogueArgs& a, int o) {
    const i32* w = a.thresholds + o * (kSteps + 1);
#pragma unroll
    for (int k = 0; k < kSteps; ++k) t[k] = w[k];
    const i32 h = w[kSteps];
    base = (h & 0xff) + kCodeLo<E>;
    steps = (h >> 8) & 0xff;
    sign = (h >> 16) ? -1 : 1;
  }
  // The number of thresholds at or below accumulator y (its level: base + sign * min(it, steps)).
  __device__ __forceinline__ i32 count(i32 y) const {
    i32 n = 0;
#pragma unroll
    for (int k = 0; k < kSteps; ++k) n += y >= t[k] ? 1 : 0;
    return n;
  }
  // q times the count (the code's place in code_table()) of accumulator y, by bisection over
  // the ascending thresholds where there are 3 or 7: q compares where count() takes 2^q - 1
  // and as many adds.
  __device__ __forceinline__ u32 table_shift(i32 y) const {
    constexpr u32 q = E::kQBits;
    if constexpr (kSteps == 3) {
      const bool b1 = y >= t[1];
      const bool b0 = y >= (b1 ? t[2] : t[0]);
      return (b1 ? 2 * q : 0u) + (b0 ? q : 0u);
    } else if constexpr (kSteps == 7) {
      const bool b2 = y >= t[3];
      const bool b1 = y >= (b2 ? t[5] : t[1]);
      const bool b0 = y >= (b2 ? (b1 ? t[6] : t[4]) : (b1 ? t[2] : t[0]));
      return (b2 ? 4 * q : 0u) + (b1 ? 2 * q : 0u) + (b0 ? q : 0u);
    } else {
      return q * static_cast<u32>(count(y));
    }
  }
  __device__ __forceinline__ u32 code_of_count(i32 n) const {
    return static_cast<u32>(base + sign * min(n, steps)) & ((1u << E::kQBits) - 1u);
  }
  // The codes of every count 0..kSteps, kQBits bits each from bit kQBits * count (at most 24
  // bits): a kernel that keeps them turns a count into a code with one shift.
  __device__ __forceinline__ u32 code_table() const {
    u32 table = 0;
#pragma unroll
    for (int n = 0; n <= kSteps; ++n) table |= code_of_count(n) << (E::kQBits * n);
    return table;
  }
  // For 2-bit codes: bit 0 of count n's code at bit n, bit 1 at bit 16 + n. Shifted right by
  // the count, its bits 0 and 16 are the code's two plane bits (conv_sm90a_halo.cuh's
  // QuantReadout keeps it shifted left by a row's place in 8, so that they land in place).
  __device__ __forceinline__ u32 spread_table() const {
    static_assert(E::kQBits == 2, "spread_table: 2-bit codes");
    u32 table = 0;
#pragma unroll
    for (int n = 0; n <= kSteps; ++n) {
      const u32 c = code_of_count(n);
      table |= (c & 1u) << n | (c >> 1) << (16 + n);
    }
    return table;
  }
};

// Pool over the window's kSS staged columns (row-major), in the reference's order.
template <class E, int kSS, int kLd>
__device__ __forceinline__ typename E::Pooled pool_window(const typename E::Staged* st, int col0, int r) {
  if constexpr (!E::kPool) {
    return st[col0 * kLd + r];
  } else if constexpr (E::kPoolMax) {
    typename E::Staged v = st[col0 * kLd + r];
#pragma unroll
    for (int k = 1; k < kSS; ++k) {
      const typename E::Staged w = st[(col0 + k) * kLd + r];
      v = w > v ? w : v;
    }
    return v;
  } else {
    float s = static_cast<float>(st[col0 * kLd + r]);
#pragma unroll
    for (int k = 1; k < kSS; ++k) s = s + static_cast<float>(st[(col0 + k) * kLd + r]);
    return s / static_cast<float>(kSS);
  }
}

// A quantize chain without a pool: every op is per element, so each thread quantizes its own
// accumulators (up to 3 bits by compares against the channel's accumulator thresholds, else
// through the chain's float ops), stages one code byte per output as [column][row], and then
// one thread per (column, 32 rows) packs each plane's 32 bits with bit arithmetic. The warp
// ballot form (pooled_store, below) cost about 190 instructions per pixel and 32 channels (per-lane 64-bit
// addresses, a division, parameter loads after every shared store), which made the fused
// bn+relu+q2 conv 4.2x slower than the plain int32 one at batch 128 (session 19, call 2).
// kInPipeline: prob.smem is the pipeline's buffers (their copies are waited for first), not a
// region of its own (the persistent wgmma APMM core's, apmm_sm90a.cuh).
// kBarrierThreads: 0 synchronizes the whole block; else named barrier kBarrierId of that many
// threads, the warps that compute (the TMA core's producer warps do not take part).
template <int kBarrierId, int kBarrierThreads>
__device__ __forceinline__ void epilogue_barrier() {
  if constexpr (kBarrierThreads == 0)
    __syncthreads();
  else
    asm volatile("bar.sync %0, %1;\n" ::"n"(kBarrierId), "n"(kBarrierThreads) : "memory");
}

// A pixel's sum where several M tiles add to it, into memory nobody zeroed before the launch:
// each add puts its sum into the high half of the pixel's scratch word and 1 into the low half
// (the count never carries into the sum), and the add that brings the count to `arrivals` (the
// pixel's adds over the launch: one an M tile here, one a 32-row chunk of each M tile in
// pooled_store, more in the halo core's readout) holds
// the total: it stores it and zeroes the word for the next launch. A memset before the
// launch (and the early start it ends) cost a chain 2.3-2.9 us a layer (session 43).
__device__ __forceinline__ unsigned long long pixel_sum_increment(i32 sum) {
  return (static_cast<unsigned long long>(static_cast<u32>(sum)) << 32) | 1ull;
}

// The add that completed a pixel's count: its total to out_sum, the word zeroed for the next
// launch.
__device__ __forceinline__ void finish_pixel_sum(const EpilogueArgs& a, int q, i32 total) {
  a.out_sum[q] = total;
  a.sum_scratch[q] = 0ull;
}

// The add settled at once, a round trip a tile (about 0.3 us): grids of a block a tile
// (mma.sync, the convs, pooled_store's warps a batch of adds at a time) and the TMA core's
// blocks of at most rules::kScratchTilesPerBlock tiles; its longer persistent blocks add to
// out_sum, zeroed first.
__device__ __forceinline__ void add_pixel_sum(const EpilogueArgs& a, int q, i32 sum, int arrivals) {
  const unsigned long long inc = pixel_sum_increment(sum);
  const unsigned long long now = atomicAdd(a.sum_scratch + q, inc) + inc;
  if (static_cast<u32>(now) == static_cast<u32>(arrivals)) finish_pixel_sum(a, q, static_cast<i32>(now >> 32));
}

// The same add for a persistent block (the halo core's readout, APMM on the cp.async wgmma
// core), which does not wait for it: a tile's add is stashed, issued at the thread's next
// tile's start and settled after that tile's mainloop (session 44: 0.7-5.2 us a halo layer;
// issued at the readout, the add's wait landed at the next tile's start, where ptxas shares
// its scoreboard with the first loads).
struct PixelSumAdd {
  unsigned long long old;  // the word before this add, as it returns
  i32 sum;                 // this add's
  int q = -1;              // its pixel; -1: nothing pending

  __device__ __forceinline__ void stash(int pixel, i32 s) {
    q = pixel;
    sum = s;
  }
  // Only the atomic here: anything computed from `old` (even old + inc) would wait for it.
  __device__ __forceinline__ void issue(const EpilogueArgs& a) {
    if (q >= 0) old = atomicAdd(a.sum_scratch + q, pixel_sum_increment(sum));
  }
  __device__ __forceinline__ void settle(const EpilogueArgs& a, int arrivals) {
    if (q >= 0 && static_cast<u32>(old) + 1u == static_cast<u32>(arrivals))
      finish_pixel_sum(a, q, static_cast<i32>(static_cast<u32>(old >> 32) + static_cast<u32>(sum)));
    q = -1;
  }
};

// A thread's kN pending adds, or none, as a base of a problem that the core's hooks change
// through const access; empty, it adds no bytes (an empty member moved the registers of the
// TMA core's plain kernels).
template <int kN>
struct PixelSumAdds {
  mutable PixelSumAdd pending[kN];
};
template <>
struct PixelSumAdds<0> {};

// quantized_store's items (tile column, 32-row chunk), whole warps of them, and the most a
// thread takes: the pixel-sum adds a thread of a deferring block holds (PixelSumAdd).
template <class T>
constexpr int quantized_items() {
  return (T::kBN * (T::kBM / 32) + 31) / 32 * 32;
}
template <class T, class Core>
constexpr int quantized_items_per_thread() {
  return (quantized_items<T>() + Core::kThreads - 1) / Core::kThreads;
}

// kPending > 0: the block is persistent and defers its pixel-sum adds (PixelSumAdd):
// `pending` holds the thread's adds of its previous tile, issued since (the problem's
// begin_tile), settled here, and this tile's are stashed in their place.
template <class T, class Core, bool kInPipeline = true, int kBarrierId = 0, int kBarrierThreads = 0, int kPending = 0,
          class P, class Acc>
__device__ __forceinline__ void quantized_store(const P& prob, const Acc& acc, int m_base, int n_base, int g, int tig,
                                                int m0, int col, PixelSumAdd* pending = nullptr) {
  using E = typename T::Epi;
  static_assert(E::kQuantize && !E::kPool && T::kBM % 32 == 0 && E::kQBits <= 8, "codes of one byte, whole words");
  // A column's bytes: kBM + 16 keeps the 16-byte loads aligned (kLd / 16 odd: 8 lanes hit 8
  // distinct 16-byte slots) and the fragment's byte stores free of bank conflicts (2*kLd is 8
  // or 24 banks mod 32, so columns 2*tig fall in distinct banks).
  constexpr int kLd = T::kBM + 16;
  constexpr int kChunks = T::kBM / 32;
  const int O = prob.a_rows;
  unsigned char* codes = reinterpret_cast<unsigned char*>(prob.smem);
  // Every code before the first shared store, so that no store separates the loads of a
  // row's parameters (float path) or a column's term: each is loaded once, the rows'
  // thresholds first, then per column the codes of the thread's rows. Rows past O are
  // computed as row O - 1 (no per-output test, which took about half of an output's
  // instructions: session 42) and their bits cleared where the words are packed; except where
  // value() reads a term of the row (P::kRowTerms), whose per-output loads the compiler then
  // hoisted into spills (pm1 x pm1 128x256: 84-132 -> 148-232 bytes), and rows keep their test.
  const int o_last = O - 1;
  ChannelThresholds<E> th[Core::kMI][2];
  // The rows' code tables (ChannelThresholds::code_table), shifted to each of the thread's
  // two code bytes of the row where the table leaves room (q <= 2): one shift and one LOP3
  // put a code into its byte.
  constexpr bool kShiftedTables = E::kQThresholds && E::kQBits * (1 << E::kQBits) + 24 <= 32;
  u32 table[Core::kMI][2][2];
  // The float path's row parameters, loaded once a row: read at each output, they were
  // loaded again after every division (its slow path is a call), four loads an output.
  RowParams rows[E::kQThresholds ? 1 : Core::kMI][2];
  if constexpr (!E::kQThresholds) {
#pragma unroll
    for (int mi = 0; mi < Core::kMI; ++mi)
#pragma unroll
      for (int half = 0; half < 2; ++half) rows[mi][half] = row_params<E>(prob.epi, min(m_base + mi * 16 + g + half * 8, o_last));
  }
  if constexpr (E::kQThresholds) {
#pragma unroll
    for (int mi = 0; mi < Core::kMI; ++mi)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        th[mi][half].load(prob.epi, min(m_base + mi * 16 + g + half * 8, o_last));
        const u32 t = th[mi][half].code_table();
#pragma unroll
        for (int e = 0; e < 2; ++e) table[mi][half][e] = kShiftedTables ? t << (8 * (half * 2 + e)) : t;
      }
  }
  // Where a column handle is a global load (P::kColumnsFirst: APMM's column terms), every
  // handle is read before the first code, their loads in flight together: on the threshold
  // path only, which has the registers to hold them. Conv's handles come from shared memory;
  // held up front they spilled the 128-register conv tiles (session 42 review: 0 -> 128-308
  // bytes), and the handles of pm1 weights spilled the float path's tiles.
  constexpr bool kColumnsFirst = P::kColumnsFirst && E::kQThresholds;
  typename P::Column columns[kColumnsFirst ? Core::kNI : 1][2];
  if constexpr (kColumnsFirst) {
#pragma unroll
    for (int ni = 0; ni < Core::kNI; ++ni)
#pragma unroll
      for (int e = 0; e < 2; ++e) columns[ni][e] = prob.column(n_base - col * T::kBN + ni * 8 + 2 * tig + e);
  }
  // A thread's four codes of (mi, ni) share a register, byte half*2 + e: one register per
  // output spilled on the 128-register sm_90a tiles (session 19 review: 356-584 bytes).
  u32 code[Core::kMI][Core::kNI] = {};
#pragma unroll
  for (int ni = 0; ni < Core::kNI; ++ni)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      typename P::Column column;
      if constexpr (kColumnsFirst) column = columns[ni][e];
      else column = prob.column(n_base - col * T::kBN + ni * 8 + 2 * tig + e);
      // Columns without a pixel keep zero bits.
      if (!prob.valid(column)) continue;
#pragma unroll
      for (int mi = 0; mi < Core::kMI; ++mi)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          // Rows past O: tested where value() reads a row term, else computed as row O - 1 (above).
          const int r = m_base + mi * 16 + g + half * 8, o = P::kRowTerms ? r : min(r, o_last), byte = half * 2 + e;
          if (P::kRowTerms && o > o_last) continue;
          const i32 y = static_cast<i32>(prob.value(acc, mi, ni, byte, o, column));
          if constexpr (kShiftedTables) {
            code[mi][ni] |= (table[mi][half][e] >> th[mi][half].table_shift(y)) & (((1u << E::kQBits) - 1u) << (8 * byte));
          } else if constexpr (E::kQThresholds) {
            code[mi][ni] |= ((table[mi][half][e] >> th[mi][half].table_shift(y)) & ((1u << E::kQBits) - 1u)) << (8 * byte);
          } else {
            const RowParams& p = rows[mi][half];
            const auto x = E::post_row(E::pre_row(y, p), p);
            code[mi][ni] |= quantize_code<E>(static_cast<float>(x), p.q_scale, p.q_zero) << (8 * byte);
          }
        }
    }
  if constexpr (kInPipeline) ptx::cp_async_wait<0>();
  epilogue_barrier<kBarrierId, kBarrierThreads>();  // every warp is done with the pipeline's buffers, or the last tile's codes
#pragma unroll
  for (int mi = 0; mi < Core::kMI; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int ni = 0; ni < Core::kNI; ++ni)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int r = m_base - m0 + mi * 16 + g + half * 8, c = n_base - col * T::kBN + ni * 8 + 2 * tig + e;
          codes[c * kLd + r] = static_cast<unsigned char>(code[mi][ni] >> (8 * (half * 2 + e)));
        }
  epilogue_barrier<kBarrierId, kBarrierThreads>();
  u32* planes = static_cast<u32*>(prob.epi.out);
  const i64 plane_words = static_cast<i64>(prob.out_hw) * prob.out_cw;
  // Tile column c's 32 rows from chunk*32 into each plane's word of output pixel q; returns
  // their plane-weighted popcount.
  auto pack = [&](int c, int chunk, int q) {
    const int img = q / prob.out_hw, pix = q - img * prob.out_hw;
    const uint4* src = reinterpret_cast<const uint4*>(codes + c * kLd + chunk * 32);
    const uint4 lo = src[0], hi = src[1];
    const u32 v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};  // byte j of v[b]: row chunk*32 + 4b + j
    u32* dst = planes + (static_cast<i64>(img) * E::kQBits * prob.out_hw + pix) * prob.out_cw;
    // Rows past O hold row O - 1's codes, or none (above): their bits are cleared.
    const int rows = O - (m0 + chunk * 32);
    const u32 row_mask = rows >= 32 ? ~0u : (rows <= 0 ? 0u : (1u << rows) - 1u);
    i32 sum = 0;
#pragma unroll
    for (int s = 0; s < E::kQBits; ++s) {
      u32 word = 0;
      // Bit s of each of 4 bytes to 4 adjacent bits: the multiply moves byte j's bit to bit 24 + j.
#pragma unroll
      for (int b = 0; b < 8; ++b) word |= ((((v[b] >> s) & 0x01010101u) * 0x01020408u) >> 24) << (4 * b);
      word &= row_mask;
      sum += plane_weight(E::kQBits, E::kQEnc, s) * __popc(word);
      dst[s * plane_words + m0 / 32 + chunk] = word;
    }
    // Words past the last block's channels (up to the 128-bit row) are zero bits.
    if (m0 + T::kBM >= O && chunk == kChunks - 1)
      for (int w = (m0 + T::kBM) / 32; w < prob.out_cw; ++w)
#pragma unroll
        for (int s = 0; s < E::kQBits; ++s) dst[s * plane_words + w] = 0u;
    return sum;
  };
  // Items (tile column c, chunk), a column's chunks on adjacent lanes: their plane words are
  // contiguous for the warp's stores, and their sums one shuffle reduction, so a column takes
  // one atomic (add_pixel_sum's or a deferred PixelSumAdd's, or an add to zeroed sums; where
  // one M tile holds every channel, one store that no other block adds to) rather than one a
  // chunk. Whole warps run
  // the loop (items past the tile's columns are empty) for the shuffles.
  static_assert(32 % kChunks == 0, "a column's chunks within one warp");
  constexpr int kItems = quantized_items<T>();
  const bool store_sums = O <= T::kBM;
  // Item i's column sum, on the lanes of all its chunks (q: its pixel; `mine`: the lane that
  // places it).
  auto item_sum = [&](int i, int& q, bool& mine) {
    const int c = i / kChunks, chunk = i % kChunks;
    q = col * T::kBN + c;
    const bool ok = c < T::kBN && q < prob.out_pixels;
    i32 sum = 0;
    if (ok) sum = pack(c, chunk, q);
#pragma unroll
    for (int d = 1; d < kChunks; d *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    mine = ok && chunk == 0;
    return sum;
  };
  if constexpr (kPending > 0) {
    // The deferring block's loop, a constant count (so that pending[k] stays in registers);
    // the other loop keeps the SASS of every other kernel as measured.
    static_assert(kPending == quantized_items_per_thread<T, Core>(), "an add a thread's item");
#pragma unroll
    for (int k = 0; k < kPending; ++k) pending[k].settle(prob.epi, (O + T::kBM - 1) / T::kBM);  // one add an M tile
#pragma unroll
    for (int k = 0; k < kPending; ++k) {
      const int i = threadIdx.x + k * Core::kThreads;
      if (i >= kItems) break;  // whole warps (kItems and kThreads are multiples of 32)
      int q;
      bool mine;
      const i32 sum = item_sum(i, q, mine);
      if (mine) {
        if (store_sums) prob.epi.out_sum[q] = sum;
        else if (prob.epi.sum_scratch) pending[k].stash(q, sum);
        else if (sum != 0) atomicAdd(prob.epi.out_sum + q, sum);
      }
    }
  } else {
    for (int i = threadIdx.x; i < kItems; i += Core::kThreads) {
      int q;
      bool mine;
      const i32 sum = item_sum(i, q, mine);
      if (mine) {
        if (store_sums) prob.epi.out_sum[q] = sum;
        else if (prob.epi.sum_scratch) add_pixel_sum(prob.epi, q, sum, (O + T::kBM - 1) / T::kBM);
        else if (sum != 0) atomicAdd(prob.epi.out_sum + q, sum);
      }
    }
  }
}

// A chain with a pool (and a quantize or not): every thread writes its values after the
// pre-pool ops into shared memory as [column][row]; then whole warps take (output pixel,
// 32 rows): lane = output channel, so a quantized plane word is one __ballot_sync.
template <class T, class Core, class P, class Acc>
__device__ __forceinline__ void pooled_store(const P& prob, const Acc& acc, int m_base, int n_base, int g, int tig,
                                             int m0, int col) {
  using E = typename T::Epi;
  using Staged = typename E::Staged;
  constexpr int kLd = T::kBM + 4;  // 2*kLd = 8 (mod 32) banks: the fragment stores do not conflict
  constexpr int kSS = E::kPool ? E::kPoolSize * E::kPoolSize : 1;
  constexpr int kOutPerTile = T::kBN / kSS;
  constexpr int kChunks = (T::kBM + 31) / 32;
  const int O = prob.a_rows;
  const int n0 = col * T::kBN;
  Staged* st = reinterpret_cast<Staged*>(prob.smem);
  ptx::cp_async_wait<0>();
  __syncthreads();  // every warp is done with the pipeline's buffers
#pragma unroll
  for (int mi = 0; mi < Core::kMI; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = m_base - m0 + mi * 16 + g + half * 8;
      const int o = m0 + r;
#pragma unroll
      for (int ni = 0; ni < Core::kNI; ++ni)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = n_base - n0 + ni * 8 + 2 * tig + e;
          if (o < O && prob.column_valid(c))
            st[c * kLd + r] = E::pre(static_cast<i32>(prob.value(acc, mi, ni, half * 2 + e, o, c)), o, prob.epi);
        }
    }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  // Into the scratch (rules::quantize_sums_path): every (pixel, chunk) task adds, its sum
  // zero or not, so a pixel's count is its M tiles' chunks. Lane `held` keeps the warp's
  // held-th add and the warp issues them together (flush): one round trip for up to 32
  // tasks, where an add settled at each task would wait for each.
  [[maybe_unused]] int held = 0, held_q = -1;
  [[maybe_unused]] i32 held_sum = 0;
  [[maybe_unused]] const int arrivals = (O + T::kBM - 1) / T::kBM * kChunks;
  [[maybe_unused]] const auto flush = [&] {  // used by quantize chains only
    if (held_q >= 0) add_pixel_sum(prob.epi, held_q, held_sum, arrivals);
    held_q = -1;
    held = 0;
  };
  for (int task = threadIdx.x >> 5; task < kOutPerTile * kChunks; task += Core::kThreads / 32) {
    const int j = task / kChunks, chunk = task - j * kChunks;
    const int q = col * kOutPerTile + j;
    if (q >= prob.out_pixels) continue;  // warp-uniform
    const int r = chunk * 32 + lane, o = m0 + r;
    const bool ok = r < T::kBM && o < O;
    const int img = q / prob.out_hw, pix = q - img * prob.out_hw;
    typename E::Final x = 0;
    if (ok) x = E::post(pool_window<E, kSS, kLd>(st, j * kSS, r), o, prob.epi);
    if constexpr (E::kQuantize) {
      const u32 code = ok ? quantize_code<E>(static_cast<float>(x), o, prob.epi) : 0u;
      u32* planes = static_cast<u32*>(prob.epi.out);
      const int cw = m0 / 32 + chunk;
      i32 sum = 0;
#pragma unroll
      for (int s = 0; s < E::kQBits; ++s) {
        const u32 word = __ballot_sync(0xffffffffu, (code >> s) & 1u);
        sum += plane_weight(E::kQBits, E::kQEnc, s) * __popc(word);
        if (lane == s) planes[((static_cast<i64>(img) * E::kQBits + s) * prob.out_hw + pix) * prob.out_cw + cw] = word;
      }
      if (prob.epi.sum_scratch) {  // warp-uniform
        if (lane == held) held_q = q, held_sum = sum;
        if (++held == 32) flush();
      } else if (lane == 0 && sum != 0) {
        atomicAdd(prob.epi.out_sum + q, sum);
      }
      // Words past the last block's channels (up to the 128-bit row) are zero bits.
      if (m0 + T::kBM >= O && chunk == kChunks - 1)  // the last tile along M
        for (int w = (m0 + T::kBM) / 32 + lane; w < prob.out_cw; w += 32)
#pragma unroll
          for (int s = 0; s < E::kQBits; ++s)
            planes[((static_cast<i64>(img) * E::kQBits + s) * prob.out_hw + pix) * prob.out_cw + w] = 0u;
    } else {
      if (ok) static_cast<typename E::Final*>(prob.epi.out)[(static_cast<i64>(img) * O + o) * prob.out_hw + pix] = x;
    }
  }
  if constexpr (E::kQuantize) flush();
}

// The staged epilogues (a chain with a pool or a quantize), on a Problem P (apmm_sm80.cuh,
// conv_sm80.cuh) that supplies:
//   P::value(acc, mi, ni, e, o, c): the corrected accumulator of row o, tile column c
//   P::column_valid(c), P::out_pixels, P::out_hw, P::out_cw, P::a_rows (O), P::smem, P::epi
//   P::Column, column(c), valid(column), value(acc, mi, ni, e, o, column): the same through
//   a column handle read once for all of a thread's rows; P::kColumnsFirst: reading a handle
//   loads from global memory (quantized_store then reads them all first)
// The block's tile starts at row m0 and is column tile `col` (of kBN columns, or of
// kOutPerTile pooling windows): the caller's grid mapping, blockIdx or a tile index.
template <class T, class Core, class P, class Acc>
__device__ __forceinline__ void staged_store(const P& prob, const Acc& acc, int m_base, int n_base, int g, int tig,
                                             int m0, int col) {
  if constexpr (T::Epi::kQuantize && !T::Epi::kPool)
    quantized_store<T, Core>(prob, acc, m_base, n_base, g, tig, m0, col);
  else
    pooled_store<T, Core>(prob, acc, m_base, n_base, g, tig, m0, col);
}

}  // namespace apnn
