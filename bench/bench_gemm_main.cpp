// apnn_bench_gemm: our APMM against cuBLASLt int8 / fp8 / fp16 in one process with one
// timing rule. Each of our rows is first checked bit-exact against the CPU reference on
// fresh random inputs. Prints a table and JSON lines (--json FILE).
#include <algorithm>
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "bench/cublaslt_gemm.h"
#include "engine/verify.h"
#include "runtime/launch_timing.h"

using namespace apnn;

int main(int argc, char** argv) {
  CLI::App app{"APMM vs cuBLASLt"};
  std::string json_path;
  int launches = 50;
  app.add_option("--json", json_path, "write one JSON line per row here");
  app.add_option("--launches", launches, "back-to-back launches per timed repeat");
  CLI11_PARSE(app, argc, argv);
  try {
    Engine engine;
    std::ofstream json;
    if (!json_path.empty()) json.open(json_path);
    const ApmmShape shapes[] = {{64, 1024, 1024}, {1024, 4096, 4096}, {4096, 4096, 4096}};
    const std::pair<OperandFormat, OperandFormat> precisions[] = {{{1, Encoding::Unsigned}, {1, Encoding::Unsigned}},
                                                                  {{1, Encoding::Pm1}, {2, Encoding::Unsigned}},
                                                                  {{2, Encoding::Signed}, {2, Encoding::Unsigned}}};
    std::printf("%-16s %-6s %9s %9s %9s %9s %8s %s\n", "shape", "prec", "ours us", "int8 us", "fp8 us", "fp16 us",
                "vs best", "exact");
    for (const ApmmShape& sh : shapes) {
      double vendor[3];
      const bench::VendorType types[] = {bench::VendorType::Int8, bench::VendorType::Fp8, bench::VendorType::Fp16};
      for (int i = 0; i < 3; ++i) {
        bench::CublasLtGemm g(types[i], sh.M, sh.N, sh.K);
        vendor[i] = median_launch_us(launches, [&] { g.run(); });
      }
      const double best = *std::min_element(vendor, vendor + 3);
      for (const auto& [w, x] : precisions) {
        KernelSpec spec;
        spec.w = w;
        spec.x = x;
        const VerifyReport ours = verify_apmm(engine, spec, sh, 7, launches);
        const std::string shape = fmt::format("{}x{}x{}", sh.M, sh.N, sh.K);
        std::printf("%-16s w%da%-3d %9.2f %9.2f %9.2f %9.2f %7.2fx %s\n", shape.c_str(), w.bits, x.bits, ours.kernel_us,
                    vendor[0], vendor[1], vendor[2], best / ours.kernel_us, ours.mismatches == 0 ? "yes" : "NO");
        if (json) {
          nlohmann::json j = ours.to_json();
          j["int8_us"] = vendor[0];
          j["fp8_us"] = vendor[1];
          j["fp16_us"] = vendor[2];
          j["speedup_vs_best_vendor"] = best / ours.kernel_us;
          json << j.dump() << "\n";
        }
        if (ours.mismatches) return 1;
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "apnn_bench_gemm: %s\n", e.what());
    return 1;
  }
  return 0;
}
