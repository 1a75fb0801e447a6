#include <cstdio>

#include <fmt/format.h>

#include "apnn/engine.h"
#include "cli/commands.h"
#include "engine/verify.h"

namespace apnn::cli {

void add_verify(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("verify", "Run a spec on fresh random inputs, compare with the CPU reference, time it");
  auto spec_path = std::make_shared<std::string>();
  auto shape = std::make_shared<ApmmShape>();
  auto seed = std::make_shared<uint64_t>(1);
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("spec", *spec_path, "kernel spec (JSON file)")->required();
  cmd->add_option("--m", shape->M, "rows of W and Y")->required();
  cmd->add_option("--n", shape->N, "rows of X, columns of Y")->required();
  cmd->add_option("--k", shape->K, "reduction length")->required();
  cmd->add_option("--seed", *seed, "random seed (default 1)");
  cmd->add_flag("--json", *as_json, "print the report as one JSON line");
  cmd->callback([=] {
    *action = [=] {
      const KernelSpec spec = load_spec_file(*spec_path);
      Engine engine;
      const VerifyReport r = verify_apmm(engine, spec, *shape, *seed);
      if (*as_json) {
        std::printf("%s\n", r.to_json().dump().c_str());
      } else {
        std::printf("verify %s %ldx%ldx%ld on %s (%s): mismatches %lu%s, gemm %.2f us (%.1f TOPS), pack %.2f us\n",
                    r.canonical.c_str(), static_cast<long>(r.shape.M), static_cast<long>(r.shape.N),
                    static_cast<long>(r.shape.K), r.device.c_str(), r.arch.c_str(),
                    static_cast<unsigned long>(r.mismatches),
                    r.mismatches ? fmt::format(" (first {})", r.first_mismatch).c_str() : "", r.gemm_us, r.tops, r.pack_us);
      }
      return r.mismatches == 0 ? 0 : 1;
    };
  });
}

}  // namespace apnn::cli
