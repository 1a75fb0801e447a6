// The fusion section of `apnn bench`: a conv whose epilogue chain runs in the kernel
// (folded batch norm, ReLU, pool, quantize to 2-bit planes) against the paper's "w/o Fusion" sequence: the conv
// with int32 output, then one kernel per stage (scale_bias+relu, pool, quantize+pack),
// generated from the same Epi (templates/unfused_epilogue.cuh). Both are checked: the fused
// output against the CPU reference through the chain, the unfused one word for word against
// the fused one. Bytes are DRAM traffic at one read or write per operand and intermediate.
#include <cstdio>

#include <fmt/format.h>

#include "apnn/reference.h"
#include "bench/sections.h"
#include "compiler/nvrtc_compiler.h"
#include "engine/conv_runner.h"
#include "engine/tile_choice.h"
#include "engine/verify.h"
#include "generator/generate.h"
#include "runtime/device.h"
#include "spec/epilogue.h"

namespace apnn::bench {

namespace {

unsigned blocks(int64_t n, int64_t per) { return static_cast<unsigned>((n + per - 1) / per); }

std::string tile_text(const Tile& t) { return fmt::format("{}x{}/{} {}x{}", t.bm, t.bn, t.bk, t.warps_m, t.warps_n); }

nlohmann::json run_case(Section& sec, const KernelSpec& fused_spec, const ConvShape& shape) {
  Engine& engine = sec.engine;
  const ConvGeometry g = conv_geometry(fused_spec, shape);
  KernelSpec plain_spec = fused_spec;
  plain_spec.epilogue = {};
  ConvRunner fused(engine.kernel(with_tile_for(fused_spec, conv_problem(fused_spec, shape))));
  ConvRunner plain(engine.kernel(with_tile_for(plain_spec, conv_problem(plain_spec, shape))));
  LoadedModule unfused(compile_cubin(generate_unfused_epilogue(fused_spec), current_device().arch()).cubin,
                       "unfused epilogue");

  const std::vector<int16_t> W = random_operand(fused_spec.w, static_cast<size_t>(g.O * g.C * g.kh * g.kw), 1);
  const std::vector<int16_t> X = random_operand(fused_spec.x, static_cast<size_t>(g.N * g.C * g.H * g.W), 2);
  const PackedConvWeights pw = fused.pack_w(DeviceBuffer::from(W), g);
  const PackedConvActivations px = fused.pack_x(DeviceBuffer::from(X), g);
  // One CPU reference serves the parameters and the check of the fused output.
  const std::vector<int32_t> y_ref = reference_conv(g, W, X);
  const OutputDims before{g.N, g.O, g.Ho(), g.Wo()};
  const EpilogueParams params = verify_params(fused_spec.epilogue, y_ref, before, 3);
  const EpilogueDevice ep(fused_spec.epilogue, params, g.O), none;
  const OutputDims od = ConvRunner::dims(fused_spec, g);
  const int64_t P = g.N * g.Ho() * g.Wo(), Pp = od.pixels();
  LayerBuffers fused_out = EpilogueDevice::allocate(fused_spec.epilogue, od);
  LayerBuffers plain_out = EpilogueDevice::allocate(plain_spec.epilogue, {g.N, g.O, g.Ho(), g.Wo()});
  LayerBuffers unfused_out = EpilogueDevice::allocate(fused_spec.epilogue, od);
  DeviceBuffer staged(static_cast<size_t>(P * g.O) * 4), pooled(static_cast<size_t>(Pp * g.O) * 4);

  const EpilogueOp* pool = fused_spec.epilogue.pool();
  const bool has_pre = fused_spec.epilogue.has(EpilogueOpKind::ScaleBias) || fused_spec.epilogue.has(EpilogueOpKind::Relu);
  auto run_unfused = [&](int) {
    plain.conv(pw, px, g, none, plain_out);
    EpilogueKernelArgs a = ep.args(unfused_out);
    CUdeviceptr y = plain_out.values.ptr(), st = has_pre ? staged.ptr() : y, pl = pool ? pooled.ptr() : st;
    long long count = P * g.O;
    int o = static_cast<int>(g.O), hw = static_cast<int>(g.Ho() * g.Wo()), n = static_cast<int>(g.N);
    int h = static_cast<int>(g.Ho()), w = static_cast<int>(g.Wo()), hp = static_cast<int>(od.H), wp = static_cast<int>(od.W);
    int hwp = hp * wp, cw = static_cast<int>(conv_channel_words(g.O));
    if (has_pre) {
      void* args[] = {&y, &st, &count, &o, &hw, &a};
      unfused.launch(kUnfusedPreKernel, {blocks(count, 256), 1, 1, 256, 0}, args);
    }
    if (pool) {
      void* args[] = {&st, &pl, &n, &o, &h, &w, &hp, &wp};
      unfused.launch(kUnfusedPoolKernel, {blocks(Pp * g.O, 256), 1, 1, 256, 0}, args);
    }
    void* args[] = {&pl, &n, &o, &hwp, &cw, &a};
    unfused.launch(kUnfusedQuantizeKernel, {blocks(Pp * 32, 256), 1, 1, 256, 0}, args);
  };
  auto run_fused = [&](int) { fused.conv(pw, px, g, ep, fused_out); };
  fused_out.values.fill_u32(0xdeadbeefu);  // a word the kernel does not write cannot pass
  run_fused(0);
  run_unfused(0);
  synchronize(fused.kernel().module->context());
  VerifyReport check;
  compare_output(fused_out, expected_output(fused_spec.epilogue, params, y_ref, before), &check);
  uint64_t differ = 0;
  const auto a = fused_out.values.to_vector<uint32_t>(fused_out.values.bytes() / 4);
  const auto b = unfused_out.values.to_vector<uint32_t>(a.size());
  const auto sa = fused_out.sums.to_vector<uint32_t>(static_cast<size_t>(Pp));
  const auto sb = unfused_out.sums.to_vector<uint32_t>(static_cast<size_t>(Pp));
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  for (size_t i = 0; i < sa.size(); ++i) differ += sa[i] != sb[i];

  const Timing tf = time_rotated(sec.rule, 1, run_fused);
  const Timing tu = time_rotated(sec.rule, 1, run_unfused);
  const double in = static_cast<double>(pw.planes.bytes() + px.planes.bytes());
  const double out = static_cast<double>(a.size() * 4 + Pp * 4);
  const double y32 = static_cast<double>(P * g.O) * 4, p32 = static_cast<double>(Pp * g.O) * 4;
  const double unfused_bytes = in + y32 + (has_pre ? 2 * y32 : 0) + (pool ? y32 + p32 : 0) + p32 + out;
  if (check.mismatches || differ) sec.mismatch = true;
  return {{"layer", fmt::format("n{}-{}x{}x{}-o{}", shape.N, shape.H, shape.W, shape.C, shape.O)},
          {"chain", to_json(fused_spec.epilogue)},
          {"fused_us", tf.us},
          {"unfused_us", tu.us},
          {"speedup", tu.us / tf.us},
          {"fused_mb", (in + out) / 1e6},
          {"unfused_mb", unfused_bytes / 1e6},
          {"fused_tile", tile_text(*fused.kernel().compiled.spec.tile)},
          {"conv_tile", tile_text(*plain.kernel().compiled.spec.tile)},
          {"checked", check.checked},
          {"mismatches", check.mismatches},
          {"unfused_differs", differ}};
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
  const struct {
    const char* name;
    const char* chain;
    const std::vector<ConvShape>& shapes;
  } cases[] = {
      // The paper's experiment: APConv-w1a2, 2x2 pool, 2-bit quantize.
      {"pool+q2", R"([{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])", paper},
      // The whole layer: folded batch norm, ReLU, pool, quantize.
      {"bn+relu+pool+q2",
       R"([{"op":"scale_bias"},{"op":"relu"},{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])",
       paper},
      // A ResNet layer without a pool: folded batch norm, ReLU, quantize for the next conv.
      {"bn+relu+q2", R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])", resnet128},
  };
  for (const auto& c : cases)
    for (size_t i = 0; i < (quick ? 1 : c.shapes.size()); ++i) {
      KernelSpec spec;
      spec.op = Op::Apconv;
      spec.w = {1, Encoding::Pm1};
      spec.x = {2, Encoding::Unsigned};
      spec.conv = {3, 3, 1, 1, 1, 1};
      spec.epilogue = parse_epilogue(nlohmann::json::parse(c.chain), true, "bench");
      nlohmann::json r = run_case(s, spec, c.shapes[i]);
      r["name"] = c.name;
      std::fprintf(stderr, "bench: fusion %s %s: %.2f vs %.2f us\n", r["layer"].get<std::string>().c_str(), c.name,
                   r["fused_us"].get<double>(), r["unfused_us"].get<double>());
      s.report.fusion.push_back(r);
    }
}

void print_fusion_table(const nlohmann::json& rows, std::FILE* out) {
  if (rows.empty()) return;
  std::fprintf(out, "\nfusion: w1a2 conv 3x3/1 pad 1 with its chain in the kernel (fused) vs int32 conv + one kernel per "
                    "stage (unfused)\n");
  std::fprintf(out, "%-20s %-16s %10s %10s %7s %9s %10s %-16s %s\n", "layer", "chain", "fused us", "unfused us", "speedup",
               "fused MB", "unfused MB", "fused tile", "exact");
  for (const nlohmann::json& r : rows)
    std::fprintf(out, "%-20s %-16s %10.2f %10.2f %6.2fx %9.3f %10.3f %-16s %s\n", r["layer"].get<std::string>().c_str(),
                 r["name"].get<std::string>().c_str(), r["fused_us"].get<double>(), r["unfused_us"].get<double>(),
                 r["speedup"].get<double>(), r["fused_mb"].get<double>(), r["unfused_mb"].get<double>(),
                 r["fused_tile"].get<std::string>().c_str(),
                 r["mismatches"] == 0 && r["unfused_differs"] == 0 ? "yes" : "NO");
}

}  // namespace apnn::bench
