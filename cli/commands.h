// Subcommands of the `apnn` CLI. Each registers its options on the app and returns
// the action to run when it is chosen. Errors are thrown as apnn::Error; main()
// turns them into one stderr line and an exit code.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "apnn/spec.h"

namespace apnn::cli {

using Action = std::function<int()>;

void add_compile(CLI::App& app, Action* action);
void add_gemm(CLI::App& app, Action* action);
void add_conv(CLI::App& app, Action* action);
void add_verify(CLI::App& app, Action* action);
void add_tune(CLI::App& app, Action* action);
void add_cache(CLI::App& app, Action* action);
void add_prewarm(CLI::App& app, Action* action);
void add_bench(CLI::App& app, Action* action);

}  // namespace apnn::cli
