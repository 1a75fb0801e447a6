// `apnn bench`: ours against cuBLASLt / cuDNN in one process (bench/run_bench.h). Built
// into the CLI when cuBLASLt's header was found; otherwise the command says so (exit 2).
#include <cstdio>

#include "apnn/error.h"
#include "cli/commands.h"

#ifdef APNN_HAVE_BENCH
#include "bench/run_bench.h"
#endif

namespace apnn::cli {

void add_bench(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand(
      "bench", "Time our GEMM and conv kernels against cuBLASLt and cuDNN in one process (checked first; table, JSON, SVG)");
  struct Flags {
    bool gemm_only = false, conv_only = false, fusion_only = false, quick = false, clocks = false;
    std::string shapes, precisions, json, chart;
    int launches = 50;
  };
  auto f = std::make_shared<Flags>();
  auto* g = cmd->add_flag("--gemm-only", f->gemm_only, "only the GEMM section");
  auto* c = cmd->add_flag("--conv-only", f->conv_only, "only the convolution section");
  auto* fu = cmd->add_flag("--fusion-only", f->fusion_only, "only the fusion section (fused chain vs unfused kernels)");
  g->excludes(c);
  fu->excludes(g);
  fu->excludes(c);
  cmd->add_flag("--quick", f->quick, "a small subset (2 shapes per section, 2-3 precisions)");
  cmd->add_option("--shapes", f->shapes, "comma-separated glob patterns over GEMM and conv shape labels, e.g. '8192x*,n1-*'");
  cmd->add_option("--prec", f->precisions, "comma-separated precisions, e.g. w1a2,w2a2 (default: all)");
  cmd->add_option("--launches", f->launches, "back-to-back launches per timed repeat (default 50)")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--clocks", f->clocks,
                "sample the SM clock and power (NVML, every 5 ms) while each row is timed; the polling can slow "
                "launch-bound rows by a few percent");
  cmd->add_option("--json", f->json, "write the full results here (JSON; rewritten after each section, settings.complete once done)");
  cmd->add_option("--chart", f->chart, "write the speedup chart here (SVG; rewritten after each section)");
  cmd->callback([=] {
    *action = [=]() -> int {
#ifdef APNN_HAVE_BENCH
      bench::BenchOptions o;
      o.gemm = !f->conv_only && !f->fusion_only;
      o.conv = !f->gemm_only && !f->fusion_only;
      o.fusion = !f->gemm_only && !f->conv_only;
      o.selection.quick = f->quick;
      o.selection.shapes = bench::split_list(f->shapes);
      o.selection.precisions = bench::split_list(f->precisions);
      o.rule.launches = f->launches;
      o.json_path = f->json;
      o.chart_path = f->chart;
      o.clocks = f->clocks;
      return bench::run_bench(o);
#else
      throw Error(ErrorKind::InvalidInput, "bench was not built: cublasLt.h was not found at build time");
#endif
    };
  });
}

}  // namespace apnn::cli
