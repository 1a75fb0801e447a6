#include <cstdio>

#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "apnn/npy.h"
#include "cli/commands.h"
#include "engine/operand_check.h"

namespace apnn::cli {

namespace {

// A 2-D integer .npy whose values are valid for `f`, as int16.
std::vector<int16_t> load_operand(const std::string& path, const char* name, const OperandFormat& f, int64_t* rows,
                                  int64_t* cols) {
  const NpyArray a = read_npy_int(path);
  if (a.shape.size() != 2)
    throw Error(ErrorKind::InvalidInput,
                fmt::format("{}: {} must be a 2-D array, got shape ({})", path, name, fmt::join(a.shape, ", ")));
  *rows = a.shape[0];
  *cols = a.shape[1];
  if (*rows == 0 || *cols == 0)
    throw Error(ErrorKind::InvalidInput, fmt::format("{}: {} has an empty dimension: shape ({}, {})", path, name, *rows, *cols));
  check_operand_values((fmt::format("{} ({})", path, name)).c_str(), f, a.values.data(), *rows, *cols);
  return std::vector<int16_t>(a.values.begin(), a.values.end());
}

}  // namespace

void add_gemm(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("gemm", "Y = W . X^T on the GPU: W (M,K), X (N,K) integer .npy; Y (M,N) int32 .npy");
  auto spec_path = std::make_shared<std::string>();
  auto w_path = std::make_shared<std::string>(), x_path = std::make_shared<std::string>();
  auto out_path = std::make_shared<std::string>();
  cmd->add_option("spec", *spec_path, "kernel spec (JSON file)")->required();
  cmd->add_option("--w", *w_path, "weights W, shape (M, K)")->required();
  cmd->add_option("--x", *x_path, "activations X, shape (N, K)")->required();
  cmd->add_option("--out", *out_path, "output Y, shape (M, N), int32")->required();
  cmd->callback([=] {
    *action = [=] {
      const KernelSpec spec = load_spec_file(*spec_path);
      ApmmShape s;
      int64_t xk = 0;
      const std::vector<int16_t> W = load_operand(*w_path, "W", spec.w, &s.M, &s.K);
      const std::vector<int16_t> X = load_operand(*x_path, "X", spec.x, &s.N, &xk);
      if (xk != s.K)
        throw Error(ErrorKind::InvalidInput,
                    fmt::format("mismatched K: {} is ({}, {}) but {} is ({}, {})", *w_path, s.M, s.K, *x_path, s.N, xk));
      Engine engine;
      const std::vector<int32_t> Y = apmm(engine, spec, W.data(), X.data(), s);
      write_npy_int32(*out_path, {s.M, s.N}, Y.data());  // atomic: no half-written file on failure
      return 0;
    };
  });
}

}  // namespace apnn::cli
