// Runs one APMM kernel module: packs int16 operands into bit planes on the GPU
// (include/apnn/bitplane_layout.h) and launches the GEMM on packed operands.
#pragma once
#include <cstdint>
#include <memory>

#include "apnn/engine.h"
#include "engine/epilogue_device.h"
#include "runtime/device_buffer.h"
#include "runtime/module.h"

namespace apnn {

struct PackedOperand {
  DeviceBuffer planes;  // bits x rows x ld words
  DeviceBuffer rowsum;  // rows int32
  int64_t rows = 0, K = 0, ld = 0;
};

// Throws Error(InvalidInput) for a shape the kernel cannot take (0, too large, int32 overflow risk).
void check_apmm_shape(const KernelSpec& spec, const ApmmShape& s);
// The largest K at which |W.X^T| stays within the spec's output type (int32, or int16).
int64_t apmm_max_k(const KernelSpec& spec);

class ApmmRunner {
 public:
  explicit ApmmRunner(std::shared_ptr<Kernel> kernel);

  // `values` holds rows x K int16 on the device.
  PackedOperand pack_w(const DeviceBuffer& values, int64_t rows, int64_t K);
  PackedOperand pack_x(const DeviceBuffer& values, int64_t rows, int64_t K);
  // The output through the spec's chain (EpilogueDevice::allocate(dims(M, N))). Launch only
  // (asynchronous); a quantized output's sums are zeroed first, on the same stream, where
  // rules::quantize_sums_path says so.
  void gemm(const PackedOperand& w, const PackedOperand& x, const EpilogueDevice& ep, LayerBuffers& out);
  static OutputDims dims(int64_t M, int64_t N) { return {1, M, 1, N}; }
  LaunchDims gemm_dims(int64_t M, int64_t N) const;
  const Kernel& kernel() const { return *kernel_; }

 private:
  PackedOperand pack(const char* entry, int bits, const DeviceBuffer& values, int64_t rows, int64_t K);
  std::shared_ptr<Kernel> kernel_;
};

}  // namespace apnn
