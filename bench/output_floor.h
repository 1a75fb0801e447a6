// How long writing a row's int32 output alone takes, back to back under the row's timing
// rule and input rotation. Where the output's bytes rather than the launch dominate (here:
// outputs of about 10 MB and more) it is a floor for every kernel that writes that output,
// whatever it computes: a target below it cannot be met with an int32 output. For outputs of
// a few MB or less it is a reference only: the launch dominates, and a kernel of ours can come
// in under it (session 23: the 64x1024x1024 GEMM 2.17 us against 2.26).
//
// Two writers are timed and the faster one counts (OutputAlone::us, bench/report.h): the driver's
// memset, and a kernel of our own launched the way ours are (programmatic dependent launch:
// it starts while the previous kernel ends and waits for it before its first store; up to
// two blocks of 512 threads an SM, one 16-byte store a thread per pass, grid-stride). The
// memset pays each launch in full, so small outputs come out faster through the kernel;
// large ones run at the write bandwidth either way.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "bench/report.h"
#include "runtime/device_buffer.h"
#include "runtime/module.h"
#include "runtime/steady_timing.h"

namespace apnn::bench {

// The write kernel's CUDA source (extern "C" write_only); exposed for tests.
std::string output_floor_source();

class OutputFloor {
 public:
  OutputFloor();  // compiles the write kernel for the current device (needs a GPU)
  using Result = OutputAlone;
  // `output(set)` is the buffer set `set` of `sets` writes (the row's rotation); every set's
  // buffer has the same size.
  Result time(const TimingRule& rule, int sets, const std::function<DeviceBuffer&(int)>& output);
  // The write kernel alone: every 32-bit word of y becomes `value` (asynchronous).
  void write(DeviceBuffer& y, uint32_t value);

 private:
  std::unique_ptr<LoadedModule> module_;
  unsigned max_blocks_ = 0;  // kBlocksPerSm blocks on every SM
  bool early_start_ = false;  // where the kernel's dependency wait is compiled in (sm_90 and later)
};

}  // namespace apnn::bench
