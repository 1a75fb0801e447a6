// End-to-end tests of the `apnn` binary with fused epilogue chains: compile prints the
// canonical chain, bad chains and bad parameter files are exit 2 with one stderr line naming
// the problem (checked before any GPU work), and without a GPU a valid run is exit 3 and
// writes nothing; on a GPU, outputs equal the CPU reference through the chain and `verify`
// reports the input sets it timed over. Each test has its own scratch directory and
// APNN_CACHE_DIR.
#include <doctest/doctest.h>

#include "run_cli.h"
#include "test_util.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apnn/conv_reference.h"
#include "apnn/epilogue_reference.h"
#include "apnn/error.h"
#include "apnn/npy.h"
#include "apnn/reference.h"
#include "apnn/spec.h"
#include "runtime/device.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Sandbox {
 public:

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path cache() const { return dir_ / "cache"; }
  std::string text(const std::string& name, const std::string& content) const {
    std::ofstream(path(name), std::ios::binary) << content;
    return path(name);
  }
  std::string spec(const std::string& name, const json& j) const { return text(name, j.dump()); }
  std::string ints(const std::string& name, const std::vector<int64_t>& shape, const std::vector<int64_t>& v,
                   const std::string& descr = "<i2") const {
    apnn::write_npy_int(path(name), shape, v.data(), descr);
    return path(name);
  }
  std::string floats(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& v) const {
    apnn::write_npy_float32(path(name), shape, v.data());
    return path(name);
  }
  // A little-endian float64 .npy of shape (n,), written by hand (the library writes float32 only).
  std::string doubles(const std::string& name, const std::vector<double>& v) const {
    std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(v.size()) + ",), }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header;
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
    return text(name, bytes);
  }
  CliResult run(const std::vector<std::string>& args) const { return run_apnn(args, dir_, cache(), dir_); }

 private:
  ScratchDir scratch_{"apnn-cli-epilogue"};
  const fs::path& dir_ = scratch_.path();
};

// Exit `code`, nothing on stdout, exactly one line on stderr containing every needle.
CliResult expect_error(const Sandbox& sb, const std::vector<std::string>& args, int code,
                       std::initializer_list<std::string> needles) {
  const CliResult r = sb.run(args);
  INFO(describe(args, r));
  CHECK(r.code == code);
  CHECK(r.out.empty());
  CHECK(lines_of(r.err).size() == 1);
  for (const auto& n : needles) CHECK_MESSAGE(contains(r.err, n), "stderr lacks '" << n << "'");
  return r;
}

bool driver_loadable() {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) ::dlclose(h);
  return h != nullptr;
}

json mm_spec(const json& chain) {
  return {{"op", "apmm"}, {"w_bits", 1}, {"w_enc", "pm1"}, {"x_bits", 2}, {"x_enc", "unsigned"}, {"epilogue", chain}};
}
json conv_spec(const json& chain, int pad = 1) {
  return {{"op", "apconv"}, {"w_bits", 1},      {"w_enc", "pm1"},  {"x_bits", 2},
          {"x_enc", "unsigned"}, {"kernel", {3, 3}}, {"pad", {pad, pad}}, {"epilogue", chain}};
}

const json kScaleBias = {{"op", "scale_bias"}};
const json kRelu = {{"op", "relu"}};
const json kMaxPool2 = {{"op", "pool"}, {"kind", "max"}, {"size", 2}};
const json kQuant2 = {{"op", "quantize"}, {"bits", 2}, {"enc", "unsigned"}};

std::vector<int64_t> pm1_values(size_t n) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i % 3 == 0 ? -1 : 1;
  return v;
}
std::vector<int64_t> u2_values(size_t n) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>(i % 4);
  return v;
}

