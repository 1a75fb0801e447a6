#include <cstdio>

#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "apnn/npy.h"
#include "cli/commands.h"
#include "cli/layer_io.h"
#include "engine/operand_check.h"

namespace apnn::cli {

namespace {

// An integer .npy of `dims` dimensions, none empty, whose values are valid for `f`, as int16.
std::vector<int16_t> load_operand(const std::string& path, const char* name, const OperandFormat& f, size_t dims,
                                  std::vector<int64_t>* shape) {
  const NpyArray a = read_npy_int(path);
  if (a.shape.size() != dims)
    throw Error(ErrorKind::InvalidInput,
                fmt::format("{}: {} must be a {}-D array, got shape ({})", path, name, dims, fmt::join(a.shape, ", ")));
  for (int64_t d : a.shape)
    if (d == 0)
      throw Error(ErrorKind::InvalidInput, fmt::format("{}: {} has an empty dimension: shape ({})", path, name,
                                                       fmt::join(a.shape, ", ")));
  *shape = a.shape;
  const int64_t cols = static_cast<int64_t>(a.values.size()) / a.shape[0];
  // Indices are reported in the flattened (row, rest) form: enough to find the value.
  check_operand_values((fmt::format("{} ({})", path, name)).c_str(), f, a.values.data(), a.shape[0], cols);
  return std::vector<int16_t>(a.values.begin(), a.values.end());
}

}  // namespace

void add_gemm(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("gemm", "Y = W . X^T on the GPU, then the spec's epilogue: W (M,K), X (N,K) integer .npy");
  auto spec_path = std::make_shared<std::string>();
  auto w_path = std::make_shared<std::string>(), x_path = std::make_shared<std::string>();
  auto files = std::make_shared<LayerFiles>();
  cmd->add_option("spec", *spec_path, "kernel spec (JSON file)")->required();
  cmd->add_option("--w", *w_path, "weights W, shape (M, K)")->required();
  cmd->add_option("--x", *x_path, "activations X, shape (N, K)")->required();
  add_layer_options(cmd, files.get(), "output Y (M, N): int32 (int16 with \"output\": \"int16\"), float32 after scale_bias, or packed planes (q, N, words)");
  cmd->callback([=] {
    *action = [=] {
      const KernelSpec spec = load_spec_file(*spec_path);
      if (spec.op != Op::Apmm)
        throw Error(ErrorKind::InvalidInput, fmt::format("{}: gemm needs op apmm, got {}", *spec_path, op_name(spec.op)));
      std::vector<int64_t> ws, xs;
      const std::vector<int16_t> W = load_operand(*w_path, "W", spec.w, 2, &ws);
      const std::vector<int16_t> X = load_operand(*x_path, "X", spec.x, 2, &xs);
      if (xs[1] != ws[1])
        throw Error(ErrorKind::InvalidInput, fmt::format("mismatched K: {} is ({}, {}) but {} is ({}, {})", *w_path, ws[0],
                                                         ws[1], *x_path, xs[0], xs[1]));
      const EpilogueParams params = load_epilogue_params(spec.epilogue, *files);
      const ApmmShape s{ws[0], xs[0], ws[1]};
      Engine engine;
      write_layer_output(apmm_layer(engine, spec, W.data(), X.data(), s, params), *files);  // atomic files
      return 0;
    };
  });
}

void add_conv(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("conv", "APConv on the GPU, then the spec's epilogue: W (O,C,Kh,Kw), X (N,C,H,W) integer .npy");
  auto spec_path = std::make_shared<std::string>();
  auto w_path = std::make_shared<std::string>(), x_path = std::make_shared<std::string>();
  auto files = std::make_shared<LayerFiles>();
  cmd->add_option("spec", *spec_path, "kernel spec (JSON file, op apconv)")->required();
  cmd->add_option("--w", *w_path, "weights W, shape (O, C, Kh, Kw)")->required();
  cmd->add_option("--x", *x_path, "activations X, shape (N, C, H, W)")->required();
  add_layer_options(cmd, files.get(),
                    "output Y (N, O, Ho', Wo'): int32, float32 after scale_bias, or packed planes (N, q, Ho', Wo', words)");
  cmd->callback([=] {
    *action = [=] {
      const KernelSpec spec = load_spec_file(*spec_path);
      if (spec.op != Op::Apconv)
        throw Error(ErrorKind::InvalidInput, fmt::format("{}: conv needs op apconv, got {}", *spec_path, op_name(spec.op)));
      std::vector<int64_t> ws, xs;
      const std::vector<int16_t> W = load_operand(*w_path, "W", spec.w, 4, &ws);
      const std::vector<int16_t> X = load_operand(*x_path, "X", spec.x, 4, &xs);
      if (ws[1] != xs[1])
        throw Error(ErrorKind::InvalidInput, fmt::format("mismatched channels: {} has C={} but {} has C={}", *w_path, ws[1],
                                                         *x_path, xs[1]));
      if (ws[2] != spec.conv.kh || ws[3] != spec.conv.kw)
        throw Error(ErrorKind::InvalidInput, fmt::format("{}: kernel is {}x{} but the spec says {}x{}", *w_path, ws[2], ws[3],
                                                         spec.conv.kh, spec.conv.kw));
      const EpilogueParams params = load_epilogue_params(spec.epilogue, *files);
      const ConvShape s{xs[0], xs[1], xs[2], xs[3], ws[0]};
      Engine engine;
      write_layer_output(apconv_layer(engine, spec, W.data(), X.data(), s, params), *files);
      return 0;
    };
  });
}

}  // namespace apnn::cli
