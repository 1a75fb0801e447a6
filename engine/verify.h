// GPU result vs the CPU reference on fresh random inputs, and the kernel's time.
#pragma once
#include <cstdint>
#include <string>

#include "apnn/engine.h"

namespace apnn {

struct VerifyReport {
  std::string canonical, arch, device;
  ApmmShape shape;
  uint64_t seed = 0;
  uint64_t mismatches = 0;
  std::string first_mismatch;   // "(m, n): gpu G, cpu C" when mismatches > 0
  double gemm_us = 0;           // median over repeats of back-to-back launches
  double pack_us = 0;           // packing both operands once
  double tops = 0;              // logical ops (2*M*N*K) per second, 1e12
  nlohmann::json to_json() const;
};

// timing_launches = 0 skips timing.
VerifyReport verify_apmm(Engine& engine, const KernelSpec& spec, const ApmmShape& shape, uint64_t seed,
                         int timing_launches = 50);

}  // namespace apnn
