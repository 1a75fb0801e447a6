// The fusion section of `apnn bench`: a conv or APMM whose epilogue chain runs in the kernel
// (folded batch norm, ReLU, pool, quantize to 2- or 4-bit planes) against the paper's "w/o
// Fusion" sequence: the same kernel with int32 output, then one kernel per stage
// (scale_bias+relu, pool, quantize+pack), generated from the same Epi
// (templates/unfused_epilogue.cuh). Both are checked: the fused output against the CPU
// reference through the chain, the unfused one word for word against the fused one. Bytes are
// DRAM traffic at one read or write per operand and intermediate.
#include <cstdio>

#include <fmt/format.h>

#include "apnn/reference.h"
#include "bench/sections.h"
#include "compiler/nvrtc_compiler.h"
#include "engine/apmm_runner.h"
#include "engine/conv_runner.h"
#include "engine/tile_choice.h"
#include "engine/verify.h"
#include "generator/generate.h"
#include "runtime/device.h"
#include "spec/epilogue.h"

namespace apnn::bench {

namespace {

unsigned blocks(int64_t n, int64_t per) { return static_cast<unsigned>((n + per - 1) / per); }

std::string tile_text(const Tile& t) {
  return fmt::format("{}x{}/{} {}x{}{}", t.bm, t.bn, t.bk, t.warps_m, t.warps_n, t.cluster > 1 ? fmt::format(" c{}", t.cluster) : "");
}

std::string precision_text(const KernelSpec& s) { return fmt::format("w{}a{}", s.w.bits, s.x.bits); }

// The unfused sequence after the plain kernel's int32 output y (N images of O channels by hw
// pixels, NCHW; APMM's M x N output is one image of M channels by N pixels): the ops before
// the pool, the pool, the quantize and pack.
struct UnfusedStages {
  LoadedModule module;
  OutputDims before, after;  // the int32 output's dims, the chain's output dims
  bool has_pre, has_pool;    // ops before the pool (scale_bias, relu); a pool
  DeviceBuffer staged, pooled;  // the values after the pre ops and after the pool, where the chain has them

  UnfusedStages(const KernelSpec& spec, const OutputDims& before, const OutputDims& after)
      : module(compile_cubin(generate_unfused_epilogue(spec), current_device().arch()).cubin, "unfused epilogue"),
        before(before),
        after(after),
        has_pre(spec.epilogue.has(EpilogueOpKind::ScaleBias) || spec.epilogue.has(EpilogueOpKind::Relu)),
        has_pool(spec.epilogue.pool() != nullptr) {
    if (has_pre) staged = DeviceBuffer(static_cast<size_t>(before.pixels() * before.C) * 4);
    if (has_pool) pooled = DeviceBuffer(static_cast<size_t>(after.pixels() * after.C) * 4);
  }