// Operands and parameter files of a 4 x 3 x 64 apmm and a (1,2,6,6) x (4,2,3,3) apconv: both O = 4.
struct Inputs {
  std::string w2, x2, w4, x4;
  std::string scale, bias, q_scale, q_zero, q_scale_scalar;
  explicit Inputs(const Sandbox& sb)
      : w2(sb.ints("w2.npy", {4, 64}, pm1_values(4 * 64))),
        x2(sb.ints("x2.npy", {3, 64}, u2_values(3 * 64))),
        w4(sb.ints("w4.npy", {4, 2, 3, 3}, pm1_values(4 * 2 * 9))),
        x4(sb.ints("x4.npy", {1, 2, 6, 6}, u2_values(2 * 36))),
        scale(sb.floats("scale.npy", {4}, {0.5f, 1.0f, -0.25f, 2.0f})),
        bias(sb.floats("bias.npy", {4}, {0.0f, 1.0f, -1.0f, 0.5f})),
        q_scale(sb.floats("q_scale.npy", {1}, {0.75f})),
        q_zero(sb.floats("q_zero.npy", {1}, {-1.5f})),
        q_scale_scalar(sb.floats("q_scale0.npy", {}, {0.75f})) {}
};

}  // namespace

TEST_CASE("cli epilogue: compile prints the canonical chain, defaults filled") {
  Sandbox sb;
  const std::string mm = sb.spec("mm.json", mm_spec(json::array({kScaleBias, kRelu, kQuant2})));
  const std::string cv = sb.spec("conv.json", conv_spec(json::array({kScaleBias, kRelu, kMaxPool2, kQuant2})));
  auto compile = [&](const std::string& spec) {
    const std::vector<std::string> args = {"compile", spec, "--arch", "sm_80"};
    const CliResult r = sb.run(args);
    INFO(describe(args, r));
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    REQUIRE(lines_of(r.out).size() == 1);
    return json::parse(r.out);
  };
  const json a = compile(mm);
  CHECK(a.at("cache") == "miss");
  CHECK(a.at("spec").at("epilogue") == json::parse(R"([{"op":"scale_bias"},{"op":"relu"},
      {"op":"quantize","bits":2,"enc":"unsigned","scale":"per_tensor"}])"));
  CHECK(a.at("spec").at("tile").at("bm").get<int>() % 32 == 0);
  const json c = compile(cv);
  CHECK(c.at("spec").at("epilogue") == json::parse(R"([{"op":"scale_bias"},{"op":"relu"},
      {"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned","scale":"per_tensor"}])"));
  CHECK(c.at("key") != a.at("key"));
  // The canonical spec printed is itself a spec, with the same key: a hit, no compile.
  const json again = compile(sb.spec("canonical.json", c.at("spec")));
  CHECK(again.at("cache") == "hit");
  CHECK(again.at("key") == c.at("key"));
  CHECK(again.at("spec") == c.at("spec"));
  CHECK(cache_entries(sb.cache()) == 2);
}

TEST_CASE("cli epilogue: bad chains exit 2 with one line naming the element") {
  Sandbox sb;
  struct Case {
    const char* file;
    json spec;
    std::vector<std::string> needles;
  };
  json bits9 = kQuant2;
  bits9["bits"] = 9;
  json relu_size = kRelu;
  relu_size["size"] = 2;
  json q16 = mm_spec(json::array({kQuant2}));
  q16["tile"] = {{"bm", 16}, {"bn", 64}, {"bk", 512}};
  const std::vector<Case> cases = {
      {"not_array.json", mm_spec(kRelu), {"not_array.json", "'epilogue'", "array"}},
      {"pool_mm.json", mm_spec(json::array({kRelu, kMaxPool2})), {"pool_mm.json", "epilogue[1]", "apconv"}},
      {"bits9.json", mm_spec(json::array({kScaleBias, bits9})), {"bits9.json", "'epilogue[1].bits'", "1..8", "got 9"}},
      {"after_q.json", conv_spec(json::array({kQuant2, kRelu})), {"after_q.json", "epilogue[1]", "follows 'quantize'"}},
      {"twice.json", conv_spec(json::array({kRelu, kRelu})), {"twice.json", "epilogue[1]", "appears twice"}},
      {"relu_size.json", conv_spec(json::array({relu_size})), {"relu_size.json", "'epilogue[0].size'"}},
      {"op.json", conv_spec(json::array({{{"op", "softmax"}}})), {"op.json", "'epilogue[0].op'", "softmax"}},
      {"q16.json", q16, {"q16.json", "tile.bm", "32, 64 or 128"}},
  };
  const std::string w = sb.ints("w.npy", {4, 64}, pm1_values(4 * 64));
  const std::string x = sb.ints("x.npy", {3, 64}, u2_values(3 * 64));
  for (const Case& c : cases) {
    INFO(c.file);
    const std::string spec = sb.spec(c.file, c.spec);
    const CliResult r = expect_error(sb, {"compile", spec, "--arch", "sm_80"}, 2, {});
    for (const auto& n : c.needles) CHECK_MESSAGE(contains(r.err, n), "stderr lacks '" << n << "'");
    // gemm reads the spec first as well.
    if (c.spec.at("op") == "apmm")
      expect_error(sb, {"gemm", spec, "--w", w, "--x", x, "--out", sb.path("y.npy")}, 2, {c.file});
  }
  CHECK(cache_entries(sb.cache()) == 0);
  CHECK_FALSE(fs::exists(sb.path("y.npy")));
}

