// apnn_bench_conv: our APConv against cuDNN's best fp16 NHWC convolution, same process,
// same timing rule. Each of our configurations is first checked bit-exact against the
// CPU reference on fresh random inputs. Prints a table and JSON lines (--json FILE).
#include <algorithm>
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "bench/cudnn_conv.h"
#include "runtime/launch_timing.h"
#include "engine/conv_runner.h"
#include "engine/verify.h"

using namespace apnn;

int main(int argc, char** argv) {
  CLI::App app{"APConv vs cuDNN fp16 NHWC"};
  std::string json_path;
  int launches = 50;
  app.add_option("--json", json_path, "write one JSON line per row here");
  app.add_option("--launches", launches, "back-to-back launches per timed repeat");
  CLI11_PARSE(app, argc, argv);
  try {
    Engine engine;
    std::ofstream json;
    if (!json_path.empty()) json.open(json_path);
    struct Row { int p; Encoding pe; int q; Encoding qe; ConvShape s; ConvParams c; };
    std::vector<Row> rows;
    for (int64_t ch : {128, 256, 512, 1024})
      for (auto pq : {std::pair{1, 2}, {2, 2}, {1, 4}, {2, 8}})
        rows.push_back({pq.first, pq.first == 1 ? Encoding::Pm1 : Encoding::Signed, pq.second, Encoding::Unsigned,
                        {1, ch, 16, 16, ch}, {3, 3, 1, 1, 1, 1}});
    std::printf("%-6s %-28s %10s %10s %8s %s\n", "prec", "shape (N,C,H,W)->O k/s/p", "ours us", "cudnn us", "speedup",
                "exact");
    for (const Row& r : rows) {
      KernelSpec spec;
      spec.op = Op::Apconv;
      spec.w = {r.p, r.pe};
      spec.x = {r.q, r.qe};
      spec.conv = r.c;
      const VerifyReport ours = verify_apconv(engine, spec, r.s, 42, launches);
      const ConvGeometry g = conv_geometry(spec, r.s);
      bench::CudnnConv cudnn(g);
      // cuDNN's legacy API costs host time per call; its own timing of the chosen algorithm
      // (cudnnFind) has none of that: report the faster of the two, conservative for us.
      const double cudnn_loop_us = median_launch_us(launches, [&] { cudnn.run(); });
      const double cudnn_us = std::min(cudnn_loop_us, cudnn.find_us());
      const std::string shape = fmt::format("({},{},{},{})->{} {}x{}/{}/{}", g.N, g.C, g.H, g.W, g.O, g.kh, g.kw, g.sh, g.ph);
      std::printf("w%da%-3d %-28s %10.2f %10.2f %7.2fx %s\n", r.p, r.q, shape.c_str(), ours.kernel_us, cudnn_us,
                  cudnn_us / ours.kernel_us, ours.mismatches == 0 ? "yes" : "NO");
      if (json) {
        nlohmann::json j = ours.to_json();
        j["cudnn_fp16_nhwc_us"] = cudnn_us;
        j["cudnn_loop_us"] = cudnn_loop_us;
        j["cudnn_find_us"] = cudnn.find_us();
        j["cudnn_algo"] = cudnn.algorithm();
        j["speedup"] = cudnn_us / ours.kernel_us;
        json << j.dump() << "\n";
      }
      if (ours.mismatches) return 1;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "apnn_bench_conv: %s\n", e.what());
    return 1;
  }
  return 0;
}
