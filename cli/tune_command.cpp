#include <unistd.h>

#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "cli/commands.h"
#include "cli/shape_flags.h"
#include "engine/tune.h"

namespace apnn::cli {

namespace {

// A single updating line on a terminal; a plain line per phase and every 10% otherwise.
TuneProgress progress_printer() {
  const bool tty = isatty(STDERR_FILENO);
  auto last = std::make_shared<std::pair<std::string, size_t>>("", SIZE_MAX);
  return [tty, last](size_t done, size_t total, const char* phase) {
    const size_t tenth = total ? done * 10 / total : 10;
    if (tty) {
      std::fprintf(stderr, "\r%-8s [%-40s] %zu/%zu", phase, std::string(total ? 40 * done / total : 40, '#').c_str(), done,
                   total);
      if (done == total) std::fputc('\n', stderr);
    } else if (last->first != phase || last->second != tenth) {
      std::fprintf(stderr, "%s %zu/%zu\n", phase, done, total);
    }
    *last = {phase, tenth};
  };
}

std::string tile_text(const Tile& t) {
  return fmt::format("bm={:<3} bn={:<3} bk={:<4} stages={} warps={}x{}{}", t.bm, t.bn, t.bk, t.stages, t.warps_m, t.warps_n,
                     t.cluster > 1 ? fmt::format(" cluster={}", t.cluster) : "");
}

}  // namespace

void add_tune(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("tune", "Time every legal tile of a spec for one shape on this GPU and record the winner");
  auto spec_path = std::make_shared<std::string>();
  auto shape = std::make_shared<ShapeFlags>(cmd);
  auto options = std::make_shared<TuneOptions>();
  options->threads = std::max(1u, std::thread::hardware_concurrency());
  auto top = std::make_shared<size_t>(5);
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("spec", *spec_path, "kernel spec (JSON file); its tile, if any, is ignored")->required();
  cmd->add_option("--threads", options->threads, "parallel NVRTC compiles (default: the cores)")->check(CLI::Range(1u, 1024u));
  // A large shape's every-tile sweep takes long (w1a1 8192^3 on an H100: 1905 candidates, not
  // done after 270 s, about 100 of them compiling): the cores narrow it.
  cmd->add_option("--core", options->cores,
                  "sweep only the tiles on these cores (mma.sync, wgmma, wgmma-tma, wgmma-halo; repeat or comma-separate; "
                  "the untuned tile is timed for the comparison wherever it runs)")
      ->delimiter(',')
      ->allow_extra_args(false);  // one word an occurrence: a list would swallow the positional spec after it
  cmd->add_option("--top", *top, "configurations to print (default 5)");
  cmd->add_flag("--json", *as_json, "print the result as one JSON line");
  cmd->callback([=] {
    *action = [=] {
      check_core_names(options->cores);  // before the spec file and the GPU
      KernelSpec spec = load_spec_file(*spec_path);
      spec.tile.reset();
      Engine engine;
      const TuneResult r = spec.op == Op::Apmm
                               ? tune_apmm(engine, spec, shape->apmm(spec), *options, progress_printer())
                               : tune_apconv(engine, spec, shape->conv(spec), *options, progress_printer());
      if (*as_json) {
        std::printf("%s\n", r.to_json(*top).dump().c_str());
        return 0;
      }
      std::printf("tuned %s: %zu candidates in %.1f s\n", r.key.c_str(), r.ranked.size(), r.seconds);
      for (size_t i = 0; i < std::min(*top, r.ranked.size()); ++i)
        std::printf("  %zu. %s  %8.2f us%s\n", i + 1, tile_text(r.ranked[i].tile).c_str(), r.ranked[i].us,
                    r.ranked[i].finalist ? "  (final rounds)" : "");
      if (r.heuristic_us > 0)
        std::printf("  untuned:  %s  %8.2f us (the winner is %.2fx faster)\n", tile_text(r.heuristic_tile).c_str(),
                    r.heuristic_us, r.heuristic_us / r.ranked.front().us);
      else
        std::printf("  untuned:  %s  failed: %s\n", tile_text(r.heuristic_tile).c_str(), r.heuristic_error.c_str());
      if (r.prior_tile)
        std::printf("  recorded before:  %s  %8.2f us\n", tile_text(*r.prior_tile).c_str(), r.prior_us);
      std::printf(r.recorded ? "  the winner is recorded\n"
                             : "  nothing recorded: the winner is slower than the untuned or the recorded tile\n");
      return 0;
    };
  });
}

}  // namespace apnn::cli
