// Peak rates of the binary tensor-core instructions, measured in the same run as the
// benchmark (so clocks, power state and driver are the ones the rows saw). The probes are
// compiled at run time through our NVRTC compiler, like every kernel of the library:
//   wgmma m64n128k256 .b1 .and.popc (sm_90a only; the true peak, ../shared/wgmma_b1_peak.cu)
//   mma.sync m16n8k256 .b1 .and.popc (sm_80 and later; ../shared/mma_peak.cu)
// and, on sm_90a, an overlap probe: whether wgmma, an int32-output-like store stream to DRAM
// and TMA-like bulk reads from L2 run at once at their own rates (they do not: the reads
// drop to a third or less beside the stores; bench/NOTES-wgmma.md, session 6).
#pragma once
#include <string>

#include "bench/report.h"
#include "runtime/steady_timing.h"

namespace apnn::bench {

// The probe kernels' CUDA source (extern "C" mma_b1_peak, empty_launch; with wgmma also
// wgmma_b1_peak and overlap_probe); exposed for tests.
std::string peak_probe_source(bool with_wgmma);

// Binary AND-popcount operations per second (1e12) of each probe on the current GPU (the
// wgmma figure is 0 on devices without sm_90a), the device memory's write bandwidth, the
// per-launch time of an empty kernel under `rule`, and the overlap probe's rates.
Peaks measure_peaks(const TimingRule& rule);

}  // namespace apnn::bench
