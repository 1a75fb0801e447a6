// apnn prewarm MODEL.json [--arch A] [--threads N] [--json]: compile every distinct kernel of a
// model into the cache. Progress goes to stderr (one updating line on a terminal), the summary
// (or --json's object) to stdout.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "apnn/model.h"
#include "cli/commands.h"
#include "compiler/nvrtc_compiler.h"
#include "engine/prewarm.h"
#include "engine/tile_choice.h"

namespace apnn::cli {

namespace {

std::string layers_label(const PrewarmKernel& k) {
  std::string s = k.layers.front();
  if (k.layers.size() > 1) s += fmt::format(" (+{} more)", k.layers.size() - 1);
  return s;
}

PrewarmProgress progress_printer(bool tty) {
  return [tty](const PrewarmEvent& e) {
    const PrewarmKernel& k = *e.kernel;
    if (tty) {
      // One line, rewritten: what is compiling now, and how far we are.
      if (e.kind == PrewarmEvent::Kind::Started)
        std::fprintf(stderr, "\r\033[K[%zu/%zu] compiling %s ...", e.done + 1, e.total, layers_label(k).c_str());
      else if (e.done == e.total)
        std::fprintf(stderr, "\r\033[K");
    } else if (e.kind == PrewarmEvent::Kind::Finished) {
      const std::string what = e.failed ? "FAILED"
                               : k.hit  ? "cache hit"
                                        : fmt::format("compiled in {:.0f} ms", k.compile_ms);
      std::fprintf(stderr, "[%zu/%zu] %s: %s\n", e.done, e.total, layers_label(k).c_str(), what.c_str());
    }
    std::fflush(stderr);
  };
}

}  // namespace

void add_prewarm(CLI::App& app, Action* action) {
  auto* cmd =
      app.add_subcommand("prewarm", "Compile every kernel of a model file into the cache (no GPU needed with --arch)");
  auto model_path = std::make_shared<std::string>();
  auto arch = std::make_shared<std::string>();
  auto threads = std::make_shared<unsigned>(0);
  auto json_out = std::make_shared<bool>(false);
  cmd->add_option("model", *model_path, "model file (JSON, see include/apnn/model.h)")->required();
  cmd->add_option("--arch", *arch, "target: sm_80, sm_86, sm_89, sm_90, sm_90a (default: the current GPU's)");
  cmd->add_option("--threads", *threads, "parallel compiles (default: the number of CPU threads)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_flag("--json", *json_out, "print one JSON object (counts, times, every kernel) instead of the summary line");
  cmd->callback([=] {
    *action = [=] {
      if (!arch->empty()) check_arch(*arch);
      const Model model = load_model_file(*model_path);
      Target target;
      if (arch->empty()) {
        try {
          target = current_target();
        } catch (const Error& e) {
          throw Error(e.kind(), std::string(e.what()) + "; pass --arch (e.g. --arch sm_90a) to prewarm without a GPU");
        }
      } else {
        target = nominal_target(*arch);
      }
      Engine engine;
      const PrewarmReport r = prewarm(engine, model, target, *threads, progress_printer(::isatty(2) == 1));
      if (*json_out) {
        std::printf("%s\n", r.to_json().dump().c_str());
      } else {
        std::printf("prewarmed %s: %zu layers, %zu distinct kernels, %zu hits, %zu compiled, %.3f s\n", r.model.c_str(),
                    r.layers, r.kernels, r.hits, r.misses, r.seconds);
      }
      return 0;
    };
  });
}

}  // namespace apnn::cli