TEST_CASE("cli epilogue: parameter files that do not match the chain are exit 2 before any GPU work") {
  Sandbox sb;
  const Inputs in(sb);
  const std::string out = sb.path("y.npy"), sums = sb.path("sums.npy");
  const std::string mm = sb.spec("mm.json", mm_spec(json::array({kScaleBias, kRelu, kQuant2})));
  const std::string mm_relu = sb.spec("relu.json", mm_spec(json::array({kRelu})));
  const std::string mm_pc = sb.spec(
      "pc.json", mm_spec(json::array({{{"op", "quantize"}, {"bits", 2}, {"enc", "signed"}, {"scale", "per_channel"}}})));
  const std::string cv = sb.spec("conv.json", conv_spec(json::array({kScaleBias, kRelu, kMaxPool2, kQuant2})));
  const std::string cv_pool3 =
      sb.spec("pool3.json", conv_spec(json::array({{{"op", "pool"}, {"kind", "max"}, {"size", 3}, {"stride", 2}}}), 0));
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();

  const std::vector<std::string> gemm = {"gemm", mm, "--w", in.w2, "--x", in.x2, "--out", out};
  auto with = [](std::vector<std::string> args, std::initializer_list<std::string> more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  struct Case {
    const char* what;
    std::vector<std::string> args;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"missing --q-scale", with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-zero", in.q_zero}),
       {"'quantize'", "--q-scale"}},
      {"missing --scale and --bias", with(gemm, {"--q-scale", in.q_scale, "--q-zero", in.q_zero}), {"'scale_bias'", "--scale"}},
      {"missing --bias", with(gemm, {"--scale", in.scale, "--q-scale", in.q_scale, "--q-zero", in.q_zero}),
       {"'scale_bias'", "--bias"}},
      {"--scale without scale_bias", {"gemm", mm_relu, "--w", in.w2, "--x", in.x2, "--out", out, "--scale", in.scale},
       {"--scale was given", "no 'scale_bias' op"}},
      {"--q-zero without quantize", {"gemm", mm_relu, "--w", in.w2, "--x", in.x2, "--out", out, "--q-zero", in.q_zero},
       {"--q-zero was given", "no 'quantize' op"}},
      {"--unpack without quantize", {"gemm", mm_relu, "--w", in.w2, "--x", in.x2, "--out", out, "--unpack"},
       {"--unpack", "no 'quantize' op"}},
      {"--sums without quantize", {"gemm", mm_relu, "--w", in.w2, "--x", in.x2, "--out", out, "--sums", sums},
       {"--sums", "no 'quantize' op"}},
      {"2-D --scale",
       with(gemm, {"--scale", sb.floats("scale2d.npy", {2, 2}, {1, 2, 3, 4}), "--bias", in.bias, "--q-scale", in.q_scale,
                   "--q-zero", in.q_zero}),
       {"scale2d.npy", "--scale must be 1-D", "(2, 2)"}},
      {"--scale of 3 for M = 4",
       with(gemm, {"--scale", sb.floats("scale3.npy", {3}, {1, 2, 3}), "--bias", in.bias, "--q-scale", in.q_scale, "--q-zero",
                   in.q_zero}),
       {"'scale'", "needs 4 values", "got 3"}},
      {"--bias of 5 for M = 4",
       with(gemm, {"--scale", in.scale, "--bias", sb.floats("bias5.npy", {5}, {1, 2, 3, 4, 5}), "--q-scale", in.q_scale,
                   "--q-zero", in.q_zero}),
       {"'bias'", "needs 4 values", "got 5"}},
      {"integer --q-scale",
       with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-scale", sb.ints("qi.npy", {1}, {1}, "<i4"), "--q-zero",
                   in.q_zero}),
       {"qi.npy", "'<i4'", "not a float type"}},
      {"missing --q-zero file",
       with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-scale", in.q_scale, "--q-zero", sb.path("nope.npy")}),
       {"nope.npy"}},
      {"float64 --q-scale beyond float32",
       with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-scale", sb.doubles("q64big.npy", {1e300}), "--q-zero",
                   in.q_zero}),
       {"q64big.npy", "--q-scale", "does not fit float32"}},
      {"float64 --q-scale that rounds to 0 in float32",
       with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-scale", sb.doubles("q64tiny.npy", {1e-50}), "--q-zero",
                   in.q_zero}),
       {"q64tiny.npy", "does not fit float32"}},
      {"NaN --q-scale",
       with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-scale", sb.floats("qnan.npy", {1}, {nan}), "--q-zero",
                   in.q_zero}),
       {"'q_scale'[0]", "nan", "finite"}},
      {"inf --q-zero",
       with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-scale", in.q_scale, "--q-zero",
                   sb.floats("qzinf.npy", {1}, {inf})}),
       {"'q_zero'[0]", "inf", "finite"}},
      {"negative --q-scale",
       with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-scale", sb.floats("qneg.npy", {1}, {-0.5f}), "--q-zero",
                   in.q_zero}),
       {"'q_scale'[0]", "-0.5", "> 0"}},
      {"zero --q-scale",
       with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-scale", sb.floats("qzero.npy", {}, {0.0f}), "--q-zero",
                   in.q_zero}),
       {"'q_scale'[0]", "> 0"}},
      {"NaN --scale",
       with(gemm, {"--scale", sb.floats("snan.npy", {4}, {1, nan, 1, 1}), "--bias", in.bias, "--q-scale", in.q_scale,
                   "--q-zero", in.q_zero}),
       {"'scale'[1]", "nan"}},
      {"per-tensor --q-scale of 2",
       with(gemm, {"--scale", in.scale, "--bias", in.bias, "--q-scale", sb.floats("q2.npy", {2}, {1, 1}), "--q-zero",
                   in.q_zero}),
       {"'q_scale'", "needs 1 value", "got 2"}},
      {"per-channel --q-scale of 1",
       {"gemm", mm_pc, "--w", in.w2, "--x", in.x2, "--out", out, "--q-scale", in.q_scale, "--q-zero",
        sb.floats("qz4.npy", {4}, {0, 0, 0, 0})},
       {"'q_scale'", "needs 4 values", "got 1"}},
      {"conv: missing --bias",
       {"conv", cv, "--w", in.w4, "--x", in.x4, "--out", out, "--scale", in.scale, "--q-scale", in.q_scale, "--q-zero",
        in.q_zero},
       {"--bias"}},
      {"conv: --scale of 3 for O = 4",
       {"conv", cv, "--w", in.w4, "--x", in.x4, "--out", out, "--scale", sb.floats("cs3.npy", {3}, {1, 1, 1}), "--bias",
        in.bias, "--q-scale", in.q_scale, "--q-zero", in.q_zero},
       {"'scale'", "needs 4 values", "got 3"}},
      {"conv: negative --q-scale",
       {"conv", cv, "--w", in.w4, "--x", in.x4, "--out", out, "--scale", in.scale, "--bias", in.bias, "--q-scale",
        sb.floats("cqneg.npy", {1}, {-1.0f}), "--q-zero", in.q_zero},
       {"'q_scale'[0]", "> 0"}},
      {"conv: --unpack without quantize",
       {"conv", cv_pool3, "--w", in.w4, "--x", in.x4, "--out", out, "--unpack"}, {"--unpack", "no 'quantize' op"}},
      // 6x6 input, 3x3 kernel, no padding: a 4x4 output fits 3x3/2 once; 4x4 input gives 2x2.
      {"conv: pool window larger than the output",
       {"conv", cv_pool3, "--w", in.w4, "--x", sb.ints("x44.npy", {1, 2, 4, 4}, u2_values(2 * 16)), "--out", out},
       {"3x3 pool", "2x2"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const CliResult r = expect_error(sb, c.args, 2, {});
    for (const auto& n : c.needles) CHECK_MESSAGE(contains(r.err, n), "stderr lacks '" << n << "'");
    CHECK_FALSE(fs::exists(out));
    CHECK_FALSE(fs::exists(sums));
  }
  CHECK(cache_entries(sb.cache()) == 0);  // nothing was compiled for any of them
}

