// apnn_bench_fusion: a fused conv -> chain kernel against the unfused sequence (conv with
// int32 output, then one kernel per stage: scale_bias+relu, pool, quantize+pack), as the
// paper's figure "Speedup from APNN Kernel Fusion" (1.77x on its GPU). Both paths are
// checked bit-exact: the fused one against the CPU reference, the unfused one against the
// fused one. Reports times, the ratio, and the bytes each path moves through DRAM
// (operands read once, every intermediate written and read once).
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "apnn/reference.h"
#include "compiler/nvrtc_compiler.h"
#include "engine/conv_runner.h"
#include "engine/tile_choice.h"
#include "engine/verify.h"
#include "generator/generate.h"
#include "runtime/device.h"
#include "runtime/launch_timing.h"
#include "spec/epilogue.h"

using namespace apnn;

namespace {

struct Row {
  std::string chain, layer;
  double fused_us = 0, unfused_us = 0;
  double fused_mb = 0, unfused_mb = 0;
  uint64_t mismatches = 0;
};

unsigned blocks(int64_t n, int64_t per) { return static_cast<unsigned>((n + per - 1) / per); }

Row run(Engine& engine, const KernelSpec& fused_spec, const ConvShape& shape, int launches) {
  Row row;
  row.layer = fmt::format("N={} C={} {}x{} O={}", shape.N, shape.C, shape.H, shape.W, shape.O);
  row.chain = to_json(fused_spec.epilogue).dump();
  // The fused kernel, checked against the CPU reference through the chain.
  const VerifyReport check = verify_apconv(engine, fused_spec, shape, 42, 0);
  row.mismatches = check.mismatches;

  const ConvGeometry g = conv_geometry(fused_spec, shape);
  KernelSpec plain_spec = fused_spec;
  plain_spec.epilogue = {};
  ConvRunner fused(engine.kernel(with_tile_for(fused_spec, conv_problem(fused_spec, shape))));
  ConvRunner plain(engine.kernel(with_tile_for(plain_spec, conv_problem(plain_spec, shape))));
  const GeneratedSource unfused_src = generate_unfused_epilogue(fused_spec);
  LoadedModule unfused(compile_cubin(unfused_src, current_device().arch()).cubin, "unfused epilogue");

  const std::vector<int16_t> W = random_operand(fused_spec.w, static_cast<size_t>(g.O * g.C * g.kh * g.kw), 1);
  const std::vector<int16_t> X = random_operand(fused_spec.x, static_cast<size_t>(g.N * g.C * g.H * g.W), 2);
  const PackedConvWeights pw = fused.pack_w(DeviceBuffer::from(W), g);
  const PackedConvActivations px = fused.pack_x(DeviceBuffer::from(X), g);
  const std::vector<int32_t> y_ref = reference_conv(g, W, X);
  const EpilogueParams params = verify_params(fused_spec.epilogue, y_ref, g.O, 3);
  const EpilogueDevice ep(fused_spec.epilogue, params, g.O), none;
  const OutputDims od = ConvRunner::dims(fused_spec, g);
  const int64_t P = g.N * g.Ho() * g.Wo(), Pp = od.pixels();
  DeviceBuffer colsum(static_cast<size_t>(P) * 4), nvalid(static_cast<size_t>(P) * 4);
  LayerBuffers fused_out = EpilogueDevice::allocate(fused_spec.epilogue, od);
  LayerBuffers plain_out = EpilogueDevice::allocate(plain_spec.epilogue, {g.N, g.O, g.Ho(), g.Wo()});
  LayerBuffers unfused_out = EpilogueDevice::allocate(fused_spec.epilogue, od);
  DeviceBuffer staged(static_cast<size_t>(P * g.O) * 4), pooled(static_cast<size_t>(Pp * g.O) * 4);

  const EpilogueOp* pool = fused_spec.epilogue.pool();
  const bool has_pre = fused_spec.epilogue.has(EpilogueOpKind::ScaleBias) || fused_spec.epilogue.has(EpilogueOpKind::Relu);
  auto run_unfused = [&] {
    plain.conv(pw, px, g, none, plain_out, colsum, nvalid);
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
  auto run_fused = [&] { fused.conv(pw, px, g, ep, fused_out, colsum, nvalid); };
  run_fused();
  run_unfused();
  synchronize(fused.kernel().module->context());
  const std::vector<uint32_t> a = fused_out.values.to_vector<uint32_t>(fused_out.values.bytes() / 4);
  const std::vector<uint32_t> b = unfused_out.values.to_vector<uint32_t>(a.size());
  const std::vector<uint32_t> sa = fused_out.sums.to_vector<uint32_t>(static_cast<size_t>(Pp));
  const std::vector<uint32_t> sb = unfused_out.sums.to_vector<uint32_t>(static_cast<size_t>(Pp));
  for (size_t i = 0; i < a.size(); ++i) row.mismatches += a[i] != b[i];
  for (size_t i = 0; i < sa.size(); ++i) row.mismatches += sa[i] != sb[i];

  row.fused_us = median_launch_us(launches, run_fused);
  row.unfused_us = median_launch_us(launches, run_unfused);
  // DRAM bytes: packed operands in, packed output + sums out; unfused adds the int32 output
  // and each intermediate written then read.
  const double in = static_cast<double>(pw.planes.bytes() + px.planes.bytes()), out = static_cast<double>(a.size() * 4 + Pp * 4);
  const double y32 = static_cast<double>(P * g.O) * 4, p32 = static_cast<double>(Pp * g.O) * 4;
  row.fused_mb = (in + out) / 1e6;
  row.unfused_mb = (in + y32 + (has_pre ? 2 * y32 : 0) + (pool ? y32 + p32 : 0) + p32 + out) / 1e6;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fused conv -> chain kernel vs the unfused sequence"};
  std::string json_path;
  int launches = 50;
  app.add_option("--json", json_path, "write one JSON line per row here");
  app.add_option("--launches", launches, "back-to-back launches per timed repeat");
  CLI11_PARSE(app, argc, argv);
  try {
    Engine engine;
    std::ofstream json;
    if (!json_path.empty()) json.open(json_path);
    const char* const chains[] = {
        // The paper's experiment: APConv-w1a2, 2x2 pool, 2-bit quantize.
        R"([{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])",
        // The full layer: folded batch norm, ReLU, pool, quantize.
        R"([{"op":"scale_bias"},{"op":"relu"},{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])",
    };
    const ConvShape shapes[] = {{1, 128, 16, 16, 128}, {1, 256, 16, 16, 256}, {1, 512, 16, 16, 512},
                                {1, 1024, 16, 16, 1024}, {8, 64, 56, 56, 64},   {8, 128, 28, 28, 128}};
    std::printf("%-26s %-16s %10s %10s %7s %10s %10s %s\n", "layer (3x3/1 pad 1, w1a2)", "chain", "fused us",
                "unfused us", "ratio", "fused MB", "unfused MB", "exact");
    int failures = 0;
    for (const char* c : chains)
      for (const ConvShape& sh : shapes) {
        KernelSpec s;
        s.op = Op::Apconv;
        s.w = {1, Encoding::Pm1};
        s.x = {2, Encoding::Unsigned};
        s.conv = {3, 3, 1, 1, 1, 1};
        s.epilogue = parse_epilogue(nlohmann::json::parse(c), true, "bench");
        const Row r = run(engine, s, sh, launches);
        const char* name = s.epilogue.has(EpilogueOpKind::ScaleBias) ? "bn+relu+pool+q2" : "pool+q2";
        std::printf("%-26s %-16s %10.2f %10.2f %6.2fx %10.3f %10.3f %s\n", r.layer.c_str(), name, r.fused_us, r.unfused_us,
                    r.unfused_us / r.fused_us, r.fused_mb, r.unfused_mb, r.mismatches == 0 ? "yes" : "NO");
        failures += r.mismatches != 0;
        if (json)
          json << nlohmann::json{{"layer", r.layer},         {"chain", nlohmann::json::parse(r.chain)},
                                 {"fused_us", r.fused_us},   {"unfused_us", r.unfused_us},
                                 {"speedup", r.unfused_us / r.fused_us}, {"fused_mb", r.fused_mb},
                                 {"unfused_mb", r.unfused_mb}, {"mismatches", r.mismatches}}
                      .dump()
               << "\n";
      }
    return failures ? 1 : 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "apnn_bench_fusion: %s\n", e.what());
    return e.kind() == ErrorKind::NoDriver || e.kind() == ErrorKind::NoDevice ? 3 : 1;
  }
}
