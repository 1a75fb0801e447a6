#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "cli/commands.h"
#include "engine/verify.h"

namespace apnn::cli {

namespace {

struct ShapeFlag {
  const char* name;
  int64_t value = 0;
  CLI::Option* option = nullptr;
};

// The shape flags of the spec's op must all be given, and no flag of the other op.
void check_flags(const std::vector<ShapeFlag>& needed, const std::vector<ShapeFlag>& foreign, const char* op) {
  for (const ShapeFlag& f : foreign)
    if (f.option->count()) throw Error(ErrorKind::InvalidInput, fmt::format("{} does not apply to op {}", f.name, op));
  for (const ShapeFlag& f : needed)
    if (!f.option->count()) throw Error(ErrorKind::InvalidInput, fmt::format("{} is required for op {}", f.name, op));
}

}  // namespace

void add_verify(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("verify", "Run a spec on fresh random inputs, compare with the CPU reference, time it");
  auto spec_path = std::make_shared<std::string>();
  auto mm = std::make_shared<std::vector<ShapeFlag>>(std::vector<ShapeFlag>{{"--m"}, {"--n"}, {"--k"}});
  auto cv = std::make_shared<std::vector<ShapeFlag>>(
      std::vector<ShapeFlag>{{"--batch"}, {"--in-channels"}, {"--height"}, {"--width"}, {"--out-channels"}});
  auto seed = std::make_shared<uint64_t>(1);
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("spec", *spec_path, "kernel spec (JSON file)")->required();
  const char* help[] = {"apmm: rows of W and Y", "apmm: rows of X, columns of Y", "apmm: reduction length"};
  for (size_t i = 0; i < mm->size(); ++i) (*mm)[i].option = cmd->add_option((*mm)[i].name, (*mm)[i].value, help[i]);
  for (ShapeFlag& f : *cv) f.option = cmd->add_option(f.name, f.value, "apconv: input/output size");
  cmd->add_option("--seed", *seed, "random seed (default 1)");
  cmd->add_flag("--json", *as_json, "print the report as one JSON line");
  cmd->callback([=] {
    *action = [=] {
      const KernelSpec spec = load_spec_file(*spec_path);
      VerifyReport r;
      if (spec.op == Op::Apmm) {
        check_flags(*mm, *cv, "apmm");
        Engine engine;
        r = verify_apmm(engine, spec, {(*mm)[0].value, (*mm)[1].value, (*mm)[2].value}, *seed);
      } else {
        check_flags(*cv, *mm, "apconv");
        const std::vector<ShapeFlag>& c = *cv;
        Engine engine;
        r = verify_apconv(engine, spec, {c[0].value, c[1].value, c[2].value, c[3].value, c[4].value}, *seed);
      }
      std::printf("%s\n", *as_json ? r.to_json().dump().c_str() : r.to_text().c_str());
      return r.mismatches == 0 ? 0 : 1;
    };
  });
}

}  // namespace apnn::cli
