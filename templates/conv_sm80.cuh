// APConv as an implicit GEMM on the binary core: rows = output channels (weights,
// [s][o][kh][kw][cw]), columns = output pixels (n, ho, wo), K = (kh, kw, channel words).
// The X tile is gathered from the channel-major layout (conv_layout.h): each 16-byte
// chunk is 128 channels of one input pixel. Padded positions are zero-filled, which
// removes them from every AND product; the epilogue then corrects offset encodings
// over the valid positions only (input-aware padding: a padded value is 0 for every
// encoding, also for +-1 activations where 0 has no bit pattern):
//   Y = sum_g w_g*acc_g + beta_w*colsum[p] + beta_x*SWvalid(o,p) + beta_w*beta_x*C*nvalid[p]
// Traits add kKh kKw kSh kSw kPh kPw.
#pragma once
#include "epilogue.cuh"
#include "gemm_sm80.cuh"

namespace apnn {

template <class T>
struct ConvProblem {
  using Core = GemmSm80<T>;
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
  const i32* __restrict__ colsum;
  const i32* __restrict__ nvalid;
  EpilogueArgs epi;
  u32* smem;
  int C, H, W, Ho, Wo, CW, P;  // P = N*Ho*Wo conv output pixels
  int Hp, Wp;                  // output after pooling (Ho, Wo without a pool)
  int out_pixels, out_hw, out_cw;

  // The conv pixel (n, ho, wo) that column c of tile `tile` computes; false if none.
  __device__ __forceinline__ bool column_pixel(int tile, int c, int& n, int& ho, int& wo) const {
    if constexpr (!E::kPool) {
      const int p = tile * T::kBN + c;
      if (p >= P) return false;
      const int HoWo = Ho * Wo;
      n = p / HoWo;
      const int r = p - n * HoWo;
      ho = r / Wo;
      wo = r - ho * Wo;
    } else {
      const int j = c / kSS, k = c - j * kSS;
      const int q = tile * kOutPerTile + j;
      if (j >= kOutPerTile || q >= out_pixels) return false;
      n = q / out_hw;
      const int r = q - n * out_hw, hp = r / Wp, wp = r - hp * Wp;
      ho = hp * E::kPoolStride + k / E::kPoolSize;
      wo = wp * E::kPoolStride + k % E::kPoolSize;
    }
    return true;
  }

