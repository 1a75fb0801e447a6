#include "engine/tile_choice.h"
#include "engine/verify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "apnn/conv_reference.h"
#include "apnn/error.h"
#include "apnn/epilogue_reference.h"
#include "apnn/reference.h"
#include "engine/apmm_runner.h"
#include "engine/conv_runner.h"
#include "engine/input_sets.h"
#include "engine/timeline.h"
#include "runtime/device.h"
#include "runtime/steady_timing.h"

namespace apnn {

namespace {

// Runs body(begin, end) over [0, n) split across the cores (references of large shapes take seconds).
void parallel_blocks(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(std::thread::hardware_concurrency(), n));
  const int64_t per = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int64_t b = 0; b < n; b += per) pool.emplace_back(body, b, std::min(n, b + per));
  for (auto& t : pool) t.join();
}

// The checked launch. A quantize chain runs twice into the same buffers, poisoned again in
// between: where M tiles add up the sums in the output's sum_scratch (LayerBuffers), the
// second launch must find every pixel's word (sum and arrivals) zeroed by the first, or its
// sums come out wrong.
void launch_checked(const Epilogue& e, LayerBuffers& out, const std::function<void()>& launch) {
  launch();
  if (!e.quantize()) return;
  out.values.fill_u32(kPoison);
  out.sums.fill_u32(kPoison);
  launch();
}

void describe_kernel(const Kernel& k, VerifyReport* rep) {
  rep->canonical = k.compiled.canonical;
  rep->arch = k.compiled.arch;
  rep->device = current_device().name;
}

}  // namespace

ExpectedOutput expected_output(const Epilogue& e, const EpilogueParams& p, const std::vector<int32_t>& y,
                               const OutputDims& d) {
  ExpectedOutput want;
  const EpilogueResult r = epilogue_reference(e, p, y.data(), d.N, d.C, d.H, d.W);
  switch (r.type) {
    case OutputType::Int32: want.values.assign(r.i32.begin(), r.i32.end()); break;
    case OutputType::Int16:  // two values a word, little-endian; an odd count's last half is the poison's
      want.values.assign((r.i32.size() + 1) / 2, 0u);
      for (size_t i = 0; i < r.i32.size(); ++i)
        want.values[i / 2] |= (static_cast<uint32_t>(r.i32[i]) & 0xffffu) << (16 * (i % 2));
      if (r.i32.size() % 2) want.values.back() |= kPoison & 0xffff0000u;
      break;
    case OutputType::Float32:
      want.values.resize(r.f32.size());
      std::memcpy(want.values.data(), r.f32.data(), r.f32.size() * 4);
      break;
    case OutputType::Packed: {
      const PackedActivations packed = pack_activations_reference(e.quantize()->out, r.values.data(), r.N, r.C, r.H, r.W);
      want.values = packed.planes;
      want.sums.assign(packed.pixsum.begin(), packed.pixsum.end());
      want.distinct = static_cast<int>(std::set<int16_t>(r.values.begin(), r.values.end()).size());
      break;
    }
  }
  return want;
}

EpilogueParams verify_params(const Epilogue& e, const std::vector<int32_t>& y, const OutputDims& d, uint64_t seed) {
  return fitted_epilogue_params(e, y.data(), d.N, d.C, d.H, d.W, seed);
}

void compare_output(const LayerBuffers& got, const ExpectedOutput& want, VerifyReport* rep) {
  auto compare = [&](const DeviceBuffer& buf, const std::vector<uint32_t>& w, const char* what) {
    const std::vector<uint32_t> g = buf.to_vector<uint32_t>(w.size());
    rep->checked += w.size();
    for (size_t i = 0; i < w.size(); ++i)
      if (g[i] != w[i] && rep->mismatches++ == 0)
        rep->first_mismatch = fmt::format("{} word {}: gpu {:#010x} ({}), cpu {:#010x} ({})", what, i, g[i],
                                          static_cast<int32_t>(g[i]), w[i], static_cast<int32_t>(w[i]));
  };
  compare(got.values, want.values, "output");
  if (!want.sums.empty()) compare(got.sums, want.sums, "sums");
  rep->distinct = want.distinct;
}

