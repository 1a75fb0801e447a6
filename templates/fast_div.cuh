// Division by a divisor fixed for the whole launch (an image's pixel count, a row's width, a
// tile count), as a multiply-high, an add and a shift whose constants the host works out
// (engine/fast_div.h, which mirrors this struct). A division by a run-time int compiles to a
// chain of about 20 dependent instructions: the conv kernels' per-tile setup did about ten
// of them per thread, a third of the instructions of a batch-128 1x1 conv (session 10,
// device call 1).
#pragma once
#include "apnn_types.cuh"

namespace apnn {

// n / d for 0 <= n < 2^31 and d >= 1 (the round-up method with an add, Hacker's Delight
// 10-8): shr = ceil(log2 d), mul = floor(2^32 * (2^shr - d) / d) + 1, and
// n / d = (mulhi(n, mul) + n) >> shr, whose sum stays below 2^32 for n below 2^31.
struct FastDiv {
  u32 mul, shr;
  __device__ __forceinline__ int div(int n) const {
    u32 hi;
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(hi) : "r"(static_cast<u32>(n)), "r"(mul));
    return static_cast<int>((hi + static_cast<u32>(n)) >> shr);
  }
};

}  // namespace apnn
