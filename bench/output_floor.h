// How long writing a row's int32 output alone takes, back to back under the row's timing
// rule and input rotation: a measured floor for every kernel that writes that output,
// whatever it computes. A target below it cannot be met by a kernel that writes int32.
//
// Two writers are timed and the faster one counts (OutputFloor::Result::us): the driver's
// memset, and a kernel of our own launched the way ours are (programmatic dependent launch:
// it starts while the previous kernel ends and waits for it before its first store; up to one
// wave of blocks storing 16 bytes a thread, grid-stride). The memset pays each launch in full,
// so small outputs come out faster through the kernel; large ones run at the write bandwidth
// either way. Where the launch rather than the bytes dominates (outputs of a few MB or less)
// this is a reference, not a bound: a kernel of ours can come in under it (session 23: the
// 64x1024x1024 GEMM 3.17 us against 3.30).
#pragma once
#include <functional>
#include <memory>

#include "runtime/device_buffer.h"
#include "runtime/module.h"
#include "runtime/steady_timing.h"

namespace apnn::bench {

// The write kernel's CUDA source (extern "C" write_only); exposed for tests.
const char* output_floor_source();

class OutputFloor {
 public:
  OutputFloor();  // compiles the write kernel for the current device (needs a GPU)
  struct Result {
    double memset_us = 0, kernel_us = 0;
    double us() const;  // the faster writer's time (0: not measured)
  };
  // `output(set)` is the buffer set `set` of `sets` writes (the row's rotation).
  Result time(const TimingRule& rule, int sets, const std::function<DeviceBuffer&(int)>& output);

 private:
  std::unique_ptr<LoadedModule> module_;
  unsigned max_blocks_ = 0;  // one wave
};

}  // namespace apnn::bench
