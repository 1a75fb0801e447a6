#include "cli/layer_io.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "apnn/conv_layout.h"
#include "apnn/error.h"
#include "apnn/npy.h"

namespace apnn::cli {

namespace {

std::vector<float> load_vector(const std::string& path, const char* option) {
  const NpyFloatArray a = read_npy_float(path);
  if (a.shape.size() > 1)
    throw Error(ErrorKind::InvalidInput,
                fmt::format("{}: {} must be 1-D (or a scalar), got shape ({})", path, option, fmt::join(a.shape, ", ")));
  std::vector<float> v;
  for (size_t i = 0; i < a.values.size(); ++i) {
    const double d = a.values[i];
    // float64 files: a finite value must stay finite and a non-zero one non-zero in float32.
    const bool fits = !std::isfinite(d) || (std::fabs(d) <= std::numeric_limits<float>::max() &&
                                            (d == 0 || std::fabs(d) >= std::numeric_limits<float>::denorm_min()));
    if (!fits)
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: {} value {} at index {} does not fit float32", path, option, d, i));
    v.push_back(static_cast<float>(d));
  }
  return v;
}

}  // namespace

void add_layer_options(CLI::App* cmd, LayerFiles* f, const char* out_help) {
  cmd->add_option("--out", f->out, out_help)->required();
  cmd->add_option("--scale", f->scale, "scale_bias: per-output-channel scales, float .npy (O,)");
  cmd->add_option("--bias", f->bias, "scale_bias: per-output-channel biases, float .npy (O,)");
  cmd->add_option("--q-scale", f->q_scale, "quantize: scale s, float .npy, () or (1,) per tensor, (O,) per channel");
  cmd->add_option("--q-zero", f->q_zero, "quantize: zero point z, float .npy, shaped like --q-scale");
  cmd->add_option("--sums", f->sums, "quantize: also write the per-pixel plane-weighted popcounts (int32 .npy)");
  cmd->add_flag("--unpack", f->unpack, "quantize: write the integer values (int16 .npy) instead of the packed planes");
}

EpilogueParams load_epilogue_params(const Epilogue& e, const LayerFiles& f) {
  const struct {
    const char* option;
    const std::string& path;
    bool wanted;
    const char* needs;
  } files[] = {{"--scale", f.scale, e.has(EpilogueOpKind::ScaleBias), "scale_bias"},
               {"--bias", f.bias, e.has(EpilogueOpKind::ScaleBias), "scale_bias"},
               {"--q-scale", f.q_scale, e.quantize() != nullptr, "quantize"},
               {"--q-zero", f.q_zero, e.quantize() != nullptr, "quantize"}};
  for (const auto& file : files) {
    if (file.wanted && file.path.empty())
      throw Error(ErrorKind::InvalidInput, fmt::format("the spec's '{}' op needs {} FILE.npy", file.needs, file.option));
    if (!file.wanted && !file.path.empty())
      throw Error(ErrorKind::InvalidInput, fmt::format("{} was given but the spec's epilogue has no '{}' op", file.option,
                                                       file.needs));
  }
  if (!f.sums.empty() && !e.quantize())
    throw Error(ErrorKind::InvalidInput, "--sums was given but the spec's epilogue has no 'quantize' op");
  if (f.unpack && !e.quantize())
    throw Error(ErrorKind::InvalidInput, "--unpack was given but the spec's epilogue has no 'quantize' op");
  EpilogueParams p;
  if (!f.scale.empty()) p.scale = load_vector(f.scale, "--scale");
  if (!f.bias.empty()) p.bias = load_vector(f.bias, "--bias");
  if (!f.q_scale.empty()) p.q_scale = load_vector(f.q_scale, "--q-scale");
  if (!f.q_zero.empty()) p.q_zero = load_vector(f.q_zero, "--q-zero");
  return p;
}

void write_layer_output(const LayerResult& r, const LayerFiles& f) {
  switch (r.type) {
    case OutputType::Int32: write_npy_int32(f.out, r.shape, r.i32.data()); return;
    case OutputType::Int16: write_npy_int(f.out, r.shape, std::vector<int64_t>(r.i32.begin(), r.i32.end()).data(), "<i2"); return;
    case OutputType::Float32: write_npy_float32(f.out, r.shape, r.f32.data()); return;
    case OutputType::Packed: break;
  }
  if (f.unpack) {
    const std::vector<int16_t> v = unpack_layer(r);
    write_npy_int(f.out, r.shape, std::vector<int64_t>(v.begin(), v.end()).data(), "<i2");
  } else {
    const int q = r.packed.bits;
    const std::vector<int64_t> layout =
        r.shape.size() == 2 ? std::vector<int64_t>{q, r.shape[1], conv_channel_words(r.shape[0])}
                            : std::vector<int64_t>{r.shape[0], q, r.shape[2], r.shape[3], conv_channel_words(r.shape[1])};
    write_npy_int(f.out, layout, std::vector<int64_t>(r.planes.begin(), r.planes.end()).data(), "<u4");
  }
  if (!f.sums.empty()) {
    const std::vector<int64_t> pixels =
        r.shape.size() == 2 ? std::vector<int64_t>{r.shape[1]} : std::vector<int64_t>{r.shape[0], r.shape[2], r.shape[3]};
    write_npy_int32(f.sums, pixels, r.sums.data());
  }
}

}  // namespace apnn::cli