std::vector<int32_t> reference_apmm(const std::vector<int16_t>& W, const std::vector<int16_t>& X, const ApmmShape& s) {
  std::vector<int32_t> want(static_cast<size_t>(s.M * s.N));
  parallel_blocks(s.M, [&](int64_t m0, int64_t m1) {
    const std::vector<int32_t> part = apmm_reference_direct(W.data() + m0 * s.K, X.data(), m1 - m0, s.N, s.K);
    std::copy(part.begin(), part.end(), want.begin() + m0 * s.N);
  });
  return want;
}

// Per block of output channels: Y[n][o0:o1] of each image.
std::vector<int32_t> reference_conv(const ConvGeometry& g, const std::vector<int16_t>& W, const std::vector<int16_t>& X) {
  const int64_t khw = int64_t{g.kh} * g.kw, plane = g.Ho() * g.Wo();
  std::vector<int32_t> want(static_cast<size_t>(g.N * g.O * plane));
  parallel_blocks(g.O, [&](int64_t o0, int64_t o1) {
    ConvGeometry part = g;
    part.O = o1 - o0;
    const std::vector<int32_t> y_part = conv_reference_direct(part, W.data() + o0 * g.C * khw, X.data());
    for (int64_t n = 0; n < g.N; ++n)
      std::copy(y_part.begin() + n * part.O * plane, y_part.begin() + (n + 1) * part.O * plane,
                want.begin() + (n * g.O + o0) * plane);
  });
  return want;
}

nlohmann::json VerifyReport::to_json() const {
  nlohmann::json j = {{"spec", nlohmann::json::parse(canonical)},
                      {"arch", arch},
                      {"device", device},
                      {"shape", shape},
                      {"seed", seed},
                      {"checked", checked},
                      {"mismatches", mismatches},
                      {"output", output},
                      {"kernel_us", timing.us},
                      {"pack_us", pack_us},
                      {"tops", tops}};
  if (timing.sets > 0) j["timing"] = {{"launches", timing.launches}, {"repeats", timing.repeats}, {"sets", timing.sets}};
  if (mismatches) j["first_mismatch"] = first_mismatch;
  if (distinct) j["distinct_levels"] = distinct;
  return j;
}

std::string VerifyReport::to_text() const {
  const std::string timed =
      timing.sets > 0 ? fmt::format(", kernel {:.2f} us ({:.1f} TOPS) over {} input set{}", timing.us, tops, timing.sets,
                                    timing.sets == 1 ? "" : "s")
                      : "";
  return fmt::format("verify {} {} on {} ({}): {} output, {} words checked, mismatches {}{}{}, pack {:.2f} us", canonical,
                     shape.dump(), device, arch, output, checked, mismatches,
                     mismatches ? " (first " + first_mismatch + ")" : "", timed, pack_us);
}

namespace {

std::string output_name(const Epilogue& e) {
  switch (e.output_type()) {
    case OutputType::Int32: return "int32";
    case OutputType::Int16: return "int16";
    case OutputType::Float32: return "float32";
    case OutputType::Packed: return e.quantize()->out.describe() + " packed";
  }
  return "?";
}

// Times launch(i) over `sets` input sets into rep: the timing and the TOPS of `ops`
// (multiply-adds x2).
void time_sets(VerifyReport* rep, int launches, int sets, double ops, const std::function<void(int)>& launch) {
  rep->timing = time_rotated(TimingRule{launches}, sets, launch);
  rep->tops = ops / (rep->timing.us * 1e-6) / 1e12;
}

}  // namespace

