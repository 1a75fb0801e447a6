#include "bench/run_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "apnn/error.h"
#include "bench/clock_sampler.h"
#include "bench/cublaslt_lib.h"
#include "bench/nvml_lib.h"
#include "bench/peak_probe.h"
#include "bench/sections.h"
#include "cache/posix_file.h"
#include "engine/conv_runner.h"
#include "engine/tile_choice.h"
#include "runtime/device.h"

#ifdef APNN_BENCH_CUDNN
#include "bench/cudnn_lib.h"
#endif

namespace apnn::bench {

namespace {

// Every kernel the plan needs, compiled into the cache on all cores before any timing
// (NVRTC takes 0.2-0.5 s per kernel; a full run needs about a hundred).
void prewarm(Engine& engine, const Plan& plan, const std::string& arch) {
  std::map<std::string, KernelSpec> specs;
  for (const GemmCase& c : plan.gemm)
    for (const Precision& p : plan.gemm_prec) {
      KernelSpec s;
      s.w = p.w;
      s.x = p.x;
      s = with_tile_for(s, apmm_problem(c.shape));
      specs.emplace(canonical_json(s), s);
    }
  for (const ConvCase& c : plan.conv)
    for (const Precision& p : plan.conv_prec) {
      KernelSpec s;
      s.op = Op::Apconv;
      s.conv = c.params;
      s.w = p.w;
      s.x = p.x;
      s = with_tile_for(s, conv_problem(s, c.shape));
      specs.emplace(canonical_json(s), s);
    }
  std::vector<KernelSpec> list;
  for (auto& [key, s] : specs) list.push_back(s);
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  std::exception_ptr failure;
  std::mutex mu;
  const unsigned threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), list.size()));
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i = next++; i < list.size(); i = next++) try {
          engine.compile(list[i], arch);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (!failure) failure = std::current_exception();
        }
    });
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
  std::fprintf(stderr, "bench: %zu kernels ready\n", list.size());
}

// Atomically (a temporary file renamed over it), so that a run stopped while it writes leaves
// the previous section's complete file.
void write_file(const std::string& path, const std::string& text) {
  if (const int err = posix::write_file_atomic(path, {text.begin(), text.end()}))
    throw Error(ErrorKind::Io, fmt::format("cannot write {}: {}", path, std::strerror(err)));
}

}  // namespace

void time_best_candidate(Section& s, Row& r, int candidates, int sets, const std::function<void(int)>& use,
                         const std::function<void(int)>& launch, int* chosen) {
  *chosen = fastest_candidate(s.rule, candidates, sets, use, launch);
  use(*chosen);
  time_row(s, r, [&] { return time_rotated(s.rule, sets, launch); });
}

bool conv_section_built() {
#ifdef APNN_BENCH_CUDNN
  return true;
#else
  return false;
#endif
}

