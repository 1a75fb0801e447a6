#include <cstdio>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "cli/commands.h"
#include "compiler/nvrtc_compiler.h"
#include "runtime/device.h"

namespace apnn::cli {

void add_compile(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("compile", "Compile a kernel spec to a cached cubin (no GPU needed with --arch)");
  auto spec_path = std::make_shared<std::string>();
  auto arch = std::make_shared<std::string>();
  cmd->add_option("spec", *spec_path, "kernel spec (JSON file)")->required();
  cmd->add_option("--arch", *arch, "target: sm_80, sm_86, sm_89, sm_90, sm_90a (default: the current GPU's)");
  cmd->callback([=] {
    *action = [=] {
      const KernelSpec spec = load_spec_file(*spec_path);
      std::string target = *arch;
      if (target.empty()) {
        try {
          target = current_device().arch();
        } catch (const Error& e) {
          throw Error(e.kind(), std::string(e.what()) + "; pass --arch to compile without a GPU");
        }
      }
      check_arch(target);
      Engine engine;
      const CompileResult r = engine.compile(spec, target);
      const nlohmann::json out = {{"spec", nlohmann::json::parse(r.canonical)},
                                  {"key", r.key.hex()},
                                  {"arch", r.arch},
                                  {"cache", r.cache_state()},
                                  {"compile_ms", r.compile_ms},
                                  {"cubin_bytes", r.cubin.size()}};
      std::printf("%s\n", out.dump().c_str());
      return 0;
    };
  });
}

}  // namespace apnn::cli