VerifyReport verify_apmm(Engine& engine, const KernelSpec& spec, const ApmmShape& s, uint64_t seed,
                         int timing_launches, int input_sets, bool timeline) {
  check_apmm_shape(spec, s);
  if (timeline && timing_launches <= 0) throw Error(ErrorKind::InvalidInput, "--timeline needs the timing's launches");
  VerifyReport rep;
  rep.shape = {{"m", s.M}, {"n", s.N}, {"k", s.K}};
  rep.seed = seed;
  rep.output = output_name(spec.epilogue);
  const std::vector<int16_t> W = random_operand(spec.w, static_cast<size_t>(s.M * s.K), seed);
  const std::vector<int16_t> X = random_operand(spec.x, static_cast<size_t>(s.N * s.K), seed ^ 0x9e3779b97f4a7c15ull);
  const std::vector<int32_t> y_ref = reference_apmm(W, X, s);
  const EpilogueParams params = verify_params(spec.epilogue, y_ref, ApmmRunner::dims(s.M, s.N), seed + 1);
  const ExpectedOutput want = expected_output(spec.epilogue, params, y_ref, ApmmRunner::dims(s.M, s.N));

  std::shared_ptr<Kernel> kernel = engine.kernel(with_tile_for(spec, apmm_problem(s)));
  describe_kernel(*kernel, &rep);
  ApmmRunner runner(kernel);
  const EpilogueDevice ep(spec.epilogue, params, s.M);
  {  // the check's buffers, freed before the timing's sets are made
    DeviceBuffer w = DeviceBuffer::from(W), x = DeviceBuffer::from(X);
    LayerBuffers out = EpilogueDevice::allocate(spec.epilogue, ApmmRunner::dims(s.M, s.N));
    out.values.fill_u32(kPoison);  // a word the kernel does not write cannot pass
    EventTimer timer;
    timer.start();
    const PackedOperand pw = runner.pack_w(w, s.M, s.K);
    const PackedOperand px = runner.pack_x(x, s.N, s.K);
    rep.pack_us = timer.stop_ms() * 1e3;
    launch_checked(spec.epilogue, out, [&] { runner.gemm(pw, px, ep, out); });
    synchronize(kernel->module->context());
    compare_output(out, want, &rep);
  }

  if (timing_launches > 0) {
    std::unique_ptr<TimelineRecorder> recorder;
    if (timeline) recorder = std::make_unique<TimelineRecorder>(*kernel->module);
    ApmmInputSets in(runner, spec, s, input_sets, seed + 2);
    time_sets(&rep, timing_launches, in.sets(), 2.0 * s.M * s.N * s.K,
              [&](int i) { runner.gemm(in.w[i], in.x[i], ep, in.y[i]); });
    if (recorder) rep.timeline = summarize_timeline(recorder->read());
  }
  return rep;
}

VerifyReport verify_apconv(Engine& engine, const KernelSpec& spec, const ConvShape& shape, uint64_t seed,
                           int timing_launches, int input_sets) {
  const ConvGeometry g = conv_geometry(spec, shape);
  VerifyReport rep;
  rep.shape = {{"batch", g.N}, {"in_channels", g.C}, {"height", g.H}, {"width", g.W}, {"out_channels", g.O},
               {"out_height", g.Ho()}, {"out_width", g.Wo()}};
  rep.seed = seed;
  rep.output = output_name(spec.epilogue);
  const int64_t khw = int64_t{g.kh} * g.kw, pixels = g.N * g.Ho() * g.Wo();
  const std::vector<int16_t> W = random_operand(spec.w, static_cast<size_t>(g.O * g.C * khw), seed);
  const std::vector<int16_t> X =
      random_operand(spec.x, static_cast<size_t>(g.N * g.C * g.H * g.W), seed ^ 0x9e3779b97f4a7c15ull);

  std::shared_ptr<Kernel> kernel = engine.kernel(with_tile_for(spec, conv_problem(spec, shape)));
  describe_kernel(*kernel, &rep);
  ConvRunner runner(kernel);
  const OutputDims dims = ConvRunner::dims(spec, g);
  const std::vector<int32_t> y_ref = reference_conv(g, W, X);
  const EpilogueParams params = verify_params(spec.epilogue, y_ref, {g.N, g.O, g.Ho(), g.Wo()}, seed + 1);
  const ExpectedOutput want = expected_output(spec.epilogue, params, y_ref, {g.N, g.O, g.Ho(), g.Wo()});
  const EpilogueDevice ep(spec.epilogue, params, g.O);
  {  // the check's buffers, freed before the timing's sets are made
    DeviceBuffer w = DeviceBuffer::from(W), x = DeviceBuffer::from(X);
    LayerBuffers out = EpilogueDevice::allocate(spec.epilogue, dims);
    out.values.fill_u32(kPoison);
    EventTimer timer;
    timer.start();
    const PackedConvWeights pw = runner.pack_w(w, g);
    const PackedConvActivations px = runner.pack_x(x, g);
    rep.pack_us = timer.stop_ms() * 1e3;
    launch_checked(spec.epilogue, out, [&] { runner.conv(pw, px, g, ep, out); });
    synchronize(kernel->module->context());
    compare_output(out, want, &rep);
  }

  if (timing_launches > 0) {
    ConvInputSets in(runner, spec, g, input_sets, seed + 2);
    time_sets(&rep, timing_launches, in.sets(), 2.0 * pixels * g.O * g.C * khw,
              [&](int i) { runner.conv(in.w[i], in.x[i], g, ep, in.y[i]); });
  }
  return rep;
}

}  // namespace apnn