  __device__ __forceinline__ void load_b(u32* dst, int n0, int kword0) const {
    constexpr int kChunks = Core::kRowsB * Core::kChunksPerRow;
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
        const int pos = kword / CW, cw = kword - pos * CW;
        const int kh = pos / T::kKw, kw = pos - kh * T::kKw;
        const int hi = ho * T::kSh - T::kPh + kh, wi = wo * T::kSw - T::kPw + kw;
        ok = hi >= 0 && hi < H && wi >= 0 && wi < W;
        src = xp + ((static_cast<i64>(n * T::kXBits + t) * H + hi) * W + wi) * CW + cw;
      }
      ptx::cp_async_16(dst + Core::swz(row, col * 4), ok ? src : xp, ok ? 16 : 0);
    }
  }

  __device__ __forceinline__ bool column_valid(int c) const {
    int n, ho, wo;
    return column_pixel(blockIdx.y, c, n, ho, wo);
  }

  // Sum of the weights' plane-weighted popcounts over the kernel positions that fall
  // inside the image for pixel p: rowsum away from the border, else the out-of-line loop.
  __device__ __forceinline__ u32 valid_weight_sum(int o, int p) const {
    return nvalid[p] == kKHW ? static_cast<u32>(rowsum[o]) : border_weight_sum(o, p);
  }
  __device__ __noinline__ u32 border_weight_sum(int o, int p) const {
    const int HoWo = Ho * Wo;
    const int r = p % HoWo, ho = r / Wo, wo = r % Wo;
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

  // The corrected int32 conv output of channel o at conv pixel p (wrapping u32 arithmetic).
  template <class Acc>
  __device__ __forceinline__ u32 corrected(const Acc& acc, int mi, int ni, int e, int o, int p) const {
    u32 v = Core::combine(acc, mi, ni, e);
    if (T::kOffsetW != 0) v += static_cast<u32>(T::kOffsetW) * static_cast<u32>(colsum[p]);
    if (T::kOffsetX != 0) v += static_cast<u32>(T::kOffsetX) * valid_weight_sum(o, p);
    if (T::kOffsetW != 0 && T::kOffsetX != 0)
      v += static_cast<u32>(T::kOffsetW * T::kOffsetX) * static_cast<u32>(C) * static_cast<u32>(nvalid[p]);
    return v;
  }

  // For the staged epilogue: tile column c of this block (valid by the caller's check).
  template <class Acc>
  __device__ __forceinline__ u32 value(const Acc& acc, int mi, int ni, int e, int o, int c) const {
    int n = 0, ho = 0, wo = 0;
    column_pixel(blockIdx.y, c, n, ho, wo);
    return corrected(acc, mi, ni, e, o, (n * Ho + ho) * Wo + wo);
  }

  __device__ __forceinline__ void store(const i32 (&acc)[T::kGroups][Core::kMI][Core::kNI][4], int m_base, int n_base,
                                        int g, int tig) const {
    if constexpr (E::kStaged) {
      staged_store<T, Core>(*this, acc, m_base, n_base, g, tig);
    } else {
      using Final = typename E::Final;
      Final* y = static_cast<Final*>(epi.out);
      const int O = a_rows, HoWo = Ho * Wo;
#pragma unroll
      for (int mi = 0; mi < Core::kMI; ++mi)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int o = m_base + mi * 16 + g + half * 8;
          if (o >= O) continue;
#pragma unroll
          for (int ni = 0; ni < Core::kNI; ++ni)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int p = n_base + ni * 8 + 2 * tig + e;
              if (p >= P) continue;
              const i32 v = static_cast<i32>(corrected(acc, mi, ni, half * 2 + e, o, p));
              const int n = p / HoWo;
              y[(static_cast<i64>(n) * O + o) * HoWo + (p - n * HoWo)] = E::post(E::pre(v, o, epi), o, epi);
            }
        }
    }
  }
};

template <class T>
__device__ __forceinline__ void conv_sm80(u32* smem, const u32* wp, const i32* rowsum, const i32* possum, const u32* xp,
                                          const i32* colsum, const i32* nvalid, const EpilogueArgs& epi, int O, int N,
                                          int C, int H, int W, int Ho, int Wo, int CW) {
  using E = typename T::Epi;
  const int ld = ConvProblem<T>::kKHW * CW;
  const int Hp = E::kPool ? (Ho - E::kPoolSize) / E::kPoolStride + 1 : Ho;
  const int Wp = E::kPool ? (Wo - E::kPoolSize) / E::kPoolStride + 1 : Wo;
  const ConvProblem<T> prob{wp,  static_cast<i64>(O) * ld, O,  ld, ld, xp, rowsum, possum, colsum, nvalid, epi, smem,
                            C,   H, W, Ho, Wo, CW, N * Ho * Wo, Hp, Wp, N * Hp * Wp, Hp * Wp, (O + 127) / 128 * 4};
  GemmSm80<T>::run(smem, prob);
}

// Per output pixel: the activations' plane-weighted popcount over the valid kernel
// positions (colsum) and how many positions are valid (nvalid), for the corrections.
template <class T>
__device__ __forceinline__ void conv_colsum(const i32* __restrict__ pixsum, int N, int H, int W, int Ho, int Wo,
                                            i32* __restrict__ colsum, i32* __restrict__ nvalid) {
  const i64 p = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
  const i64 HoWo = static_cast<i64>(Ho) * Wo;
  if (p >= N * HoWo) return;
  const i64 n = p / HoWo;
  const int r = static_cast<int>(p % HoWo), ho = r / Wo, wo = r % Wo;
  i32 sum = 0, count = 0;
  for (int kh = 0; kh < T::kKh; ++kh) {
    const int hi = ho * T::kSh - T::kPh + kh;
    if (hi < 0 || hi >= H) continue;
    for (int kw = 0; kw < T::kKw; ++kw) {
      const int wi = wo * T::kSw - T::kPw + kw;
      if (wi < 0 || wi >= W) continue;
      sum += pixsum[(n * H + hi) * W + wi];
      ++count;
    }
  }
  colsum[p] = sum;
  nvalid[p] = count;
}

}  // namespace apnn