TEST_CASE("cli epilogue: without a GPU, valid chain runs exit 3 and write nothing") {
  if (driver_loadable()) {
    MESSAGE("libcuda.so.1 is loadable here: the no-driver checks do not apply");
    return;
  }
  Sandbox sb;
  const Inputs in(sb);
  const std::string out = sb.path("y.npy"), sums = sb.path("sums.npy");
  const std::string mm = sb.spec("mm.json", mm_spec(json::array({kScaleBias, kRelu, kQuant2})));
  const std::string mm_relu = sb.spec("relu.json", mm_spec(json::array({kRelu})));
  const std::string cv = sb.spec("conv.json", conv_spec(json::array({kScaleBias, kRelu, kMaxPool2, kQuant2})));
  const std::vector<std::vector<std::string>> runs = {
      {"gemm", mm, "--w", in.w2, "--x", in.x2, "--out", out, "--scale", in.scale, "--bias", in.bias, "--q-scale", in.q_scale,
       "--q-zero", in.q_zero, "--sums", sums},
      {"gemm", mm, "--w", in.w2, "--x", in.x2, "--out", out, "--scale", in.scale, "--bias", in.bias, "--q-scale",
       in.q_scale_scalar, "--q-zero", in.q_zero, "--unpack"},
      {"gemm", mm_relu, "--w", in.w2, "--x", in.x2, "--out", out},
      {"conv", cv, "--w", in.w4, "--x", in.x4, "--out", out, "--scale", in.scale, "--bias", in.bias, "--q-scale", in.q_scale,
       "--q-zero", in.q_zero, "--sums", sums, "--unpack"},
  };
  for (const auto& args : runs) {
    const CliResult r = expect_error(sb, args, 3, {});
    CHECK((contains(r.err, "no CUDA driver") || contains(r.err, "no CUDA device")));
    CHECK_FALSE(fs::exists(out));
    CHECK_FALSE(fs::exists(sums));
  }
  for (const auto& e : fs::directory_iterator(sb.path(".")))
    CHECK_MESSAGE(e.path().filename().string().rfind("y.npy", 0) != 0, e.path());
  CHECK(cache_entries(sb.cache()) == 0);
}

