// apnn_bench_wgmma: the sm_90a wgmma core against the mma.sync core and cuBLASLt int8, one
// process, one timing rule (runtime/launch_timing.h). Rows up to --verify-max elements of
// M*N*K are first checked bit-exact against the CPU reference (verify_apmm); bigger ones are
// timed only. Columns: our time, logical TOPS, binary TOPS (logical x p*q, against the
// 15.6 POPS wgmma peak), and int8's time. Only the wgmma rows are verified.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "apnn/reference.h"
#include "bench/cublaslt_gemm.h"
#include "engine/apmm_runner.h"
#include "engine/tile_choice.h"
#include "engine/verify.h"
#include "runtime/device.h"
#include "runtime/launch_timing.h"
#include "spec/kernel_rules.h"

using namespace apnn;

namespace {

double time_only(Engine& engine, const KernelSpec& spec, const ApmmShape& s, int launches) {
  std::shared_ptr<Kernel> kernel = engine.kernel(with_tile_for(spec, apmm_problem(s)));
  ApmmRunner runner(kernel);
  DeviceBuffer w = DeviceBuffer::from(random_operand(spec.w, static_cast<size_t>(s.M * s.K), 11));
  DeviceBuffer x = DeviceBuffer::from(random_operand(spec.x, static_cast<size_t>(s.N * s.K), 12));
  DeviceBuffer y(static_cast<size_t>(s.M * s.N) * 4);
  const PackedOperand pw = runner.pack_w(w, s.M, s.K);
  const PackedOperand px = runner.pack_x(x, s.N, s.K);
  return median_launch_us(launches, [&] { runner.gemm(pw, px, y); });
}

OperandFormat parse_format(const std::string& t) {  // e.g. "1pm1", "2unsigned", "2signed"
  const int bits = std::stoi(t.substr(0, 1));
  const std::string e = t.substr(1);
  return {bits, e == "pm1" ? Encoding::Pm1 : (e == "signed" ? Encoding::Signed : Encoding::Unsigned)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"APMM wgmma core vs mma.sync core vs cuBLASLt int8"};
  std::vector<std::string> shapes_arg = {"4096x4096x4096", "1024x4096x4096"};
  std::vector<std::string> precs_arg = {"1unsigned:1unsigned", "1pm1:2unsigned", "2signed:2unsigned"};
  int launches = 20;
  double verify_max = 1e11;
  bool with_sm80 = true;
  std::string tile_json;
  app.add_option("--shape", shapes_arg, "MxNxK (repeatable)");
  app.add_option("--prec", precs_arg, "W:X formats, e.g. 1pm1:2unsigned (repeatable)");
  app.add_option("--launches", launches, "back-to-back launches per timed repeat");
  app.add_option("--verify-max", verify_max, "verify against the CPU reference up to this M*N*K");
  app.add_option("--tile", tile_json, "wgmma tile as JSON (default rules::wgmma_tile)");
  app.add_flag("!--no-sm80", with_sm80, "skip the mma.sync rows");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::string arch = current_device().arch();
    std::printf("device %s (%s)\n", current_device().name.c_str(), arch.c_str());
    std::printf("%-16s %-22s %-28s %10s %9s %9s %9s %s\n", "shape", "prec", "tile", "us", "TOPS", "bin TOPS", "int8 us",
                "exact");
    for (const std::string& sh_text : shapes_arg) {
      ApmmShape sh{};
      if (std::sscanf(sh_text.c_str(), "%ldx%ldx%ld", &sh.M, &sh.N, &sh.K) != 3) throw Error(ErrorKind::InvalidInput, "shape");
      double int8_us = 0;
      {
        bench::CublasLtGemm g(bench::VendorType::Int8, sh.M, sh.N, sh.K);
        int8_us = median_launch_us(launches, [&] { g.run(); });
      }
      const double macs = static_cast<double>(sh.M) * sh.N * sh.K;
      for (const std::string& pr : precs_arg) {
        KernelSpec spec;
        spec.w = parse_format(pr.substr(0, pr.find(':')));
        spec.x = parse_format(pr.substr(pr.find(':') + 1));
        Tile wt;
        if (!tile_json.empty()) {
          KernelSpec t = parse_spec_text(fmt::format(R"({{"op":"apmm","w_bits":{},"w_enc":"unsigned","x_bits":{},"x_enc":"unsigned","tile":{}}})", spec.w.bits,
                                                     spec.x.bits, tile_json));
          wt = *t.tile;
        } else if (!rules::wgmma_tile(&wt, spec.w, spec.x)) {
          throw Error(ErrorKind::InvalidSpec, "no wgmma tile");
        }
        struct Row { std::string label; KernelSpec s; bool disable; };
        std::vector<Row> rows;
        KernelSpec ws = spec;
        ws.tile = wt;
        rows.push_back({"wgmma", ws, false});
        if (with_sm80) {
          rows.push_back({"same tile, mma.sync", ws, true});
          rows.push_back({"heuristic tile", spec, true});
        }
        for (const Row& r : rows) {
          if (r.disable) setenv("APNN_DISABLE_WGMMA", "1", 1); else unsetenv("APNN_DISABLE_WGMMA");
          Engine engine;  // a fresh one: its module table would otherwise serve the other core
          const KernelSpec resolved = with_tile_for(r.s, apmm_problem(sh));
          const Tile& t = *resolved.tile;
          const std::string tile = fmt::format("{}x{}x{} s{} w{}x{}{}", t.bm, t.bn, t.bk, t.stages, t.warps_m, t.warps_n,
                                               rules::use_wgmma(resolved, arch) ? " wg" : "");
          double us = 0;
          std::string exact = "untested";
          if (macs <= verify_max && !r.disable) {
            const VerifyReport v = verify_apmm(engine, r.s, sh, 7, launches);
            us = v.kernel_us;
            exact = v.mismatches == 0 ? "yes" : fmt::format("NO ({} mismatches, first {})", v.mismatches, v.first_mismatch);
          } else {
            us = time_only(engine, r.s, sh, launches);
          }
          const double tops = 2.0 * macs / (us * 1e-6) / 1e12;
          std::printf("%-16s %-22s %-28s %10.2f %9.1f %9.1f %9.2f %s [%s]\n", sh_text.c_str(), pr.c_str(), tile.c_str(), us,
                      tops, tops * spec.w.bits * spec.x.bits, int8_us, exact.c_str(), r.label.c_str());
          std::fflush(stdout);
        }
        unsetenv("APNN_DISABLE_WGMMA");
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "apnn_bench_wgmma: %s\n", e.what());
    return 1;
  }
  return 0;
}
