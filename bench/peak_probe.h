// Peak rates of the binary tensor-core instructions, measured in the same run as the
// benchmark (so clocks, power state and driver are the ones the rows saw). The probes are
// compiled at run time through our NVRTC compiler, like every kernel of the library:
//   wgmma m64n128k256 .b1 .and.popc (sm_90a only; the true peak, ../shared/wgmma_b1_peak.cu)
//   mma.sync m16n8k256 .b1 .and.popc (sm_80 and later; ../shared/mma_peak.cu)
#pragma once
#include <string>

#include "bench/report.h"
#include "runtime/steady_timing.h"

namespace apnn::bench {

// The probe kernels' CUDA source (extern "C" wgmma_b1_peak, mma_b1_peak); exposed for tests.
std::string peak_probe_source(bool with_wgmma);

// Binary AND-popcount operations per second (1e12) of each probe on the current GPU (the
// wgmma figure is 0 on devices without sm_90a), the device memory's write bandwidth, and
// the per-launch time of an empty kernel under `rule`.
Peaks measure_peaks(const TimingRule& rule);

}  // namespace apnn::bench
