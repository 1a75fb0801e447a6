// apnn: request, compile, cache and run arbitrary-precision kernels.
// Exit codes: 0 ok; 1 a check failed or an internal/compile/driver error;
// 2 bad input (spec, shapes, values, files, options); 3 no CUDA driver or device.
#include <cstdio>
#include <string>
#include <vector>

#include "apnn/error.h"
#include "cli/commands.h"

namespace {

int exit_code(apnn::ErrorKind k) {
  switch (k) {
    case apnn::ErrorKind::InvalidSpec:
    case apnn::ErrorKind::InvalidInput:
    case apnn::ErrorKind::Io: return 2;
    case apnn::ErrorKind::NoDriver:
    case apnn::ErrorKind::NoDevice: return 3;
    default: return 1;
  }
}

}  // namespace

// CLI11 reports an unknown word as "A subcommand is required"; name it instead.
bool unknown_command(const CLI::App& app, int argc, char** argv, int depth) {
  if (argc <= depth || argv[depth][0] == '-') return false;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() != argv[depth]) continue;
    return sub->get_require_subcommand_min() > 0 && unknown_command(*sub, argc, argv, depth + 1);
  }
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "apnn: unknown command '%s' (one of %s)\n", argv[depth], list.c_str());
  return true;
}

int main(int argc, char** argv) {
  CLI::App app{"apnn: arbitrary-precision neural-network kernels, JIT-compiled for tensor cores"};
  app.require_subcommand(1);
  apnn::cli::Action action;
  apnn::cli::add_compile(app, &action);
  apnn::cli::add_gemm(app, &action);
  apnn::cli::add_conv(app, &action);
  apnn::cli::add_verify(app, &action);
  apnn::cli::add_tune(app, &action);
  apnn::cli::add_cache(app, &action);
  apnn::cli::add_prewarm(app, &action);
  apnn::cli::add_bench(app, &action);
  if (unknown_command(app, argc, argv, 1)) return 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "apnn: %s\n", e.what());
    return 2;
  }
  try {
    return action();
  } catch (const apnn::Error& e) {
    std::fprintf(stderr, "apnn: %s\n", e.what());
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apnn: internal error: %s\n", e.what());
    return 1;
  }
}