  void launch(const EpilogueDevice& ep, CUdeviceptr y, LayerBuffers& out) {
    EpilogueKernelArgs a = ep.args(out);
    CUdeviceptr st = has_pre ? staged.ptr() : y, pl = has_pool ? pooled.ptr() : st;
    long long count = before.pixels() * before.C;
    int o = static_cast<int>(before.C), hw = static_cast<int>(before.H * before.W), n = static_cast<int>(before.N);
    int h = static_cast<int>(before.H), w = static_cast<int>(before.W), hp = static_cast<int>(after.H),
        wp = static_cast<int>(after.W);
    int hwp = hp * wp, cw = static_cast<int>(conv_channel_words(before.C));
    if (has_pre) {
      void* args[] = {&y, &st, &count, &o, &hw, &a};
      module.launch(kUnfusedPreKernel, {blocks(count, 256), 1, 1, 256, 0}, args);
    }
    if (has_pool) {
      void* args[] = {&st, &pl, &n, &o, &h, &w, &hp, &wp};
      module.launch(kUnfusedPoolKernel, {blocks(after.pixels() * before.C, 256), 1, 1, 256, 0}, args);
    }
    void* args[] = {&pl, &n, &o, &hwp, &cw, &a};
    module.launch(kUnfusedQuantizeKernel, {blocks(after.pixels() * 32, 256), 1, 1, 256, 0}, args);
  }
  // DRAM bytes of the sequence beyond the plain kernel's inputs and the packed output.
  double intermediate_bytes() const {
    const double y32 = static_cast<double>(before.pixels() * before.C) * 4,
                 p32 = static_cast<double>(after.pixels() * before.C) * 4;
    return y32 + (has_pre ? 2 * y32 : 0) + (has_pool ? y32 + p32 : 0) + p32;
  }
};

// Checks the fused output against the reference and the unfused one against the fused, word
// for word (planes and sums), times both, and returns the row (with the two kernels' tiles:
// fused and plain are their compiled specs).
template <class Fused, class Unfused>
nlohmann::json compare_and_time(Section& sec, const Epilogue& chain, const KernelSpec& fused, const KernelSpec& plain,
                                const ExpectedOutput& want, const UnfusedStages& stages, double in_bytes,
                                LayerBuffers& fused_out, LayerBuffers& unfused_out, const std::string& ctx,
                                Fused run_fused, Unfused run_unfused) {
  fused_out.values.fill_u32(0xdeadbeefu);  // a word the kernel does not write cannot pass
  run_fused(0);
  run_unfused(0);
  synchronize(ctx);
  VerifyReport check;
  compare_output(fused_out, want, &check);
  const int64_t Pp = stages.after.pixels();
  uint64_t differ = 0;
  const auto a = fused_out.values.to_vector<uint32_t>(fused_out.values.bytes() / 4);
  const auto b = unfused_out.values.to_vector<uint32_t>(a.size());
  const auto sa = fused_out.sums.to_vector<uint32_t>(static_cast<size_t>(Pp));
  const auto sb = unfused_out.sums.to_vector<uint32_t>(static_cast<size_t>(Pp));
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  for (size_t i = 0; i < sa.size(); ++i) differ += sa[i] != sb[i];

  const Timing tf = time_rotated(sec.rule, 1, run_fused);
  const Timing tu = time_rotated(sec.rule, 1, run_unfused);
  const double out = static_cast<double>(a.size() * 4 + Pp * 4);
  if (check.mismatches || differ) sec.mismatch = true;
  return {{"chain", to_json(chain)},
          {"fused_tile", tile_text(*fused.tile)},
          {"plain_tile", tile_text(*plain.tile)},
          {"fused_us", tf.us},
          {"unfused_us", tu.us},
          {"speedup", tu.us / tf.us},
          {"fused_mb", (in_bytes + out) / 1e6},
          {"unfused_mb", (in_bytes + stages.intermediate_bytes() + out) / 1e6},
          {"checked", check.checked},
          {"mismatches", check.mismatches},
          {"unfused_differs", differ}};
}

nlohmann::json run_conv_case(Section& sec, const KernelSpec& fused_spec, const ConvShape& shape) {
  Engine& engine = sec.engine;
  const ConvGeometry g = conv_geometry(fused_spec, shape);
  KernelSpec plain_spec = fused_spec;
  plain_spec.epilogue = {};
  ConvRunner fused(engine.kernel(with_tile_for(fused_spec, conv_problem(fused_spec, shape))));
  ConvRunner plain(engine.kernel(with_tile_for(plain_spec, conv_problem(plain_spec, shape))));
  const OutputDims before{g.N, g.O, g.Ho(), g.Wo()};
  UnfusedStages stages(fused_spec, before, ConvRunner::dims(fused_spec, g));

  const std::vector<int16_t> W = random_operand(fused_spec.w, static_cast<size_t>(g.O * g.C * g.kh * g.kw), 1);
  const std::vector<int16_t> X = random_operand(fused_spec.x, static_cast<size_t>(g.N * g.C * g.H * g.W), 2);
  const PackedConvWeights pw = fused.pack_w(DeviceBuffer::from(W), g);
  const PackedConvActivations px = fused.pack_x(DeviceBuffer::from(X), g);
  // One CPU reference serves the parameters and the check of the fused output.
  const std::vector<int32_t> y_ref = reference_conv(g, W, X);
  const EpilogueParams params = verify_params(fused_spec.epilogue, y_ref, before, 3);
  const EpilogueDevice ep(fused_spec.epilogue, params, g.O), none;
  LayerBuffers fused_out = EpilogueDevice::allocate(fused_spec.epilogue, stages.after);
  LayerBuffers plain_out = EpilogueDevice::allocate(plain_spec.epilogue, before);
  LayerBuffers unfused_out = EpilogueDevice::allocate(fused_spec.epilogue, stages.after);
  nlohmann::json r = compare_and_time(
      sec, fused_spec.epilogue, fused.kernel().compiled.spec, plain.kernel().compiled.spec,
      expected_output(fused_spec.epilogue, params, y_ref, before), stages,
      static_cast<double>(pw.planes.bytes() + px.planes.bytes()), fused_out, unfused_out,
      fused.kernel().module->context(), [&](int) { fused.conv(pw, px, g, ep, fused_out); },
      [&](int) {
        plain.conv(pw, px, g, none, plain_out);
        stages.launch(ep, plain_out.values.ptr(), unfused_out);
      });
  r["layer"] = fmt::format("n{}-{}x{}x{}-o{}", shape.N, shape.H, shape.W, shape.C, shape.O);
  r["kernel"] = fmt::format("conv {} {}x{}/{}", precision_text(fused_spec), g.kh, g.kw, fused_spec.conv.sh);
  return r;
}

// An APMM layer (M output channels, N pixels, K inputs) with its chain in the kernel.
nlohmann::json run_apmm_case(Section& sec, const KernelSpec& fused_spec, const ApmmShape& s) {
  Engine& engine = sec.engine;
  KernelSpec plain_spec = fused_spec;
  plain_spec.epilogue = {};
  ApmmRunner fused(engine.kernel(with_tile_for(fused_spec, apmm_problem(s))));
  ApmmRunner plain(engine.kernel(with_tile_for(plain_spec, apmm_problem(s))));
  const OutputDims dims = ApmmRunner::dims(s.M, s.N);
  UnfusedStages stages(fused_spec, dims, dims);

  const std::vector<int16_t> W = random_operand(fused_spec.w, static_cast<size_t>(s.M * s.K), 1);
  const std::vector<int16_t> X = random_operand(fused_spec.x, static_cast<size_t>(s.N * s.K), 2);
  const PackedOperand pw = fused.pack_w(DeviceBuffer::from(W), s.M, s.K);
  const PackedOperand px = fused.pack_x(DeviceBuffer::from(X), s.N, s.K);
  const std::vector<int32_t> y_ref = reference_apmm(W, X, s);
  const EpilogueParams params = verify_params(fused_spec.epilogue, y_ref, dims, 3);
  const EpilogueDevice ep(fused_spec.epilogue, params, s.M), none;
  LayerBuffers fused_out = EpilogueDevice::allocate(fused_spec.epilogue, dims);
  LayerBuffers plain_out = EpilogueDevice::allocate(plain_spec.epilogue, dims);
  LayerBuffers unfused_out = EpilogueDevice::allocate(fused_spec.epilogue, dims);
  nlohmann::json r = compare_and_time(
      sec, fused_spec.epilogue, fused.kernel().compiled.spec, plain.kernel().compiled.spec,
      expected_output(fused_spec.epilogue, params, y_ref, dims), stages,
      static_cast<double>(pw.planes.bytes() + px.planes.bytes()), fused_out, unfused_out,
      fused.kernel().module->context(), [&](int) { fused.gemm(pw, px, ep, fused_out); },
      [&](int) {
        plain.gemm(pw, px, none, plain_out);
        stages.launch(ep, plain_out.values.ptr(), unfused_out);
      });
  r["layer"] = fmt::format("m{}-n{}-k{}", s.M, s.N, s.K);
  r["kernel"] = fmt::format("apmm {}", precision_text(fused_spec));
  return r;
}

}  // namespace

void run_fusion_section(Section& s, bool quick) {
  // The paper's layers (N=1, 16x16) and batch-8 ResNet-like ones, for the chains with a pool.
  const std::vector<ConvShape> paper = {{1, 128, 16, 16, 128}, {1, 256, 16, 16, 256}, {1, 512, 16, 16, 512},
                                        {1, 1024, 16, 16, 1024}, {8, 64, 56, 56, 64},  {8, 128, 28, 28, 128}};
  // ResNet-18's 3x3/1 layers at batch 128, with the chain that ends each block's first conv
  // (the smallest first: --quick runs each chain's first shape).
  const std::vector<ConvShape> resnet128 = {{128, 512, 7, 7, 512}, {128, 256, 14, 14, 256}, {128, 128, 28, 28, 128},
                                            {128, 64, 56, 56, 64}};
  // Its 3x3/2 layers (the first conv of each downsampling block, also followed by batch norm,
  // ReLU and the next conv's quantize), the smallest first.
  const std::vector<ConvShape> resnet128_s2 = {{128, 256, 14, 14, 512}, {128, 128, 28, 28, 256}, {128, 64, 56, 56, 128}};
  // APMM layers of w2a2 (signed weights): folded batch norm, ReLU and 2-bit codes (the
  // threshold path), and folded batch norm to 4-bit per-channel codes (the float path); a
  // shape of 5 tiles a block and one of 16 (the untuned tile differs: untuned_apmm_tile.cpp).
  const std::vector<ApmmShape> apmm = {{2048, 4096, 1024}, {8192, 4096, 1024}};
  // Folded batch norm, ReLU and the next conv's 2-bit codes: a ResNet layer without a pool.
  const char* const bn_relu_q2 = R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])";
  const struct {
    const char* name;
    const char* chain;
    const std::vector<ConvShape>* conv_shapes;
    const std::vector<ApmmShape>* apmm_shapes;
    int stride = 1;  // the convs'
  } cases[] = {
      // The paper's experiment: APConv-w1a2, 2x2 pool, 2-bit quantize.
      {"pool+q2", R"([{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])", &paper,
       nullptr},
      // The whole layer: folded batch norm, ReLU, pool, quantize.
      {"bn+relu+pool+q2",
       R"([{"op":"scale_bias"},{"op":"relu"},{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])",
       &paper, nullptr},
      // A ResNet layer without a pool, stride 1 and 2, and an APMM layer with the same chain.
      {"bn+relu+q2", bn_relu_q2, &resnet128, nullptr},
      {"bn+relu+q2", bn_relu_q2, &resnet128_s2, nullptr, 2},
      {"bn+relu+q2", bn_relu_q2, nullptr, &apmm},
      {"bn+q4", R"([{"op":"scale_bias"},{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])", nullptr, &apmm},
  };
  for (const auto& c : cases) {
    KernelSpec spec;
    spec.epilogue = parse_epilogue(nlohmann::json::parse(c.chain), true, "bench");
    if (c.conv_shapes) {
      spec.op = Op::Apconv;
      spec.w = {1, Encoding::Pm1};
      spec.x = {2, Encoding::Unsigned};
      spec.conv = {3, 3, c.stride, c.stride, 1, 1};
    } else {
      spec.op = Op::Apmm;
      spec.w = {2, Encoding::Signed};
      spec.x = {2, Encoding::Unsigned};
    }
    const size_t shapes = c.conv_shapes ? c.conv_shapes->size() : c.apmm_shapes->size();
    for (size_t i = 0; i < (quick ? 1 : shapes); ++i) {
      nlohmann::json r = c.conv_shapes ? run_conv_case(s, spec, (*c.conv_shapes)[i]) : run_apmm_case(s, spec, (*c.apmm_shapes)[i]);
      r["name"] = c.name;
      std::fprintf(stderr, "bench: fusion %s %s %s: %.2f vs %.2f us\n", r["kernel"].get<std::string>().c_str(),
                   r["layer"].get<std::string>().c_str(), c.name, r["fused_us"].get<double>(), r["unfused_us"].get<double>());
      s.report.fusion.push_back(r);
    }
  }
}

void print_fusion_table(const nlohmann::json& rows, std::FILE* out) {
  if (rows.empty()) return;
  std::fprintf(out, "\nfusion: the chain in the kernel (fused) vs the same kernel's int32 output + one kernel per stage "
                    "(unfused)\n");
  std::fprintf(out, "%-16s %-20s %-16s %10s %10s %7s %9s %10s %-20s %s\n", "kernel", "layer", "chain", "fused us",
               "unfused us", "speedup", "fused MB", "unfused MB", "fused tile", "exact");
  for (const nlohmann::json& r : rows)
    std::fprintf(out, "%-16s %-20s %-16s %10.2f %10.2f %6.2fx %9.3f %10.3f %-20s %s\n",
                 r["kernel"].get<std::string>().c_str(), r["layer"].get<std::string>().c_str(),
                 r["name"].get<std::string>().c_str(), r["fused_us"].get<double>(), r["unfused_us"].get<double>(),
                 r["speedup"].get<double>(), r["fused_mb"].get<double>(), r["unfused_mb"].get<double>(),
                 r["fused_tile"].get<std::string>().c_str(),
                 r["mismatches"] == 0 && r["unfused_differs"] == 0 ? "yes" : "NO");
}

}  // namespace apnn::bench