namespace {

bool gpu_present() {
  try {
    apnn::current_device();
    return true;
  } catch (const apnn::Error&) {
    return false;
  }
}

std::vector<int16_t> as_i16(const std::vector<int64_t>& v) { return std::vector<int16_t>(v.begin(), v.end()); }

}  // namespace

TEST_CASE("cli epilogue: on a GPU, gemm and conv files equal the CPU reference through the chain") {
  if (!gpu_present()) {
    MESSAGE("no CUDA device: the GPU end-to-end checks are skipped");
    return;
  }
  Sandbox sb;
  const Inputs in(sb);
  const std::string out = sb.path("y.npy"), sums = sb.path("sums.npy");
  const apnn::EpilogueParams params{{0.5f, 1.0f, -0.25f, 2.0f}, {0.0f, 1.0f, -1.0f, 0.5f}, {0.75f}, {-1.5f}};
  const apnn::OperandFormat q2{2, apnn::Encoding::Unsigned};

  // conv: W (4,2,3,3) x X (1,2,6,6) pad 1 -> (1,4,6,6) -> scale_bias relu pool 2x2 quantize -> (1,4,3,3).
  const apnn::ConvGeometry g{1, 2, 6, 6, 4, 3, 3, 1, 1, 1, 1};
  const std::vector<int32_t> y = apnn::conv_reference_direct(g, as_i16(pm1_values(4 * 2 * 9)).data(),
                                                             as_i16(u2_values(2 * 36)).data());
  const json chain = json::array({kScaleBias, kRelu, kMaxPool2, kQuant2});
  const apnn::EpilogueResult want =
      apnn::epilogue_reference(apnn::parse_spec(conv_spec(chain)).epilogue, params, y.data(), 1, 4, 6, 6);
  const std::string cv = sb.spec("conv.json", conv_spec(chain));
  const std::vector<std::string> common = {"conv", cv, "--w", in.w4, "--x", in.x4, "--scale", in.scale, "--bias", in.bias,
                                           "--q-scale", in.q_scale, "--q-zero", in.q_zero, "--out", out};
  std::vector<std::string> unpacked = common;
  unpacked.push_back("--unpack");
  CliResult r = sb.run(unpacked);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const apnn::NpyArray values = apnn::read_npy_int(out);
  CHECK(values.shape == std::vector<int64_t>{1, 4, 3, 3});
  CHECK(as_i16(values.values) == want.values);
  std::vector<std::string> packed = common;
  packed.insert(packed.end(), {"--sums", sums});
  r = sb.run(packed);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const apnn::PackedActivations ref = apnn::pack_activations_reference(q2, want.values.data(), 1, 4, 3, 3);
  const apnn::NpyArray planes = apnn::read_npy_int(out), pixsum = apnn::read_npy_int(sums);
  CHECK(planes.shape == std::vector<int64_t>{1, 2, 3, 3, 4});
  CHECK(std::vector<uint32_t>(planes.values.begin(), planes.values.end()) == ref.planes);
  CHECK(std::vector<int32_t>(pixsum.values.begin(), pixsum.values.end()) == ref.pixsum);

  // gemm: W (4,64) x X (3,64) -> (4,3); float32 after scale_bias alone, 2-bit planes of
  // N = 3 rows x K' = 4 after the full chain.
  const std::vector<int32_t> z = apnn::apmm_reference_direct(as_i16(pm1_values(4 * 64)).data(),
                                                             as_i16(u2_values(3 * 64)).data(), 4, 3, 64);
  const std::string sb_only = sb.spec("sb.json", mm_spec(json::array({kScaleBias})));
  r = sb.run({"gemm", sb_only, "--w", in.w2, "--x", in.x2, "--scale", in.scale, "--bias", in.bias, "--out", out});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const apnn::EpilogueResult want_f =
      apnn::epilogue_reference(apnn::parse_spec(mm_spec(json::array({kScaleBias}))).epilogue,
                               {params.scale, params.bias, {}, {}}, z.data(), 1, 4, 1, 3);
  const apnn::NpyFloatArray f = apnn::read_npy_float(out);
  CHECK(f.shape == std::vector<int64_t>{4, 3});
  CHECK(std::vector<float>(f.values.begin(), f.values.end()) == want_f.f32);
  const std::string mm = sb.spec("mm.json", mm_spec(json::array({kScaleBias, kRelu, kQuant2})));
  r = sb.run({"gemm", mm, "--w", in.w2, "--x", in.x2, "--scale", in.scale, "--bias", in.bias, "--q-scale", in.q_scale,
              "--q-zero", in.q_zero, "--out", out, "--sums", sums});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const apnn::EpilogueResult want_q = apnn::epilogue_reference(
      apnn::parse_spec(mm_spec(json::array({kScaleBias, kRelu, kQuant2}))).epilogue, params, z.data(), 1, 4, 1, 3);
  const apnn::PackedActivations ref_q = apnn::pack_activations_reference(q2, want_q.values.data(), 1, 4, 1, 3);
  const apnn::NpyArray mm_planes = apnn::read_npy_int(out), rowsum = apnn::read_npy_int(sums);
  CHECK(mm_planes.shape == std::vector<int64_t>{2, 3, 4});
  CHECK(std::vector<uint32_t>(mm_planes.values.begin(), mm_planes.values.end()) == ref_q.planes);
  CHECK(std::vector<int32_t>(rowsum.values.begin(), rowsum.values.end()) == ref_q.pixsum);
  MESSAGE("cli epilogue on the GPU: conv packed/unpacked/sums and gemm float/packed/sums equal the reference");
}

