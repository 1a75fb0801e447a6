#include "engine/verify.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "apnn/reference.h"
#include "engine/apmm_runner.h"
#include "runtime/device.h"

namespace apnn {

namespace {

// The plain integer product, split over row blocks on all cores (large shapes take seconds).
std::vector<int32_t> reference_parallel(const std::vector<int16_t>& W, const std::vector<int16_t>& X, const ApmmShape& s) {
  std::vector<int32_t> y(static_cast<size_t>(s.M * s.N));
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(std::thread::hardware_concurrency(), s.M));
  const int64_t per = (s.M + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int64_t m0 = 0; m0 < s.M; m0 += per) {
    pool.emplace_back([&, m0] {
      const int64_t rows = std::min(per, s.M - m0);
      const std::vector<int32_t> part = apmm_reference_direct(W.data() + m0 * s.K, X.data(), rows, s.N, s.K);
      std::copy(part.begin(), part.end(), y.begin() + m0 * s.N);
    });
  }
  for (auto& t : pool) t.join();
  return y;
}

}  // namespace

nlohmann::json VerifyReport::to_json() const {
  nlohmann::json j = {{"spec", nlohmann::json::parse(canonical)},
                      {"arch", arch},
                      {"device", device},
                      {"m", shape.M},
                      {"n", shape.N},
                      {"k", shape.K},
                      {"seed", seed},
                      {"mismatches", mismatches},
                      {"gemm_us", gemm_us},
                      {"pack_us", pack_us},
                      {"tops", tops}};
  if (mismatches) j["first_mismatch"] = first_mismatch;
  return j;
}

VerifyReport verify_apmm(Engine& engine, const KernelSpec& spec, const ApmmShape& shape, uint64_t seed,
                         int timing_launches) {
  check_apmm_shape(spec, shape);
  VerifyReport rep;
  rep.shape = shape;
  rep.seed = seed;
  const std::vector<int16_t> W = random_operand(spec.w, static_cast<size_t>(shape.M * shape.K), seed);
  const std::vector<int16_t> X = random_operand(spec.x, static_cast<size_t>(shape.N * shape.K), seed ^ 0x9e3779b97f4a7c15ull);

  std::shared_ptr<Kernel> kernel = engine.kernel(spec);
  rep.canonical = kernel->compiled.canonical;
  rep.arch = kernel->compiled.arch;
  rep.device = current_device().name;
  ApmmRunner runner(kernel);
  const std::string& ctx = kernel->module->context();

  DeviceBuffer w = DeviceBuffer::from(W), x = DeviceBuffer::from(X);
  DeviceBuffer y(static_cast<size_t>(shape.M * shape.N) * 4);
  y.fill_u32(0xdeadbeefu);  // poison: an element the kernel does not write cannot pass
  EventTimer timer;
  timer.start();
  const PackedOperand pw = runner.pack_w(w, shape.M, shape.K);
  const PackedOperand px = runner.pack_x(x, shape.N, shape.K);
  rep.pack_us = timer.stop_ms() * 1e3;
  runner.gemm(pw, px, y);
  synchronize(ctx);
  const std::vector<int32_t> got = y.to_vector<int32_t>(static_cast<size_t>(shape.M * shape.N));
  const std::vector<int32_t> want = reference_parallel(W, X, shape);
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      if (rep.mismatches++ == 0)
        rep.first_mismatch = fmt::format("({}, {}): gpu {}, cpu {}", i / shape.N, i % shape.N, got[i], want[i]);
    }
  }

  if (timing_launches > 0) {
    for (int i = 0; i < 3; ++i) runner.gemm(pw, px, y);  // warm-up
    std::vector<double> per_launch;
    for (int rep_i = 0; rep_i < 5; ++rep_i) {
      timer.start();
      for (int i = 0; i < timing_launches; ++i) runner.gemm(pw, px, y);
      per_launch.push_back(timer.stop_ms() * 1e3 / timing_launches);
    }
    std::sort(per_launch.begin(), per_launch.end());
    rep.gemm_us = per_launch[per_launch.size() / 2];
    rep.tops = 2.0 * shape.M * shape.N * shape.K / (rep.gemm_us * 1e-6) / 1e12;
  }
  return rep;
}

}  // namespace apnn
