#include "engine/tune.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "apnn/error.h"
#include "apnn/reference.h"
#include "apnn/tuning.h"
#include "engine/apmm_runner.h"
#include "engine/conv_runner.h"
#include "engine/tile_choice.h"
#include "engine/verify.h"
#include "runtime/launch_timing.h"
#include "spec/kernel_rules.h"

namespace apnn {

namespace {

constexpr int kTimingLaunches = 20;

KernelSpec with_tile(const KernelSpec& s, const Tile& t) {
  KernelSpec c = s;
  c.tile = t;
  return c;
}

// Compiles every candidate into the cache on `threads` threads; failures are kept per tile.
void compile_all(Engine& engine, const KernelSpec& spec, std::vector<TuneCandidate>& cands, const std::string& arch,
                 unsigned threads, const TuneProgress& progress) {
  std::atomic<size_t> next{0}, done{0};
  std::mutex mu;
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    pool.emplace_back([&] {
      for (size_t c = next++; c < cands.size(); c = next++) {
        try {
          engine.compile(with_tile(spec, cands[c].tile), arch);
        } catch (const Error& e) {
          std::lock_guard<std::mutex> lock(mu);
          cands[c].error = e.what();
        }
        ++done;
      }
    });
  // Report progress from this thread while the pool works.
  while (done < cands.size()) {
    progress(done, cands.size(), "compile");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : pool) t.join();
  progress(cands.size(), cands.size(), "compile");
}

// run(kernel, out) launches one candidate writing out; the reference is computed once.
TuneResult tune(Engine& engine, const KernelSpec& spec, const Problem& problem, unsigned threads,
                const TuneProgress& progress, const ExpectedOutput& want, const OutputDims& dims,
                const std::function<void(std::shared_ptr<Kernel>, LayerBuffers&)>& run) {
  const auto t0 = std::chrono::steady_clock::now();
  const Target target = current_target();
  TuneResult result;
  result.key = make_tune_key(spec, target.arch, target.device, problem.shape).str();
  std::vector<TuneCandidate> cands;
  for (const Tile& t : legal_tiles(spec, target.max_smem)) cands.push_back(TuneCandidate{t, 0, false, {}});
  compile_all(engine, spec, cands, target.arch, threads, progress);

  LayerBuffers out = EpilogueDevice::allocate(spec.epilogue, dims);
  bool warmed = false;
  auto measure = [&](const Tile& tile, TuneCandidate* c) {
    try {
      std::shared_ptr<Kernel> k = engine.kernel(with_tile(spec, tile));
      out.values.fill_u32(0xdeadbeefu);
      run(k, out);
      VerifyReport check;
      compare_output(out, want, &check);
      c->exact = check.mismatches == 0;
      if (!c->exact) {
        c->error = "output differs from the CPU reference: " + check.first_mismatch;
        return;
      }
      // The clocks leave idle on the first candidate's warm-up; later ones need only a short one.
      c->us = median_launch_us(kTimingLaunches, [&] { run(k, out); }, warmed ? 1.0f : 50.0f);
      warmed = true;
    } catch (const Error& e) {
      c->error = e.what();
    }
  };
  for (size_t i = 0; i < cands.size(); ++i) {
    progress(i, cands.size(), "time");
    if (cands[i].error.empty()) measure(cands[i].tile, &cands[i]);
  }
  progress(cands.size(), cands.size(), "time");

  TuneCandidate heuristic;
  result.heuristic_tile = untuned_tile(spec, problem, target);
  measure(result.heuristic_tile, &heuristic);
  result.heuristic_us = heuristic.us;

  std::stable_sort(cands.begin(), cands.end(), [](const TuneCandidate& a, const TuneCandidate& b) {
    if (a.exact != b.exact) return a.exact;
    return a.us < b.us;
  });
  result.ranked = std::move(cands);
  for (const TuneCandidate& c : result.ranked)
    if (!c.error.empty() && c.error.find("differs") != std::string::npos)
      throw Error(ErrorKind::Driver, fmt::format("tile bm={} bn={} bk={}: {} (a kernel bug: nothing recorded)", c.tile.bm,
                                                 c.tile.bn, c.tile.bk, c.error));
  if (result.ranked.empty() || !result.ranked.front().exact)
    throw Error(ErrorKind::Driver, "no candidate tile ran: nothing recorded");
  TuningDb(TuningDb::default_path())
      .record(make_tune_key(spec, target.arch, target.device, problem.shape), {result.ranked.front().tile, result.ranked.front().us});
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

nlohmann::json tile_json(const Tile& t) {
  return {{"bm", t.bm}, {"bn", t.bn}, {"bk", t.bk}, {"stages", t.stages}, {"warps_m", t.warps_m}, {"warps_n", t.warps_n}};
}

}  // namespace

std::vector<Tile> legal_tiles(const KernelSpec& spec, int max_smem) {
  std::vector<Tile> out;
  for (int bm : {16, 32, 64, 128, 256})
    for (int bn : {8, 16, 32, 64, 128, 256})
      for (int bk : {256, 512, 1024})
        for (int stages : {2, 3, 4})
          for (int wm : {1, 2, 4, 8})
            for (int wn : {1, 2, 4, 8}) {
              const Tile t{bm, bn, bk, stages, wm, wn};
              if (rules::check_kernel_tile(t, spec).empty() && rules::kernel_shared_bytes(t, spec) <= max_smem)
                out.push_back(t);
            }
  return out;
}

nlohmann::json TuneResult::to_json(size_t top) const {
  nlohmann::json j = {{"key", key}, {"seconds", seconds}, {"candidates", ranked.size()},
                      {"heuristic", {{"tile", tile_json(heuristic_tile)}, {"us", heuristic_us}}}};
  j["top"] = nlohmann::json::array();
  for (size_t i = 0; i < std::min(top, ranked.size()); ++i)
    j["top"].push_back({{"tile", tile_json(ranked[i].tile)}, {"us", ranked[i].us}});
  size_t failed = 0;
  for (const TuneCandidate& c : ranked) failed += !c.exact;
  j["failed"] = failed;
  return j;
}

TuneResult tune_apmm(Engine& engine, const KernelSpec& spec, const ApmmShape& shape, unsigned threads,
                     const TuneProgress& progress) {
  check_apmm_shape(spec, shape);
  const std::vector<int16_t> W = random_operand(spec.w, static_cast<size_t>(shape.M * shape.K), 11);
  const std::vector<int16_t> X = random_operand(spec.x, static_cast<size_t>(shape.N * shape.K), 12);
  const std::vector<int32_t> y_ref = reference_apmm(W, X, shape);
  const OutputDims dims = ApmmRunner::dims(shape.M, shape.N);
  const EpilogueParams params = verify_params(spec.epilogue, y_ref, dims, 13);
  const ExpectedOutput want = expected_output(spec.epilogue, params, y_ref, dims);
  const EpilogueDevice ep(spec.epilogue, params, shape.M);
  const DeviceBuffer w = DeviceBuffer::from(W), x = DeviceBuffer::from(X);
  // The packed layout does not depend on the tile: pack once with any module.
  KernelSpec any = spec;
  any.tile = rules::default_tile(spec);
  ApmmRunner packer(engine.kernel(any));
  const PackedOperand pw = packer.pack_w(w, shape.M, shape.K), px = packer.pack_x(x, shape.N, shape.K);
  return tune(engine, spec, apmm_problem(shape), threads, progress, want, dims,
              [&](std::shared_ptr<Kernel> k, LayerBuffers& out) { ApmmRunner(std::move(k)).gemm(pw, px, ep, out); });
}

TuneResult tune_apconv(Engine& engine, const KernelSpec& spec, const ConvShape& shape, unsigned threads,
                       const TuneProgress& progress) {
  const ConvGeometry g = conv_geometry(spec, shape);
  const std::vector<int16_t> W = random_operand(spec.w, static_cast<size_t>(g.O * g.C * g.kh * g.kw), 11);
  const std::vector<int16_t> X = random_operand(spec.x, static_cast<size_t>(g.N * g.C * g.H * g.W), 12);
  const std::vector<int32_t> y_ref = reference_conv(g, W, X);
  const DeviceBuffer w = DeviceBuffer::from(W), x = DeviceBuffer::from(X);
  KernelSpec any = spec;
  any.tile = rules::default_tile(spec);
  ConvRunner packer(engine.kernel(any));
  const OutputDims dims = ConvRunner::dims(spec, g);
  const EpilogueParams params = verify_params(spec.epilogue, y_ref, {g.N, g.O, g.Ho(), g.Wo()}, 13);
  const ExpectedOutput want = expected_output(spec.epilogue, params, y_ref, {g.N, g.O, g.Ho(), g.Wo()});
  const EpilogueDevice ep(spec.epilogue, params, g.O);
  const PackedConvWeights pw = packer.pack_w(w, g);
  const PackedConvActivations px = packer.pack_x(x, g);
  const int64_t pixels = g.N * g.Ho() * g.Wo();
  DeviceBuffer colsum(static_cast<size_t>(pixels) * 4), nvalid(static_cast<size_t>(pixels) * 4);
  return tune(engine, spec, conv_problem(spec, shape), threads, progress, want, dims,
              [&](std::shared_ptr<Kernel> k, LayerBuffers& out) {
                ConvRunner(std::move(k)).conv(pw, px, g, ep, out, colsum, nvalid);
              });
}

}  // namespace apnn
