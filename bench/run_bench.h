// `apnn bench`: our kernels and the vendor's in one process under one timing rule
// (timing.h), our outputs checked against the CPU reference first, then a table on stdout,
// the full results as JSON and a speedup chart as SVG.
#pragma once
#include <string>

#include "bench/cases.h"
#include "runtime/steady_timing.h"

namespace apnn::bench {

struct BenchOptions {
  bool gemm = true, conv = true, fusion = true;
  Selection selection;
  TimingRule rule;
  std::string json_path, chart_path;  // empty: not written
  // Sample the SM clock and power while rows are timed (clock_sampler.h). Off by default: in
  // a same-call A/B the polling thread made rows under 8 us 4% slower (session 15, call 13).
  bool clocks = false;
};

// Returns 0, or 1 when an output of ours differed from the reference (every row still runs).
// Throws Error: NoDriver/NoDevice without a GPU, InvalidInput for a bad selection or a
// vendor library that cannot be loaded, Io for an output file that cannot be written.
int run_bench(const BenchOptions& options);

// Whether the convolution section was built (cuDNN's header found at build time).
bool conv_section_built();

}  // namespace apnn::bench