int run_bench(const BenchOptions& o) {
  if (o.conv && !o.gemm && !conv_section_built())
    throw Error(ErrorKind::InvalidInput, "the convolution benchmark was not built (cuDNN's header cudnn.h not found at build time)");
  const bool conv = o.conv && conv_section_built();
  const Plan plan = select(o.selection, o.gemm, conv);
  const auto t0 = std::chrono::steady_clock::now();
  const DeviceInfo& dev = current_device();  // no GPU: Error(NoDriver/NoDevice), exit 3
  Report report;
  report.device = dev.name;
  report.arch = dev.arch();
  report.settings = {{"launches", o.rule.launches},
                     {"repeats", o.rule.repeats},
                     {"warmup_ms", o.rule.warmup_ms},
                     {"max_repeat_ms", o.rule.max_repeat_ms},
                     {"quick", o.selection.quick},
                     {"shapes", o.selection.shapes},
                     {"precisions", o.selection.precisions}};
  // The SM clock and power while each row is timed, read through NVML every 5 ms (--clocks).
  std::unique_ptr<NvmlDevice> nvml;
  std::unique_ptr<ClockSampler> clocks;
  report.settings["clock_sampling"] = "off";
  if (o.clocks) {
    const std::string pci_bus_id = current_pci_bus_id();  // a driver error keeps its kind (exit 3)
    try {
      nvml = std::make_unique<NvmlDevice>(pci_bus_id);
    } catch (const Error& e) {
      throw Error(ErrorKind::InvalidInput, std::string("--clocks: ") + e.what());
    }
    clocks = std::make_unique<ClockSampler>([dev = nvml.get()](GpuSample* g) { return dev->read(g); },
                                            std::chrono::milliseconds(5));
    report.settings["clock_sampling"] = "nvml, every 5 ms";
  }
  if (!plan.gemm.empty()) report.settings["cublaslt"] = cublaslt_version();
#ifdef APNN_BENCH_CUDNN
  if (!plan.conv.empty()) report.settings["cudnn"] = cudnn_version();
#endif
  if (o.conv && !conv) std::fprintf(stderr, "bench: the convolution section was not built (no cudnn.h): GEMM only\n");

  report.peaks = measure_peaks(o.rule);
  // The launch floors, as both header lines give them.
  const std::string launches = fmt::format("empty launch {:.2f} us (early start {:.2f})", report.peaks.launch_floor_us,
                                           report.peaks.launch_floor_early_us);
  std::fprintf(stderr, "bench: %s (%s): binary AND peak %.0f TOPS wgmma, %.0f TOPS mma.sync; memory writes %.0f GB/s; %s\n",
               dev.name.c_str(), report.arch.c_str(), report.peaks.wgmma_b1_tops, report.peaks.mma_sync_b1_tops,
               report.peaks.dram_write_gbs, launches.c_str());
  std::string overlap_line;
  if (report.peaks.l2_read_gbs > 0)
    overlap_line = fmt::format(
        "overlap probe: L2->SM bulk reads requested {:.0f} GB/s alone; wgmma + writes + reads at once: {:.0f} TOPS, {:.0f} GB/s "
        "written, {:.0f} GB/s read\n",
        report.peaks.l2_read_gbs, report.peaks.overlap_wgmma_tops, report.peaks.overlap_write_gbs,
        report.peaks.overlap_read_gbs);
  if (!overlap_line.empty()) std::fprintf(stderr, "bench: %s", overlap_line.c_str());
  Engine engine;
  prewarm(engine, plan, report.arch);
  Section section{engine, report, o.rule, l2_bytes()};
  section.clocks = clocks.get();
  OutputFloor output_floor;
  section.output_floor = &output_floor;
  // The JSON and the chart are written after each section, so that a run stopped in a later
  // one (a time limit) keeps what it measured; settings.complete says whether the run ended.
  auto write_results = [&](bool complete) {
    report.settings["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report.settings["complete"] = complete;
    if (!o.json_path.empty()) write_file(o.json_path, report.to_json().dump(1) + "\n");
    if (!o.chart_path.empty()) write_file(o.chart_path, chart_svg(report.speedup_panels()));
  };
  if (!plan.gemm.empty()) {
    run_gemm_section(section, plan);
    write_results(false);
  }
#ifdef APNN_BENCH_CUDNN
  if (!plan.conv.empty()) {
    run_conv_section(section, plan);
    write_results(false);
  }
#endif
  if (o.fusion) run_fusion_section(section, o.selection.quick);
  write_results(true);

  std::printf(
      "apnn bench on %s (%s); binary AND peaks: wgmma %.0f TOPS, mma.sync %.0f TOPS; memory writes %.0f GB/s; %s\n",
      report.device.c_str(), report.arch.c_str(), report.peaks.wgmma_b1_tops, report.peaks.mma_sync_b1_tops,
      report.peaks.dram_write_gbs, launches.c_str());
  std::printf("%s", overlap_line.c_str());
  std::printf("times: median per launch (us); out-only: the output (int32; int16 in -i16 rows) written alone (memset or "
              "a write-only kernel, the faster); speedup: best vendor time / ours; bin TOPS: ops*p*q/time; exact: checked against the CPU "
              "reference\n\n");
  report.print_table(stdout);
  print_fusion_table(report.fusion, stdout);
  if (section.mismatch) std::fprintf(stderr, "apnn: bench: an output of ours differs from the CPU reference (rows marked NO)\n");
  return section.mismatch ? 1 : 0;
}

}  // namespace apnn::bench