// verify on a chain: exact, and timed over the input sets it reports (by default
// rotation_sets' count, as the bench times; the count asked for otherwise).
TEST_CASE("cli epilogue: on a GPU, verify checks a chain and times it over the input sets it reports") {
  if (!gpu_present()) {
    MESSAGE("no CUDA device: the GPU end-to-end checks are skipped");
    return;
  }
  Sandbox sb;
  const std::string mm = sb.spec("mm.json", mm_spec(json::array({kScaleBias, kRelu, kQuant2})));
  const std::string cv = sb.spec("conv.json", conv_spec(json::array({kScaleBias, kRelu, kMaxPool2, kQuant2})));
  const std::vector<std::string> mm_shape = {"--m", "96", "--n", "80", "--k", "1000", "--json"};
  const std::vector<std::string> cv_shape = {"--batch", "2", "--in-channels", "40", "--height", "10", "--width", "6",
                                             "--out-channels", "24", "--json"};
  struct Case {
    std::string spec;
    std::vector<std::string> shape, sets;
    int want_sets;
  };
  // A set of these shapes is under 40 KB, so the L2 rule (4x the L2 cache) asks for more
  // than the 32 sets it allows on any GPU with over 320 KB of L2.
  constexpr int kRuleSets = 32;
  for (const Case& c : {Case{mm, mm_shape, {}, kRuleSets}, Case{mm, mm_shape, {"--input-sets", "1"}, 1},
                        Case{mm, mm_shape, {"--input-sets", "3"}, 3}, Case{cv, cv_shape, {}, kRuleSets},
                        Case{cv, cv_shape, {"--input-sets", "2"}, 2}}) {
    std::vector<std::string> args = {"verify", c.spec};
    args.insert(args.end(), c.shape.begin(), c.shape.end());
    args.insert(args.end(), c.sets.begin(), c.sets.end());
    const CliResult r = sb.run(args);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const json j = json::parse(r.out);
    CHECK(j.at("mismatches") == 0);
    CHECK(j.at("checked").get<uint64_t>() > 0);
    CHECK(j.at("kernel_us").get<double>() > 0);
    CHECK(j.at("timing").at("sets") == c.want_sets);
    CHECK(j.at("timing").at("launches").get<int>() >= 3);
    CHECK(j.at("timing").at("repeats").get<int>() >= 3);
  }
  MESSAGE("cli verify on the GPU: chains exact, timed over the reported input sets");
}

