// One K step of an operand tile, global -> shared, by cp.async: kRows tile rows (kRows /
// kTileRows planes of kTileRows rows each) of kChunksPerRow 16-byte chunks from word kword0
// on, zero-filled past `rows` and past the packed row length `ld`, so any M, N, K work.
//
// Thread t copies chunk column t % kChunksPerRow of tile rows t / kChunksPerRow + i*kRowStep.
// Every quantity but kword0 is then the thread's first row plus a constant per i, so a chunk
// costs a few adds and one compare. Index math per chunk (row, column, plane and row of the
// plane from the chunk number) was about 25 instructions a chunk; on the N=1 convs each warp
// issues its instructions about every 5 cycles and their time is the instruction count
// (session 7, device call 1: bench/NOTES.md).
//
// swz(row, col): the chunk's byte offset in the tile. The caller's layout must repeat every
// kRowStep rows (swz(r + kRowStep, c) == swz(r, c) + kRowStep * kRowBytes); both cores'
// swizzles repeat every 8 rows or fewer.
#pragma once
#include "apnn_types.cuh"
#include "ptx_sm80.cuh"

namespace apnn {

template <int kThreads, int kChunksPerRow, int kRowBytes, int kRows, int kTileRows, class Swz>
__device__ __forceinline__ void copy_operand_rows(char* dst, Swz swz, const u32* __restrict__ planes, i64 plane_stride,
                                                  int rows, int row0, int ld, int kword0) {
  constexpr int kRowStep = kThreads / kChunksPerRow;
  constexpr int kIters = (kRows + kRowStep - 1) / kRowStep;
  // Powers of two: one i step covers whole planes (kWide), or a plane holds whole steps.
  constexpr bool kWide = kRowStep >= kTileRows;
  static_assert(kThreads % kChunksPerRow == 0, "a thread keeps one chunk column");
  static_assert(kWide ? kRowStep % kTileRows == 0 : kTileRows % kRowStep == 0, "row step and plane rows nest");
  const int r0 = static_cast<int>(threadIdx.x) / kChunksPerRow;
  const int col = static_cast<int>(threadIdx.x) % kChunksPerRow;
  const int grow = row0 + (kWide ? r0 % kTileRows : r0);  // the matrix row at i = 0
  const int gword = kword0 + col * 4;
  const bool k_ok = gword < ld;
  const u32* base = planes + (kWide ? r0 / kTileRows : 0) * plane_stride + static_cast<i64>(grow) * ld + gword;
  char* d = dst + swz(r0, col);
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    if (kRows % kRowStep != 0 && r0 + i * kRowStep >= kRows) break;
    const int dplane = kWide ? i * (kRowStep / kTileRows) : i * kRowStep / kTileRows;
    const int drow = kWide ? 0 : i * kRowStep % kTileRows;
    const bool ok = k_ok && grow + drow < rows;
    const u32* src = base + dplane * plane_stride + static_cast<i64>(drow) * ld;
    ptx::cp_async_16(d + i * kRowStep * kRowBytes, ok ? src : planes, ok ? 16 : 0);
  }
}

}  // namespace apnn
