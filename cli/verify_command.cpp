#include <cstdio>

#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "cache/posix_file.h"
#include "cli/commands.h"
#include "cli/shape_flags.h"
#include "compiler/nvrtc_compiler.h"
#include "engine/input_sets.h"
#include "engine/verify.h"

namespace apnn::cli {

void add_verify(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("verify", "Run a spec on fresh random inputs, compare with the CPU reference, time it");
  auto spec_path = std::make_shared<std::string>();
  auto shape = std::make_shared<ShapeFlags>(cmd);
  auto seed = std::make_shared<uint64_t>(1);
  auto as_json = std::make_shared<bool>(false);
  auto input_sets = std::make_shared<int>(0);
  cmd->add_option("spec", *spec_path, "kernel spec (JSON file)")->required();
  cmd->add_option("--seed", *seed, "random seed (default 1)");
  cmd->add_option("--input-sets", *input_sets,
                  "input sets the timing rotates through, each with its own output: 0 (default) enough to span 4x the "
                  "L2 cache (2 to 32), as bench and tune time; 1 reuses one set, L2-resident where it fits")
      ->check(CLI::Number)
      ->check(CLI::Range(0, kMaxInputSets));
  cmd->add_flag("--json", *as_json, "print the report as one JSON line");
  auto timeline_path = std::make_shared<std::string>();
  cmd->add_option("--timeline", *timeline_path,
                  "APMM on the TMA core, compiled with APNN_TIMELINE=1: write each timed launch's per-block phase "
                  "times (engine/timeline.h) to this JSON file");
  cmd->callback([=] {
    *action = [=] {
      const KernelSpec spec = load_spec_file(*spec_path);
      const bool timeline = !timeline_path->empty();
      if (timeline && spec.op != Op::Apmm) throw Error(ErrorKind::InvalidInput, "--timeline: op apmm only (the TMA core)");
      if (timeline && !env_flag("APNN_TIMELINE"))
        throw Error(ErrorKind::InvalidInput, "--timeline needs APNN_TIMELINE=1 in the environment (kernels compiled with the hooks)");
      Engine engine;
      const int launches = TimingRule{}.launches;
      const VerifyReport r = spec.op == Op::Apmm
                                 ? verify_apmm(engine, spec, shape->apmm(spec), *seed, launches, *input_sets, timeline)
                                 : verify_apconv(engine, spec, shape->conv(spec), *seed, launches, *input_sets);
      if (timeline) {  // whole or not at all
        const std::string text = r.timeline.dump(1) + "\n";
        if (const int err = posix::write_file_atomic(*timeline_path, std::vector<char>(text.begin(), text.end())))
          throw Error(ErrorKind::Io, fmt::format("--timeline: cannot write {}: {}", *timeline_path, posix::error_text(err)));
      }
      std::printf("%s\n", *as_json ? r.to_json().dump().c_str() : r.to_text().c_str());
      return r.mismatches == 0 ? 0 : 1;
    };
  });
}

}  // namespace apnn::cli