// The int16 output ("output": "int16", no chain): gemm writes an int16 .npy of the plain
// product; verify checks it exact; a K past int16's range is exit 2 with nothing written.
TEST_CASE("cli: on a GPU, gemm and verify with the int16 output equal the CPU reference") {
  Sandbox sb;
  const Inputs in(sb);
  const std::string out = sb.path("y16.npy");
  json spec = mm_spec(json::array());
  spec.erase("epilogue");
  spec["output"] = "int16";
  const std::string mm = sb.spec("mm16.json", spec);
  if (!gpu_present()) {
    const CliResult r = sb.run({"gemm", mm, "--w", in.w2, "--x", in.x2, "--out", out});
    CHECK(r.code == 3);
    CHECK_FALSE(fs::exists(out));
    MESSAGE("no CUDA device: the int16 GPU end-to-end checks are skipped");
    return;
  }
  CliResult r = sb.run({"gemm", mm, "--w", in.w2, "--x", in.x2, "--out", out});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::vector<int32_t> z = apnn::apmm_reference_direct(as_i16(pm1_values(4 * 64)).data(),
                                                             as_i16(u2_values(3 * 64)).data(), 4, 3, 64);
  const apnn::NpyArray y = apnn::read_npy_int(out);
  CHECK(y.shape == std::vector<int64_t>{4, 3});
  CHECK(std::vector<int32_t>(y.values.begin(), y.values.end()) == z);
  std::ifstream head(out, std::ios::binary);
  std::string header(128, '\0');
  head.read(header.data(), 128);
  CHECK(header.find("'descr': '<i2'") != std::string::npos);

  r = sb.run({"verify", mm, "--m", "300", "--n", "1100", "--k", "2100", "--json"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const json rep = json::parse(r.out);
  CHECK(rep.at("output") == "int16");
  CHECK(rep.at("mismatches") == 0);
  CHECK(rep.at("checked").get<int64_t>() == 300 * 1100 / 2);

  r = sb.run({"verify", mm, "--m", "8", "--n", "8", "--k", "10923"});
  CHECK(r.code == 2);
  CHECK(r.err.find("K=10923 can overflow the int16 output") != std::string::npos);
}
