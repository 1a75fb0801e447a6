// apnn: request, compile, cache and run arbitrary-precision kernels.
// Exit codes: 0 ok; 1 a check failed or an internal/compile/driver error;
// 2 bad input (spec, shapes, values, files, options); 3 no CUDA driver or device.
#include <cstdio>

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

int main(int argc, char** argv) {
  CLI::App app{"apnn: arbitrary-precision neural-network kernels, JIT-compiled for tensor cores"};
  app.require_subcommand(1);
  apnn::cli::Action action;
  apnn::cli::add_compile(app, &action);
  apnn::cli::add_gemm(app, &action);
  apnn::cli::add_conv(app, &action);
  apnn::cli::add_verify(app, &action);
  apnn::cli::add_cache(app, &action);
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
