// The current CUDA device, its primary context and the properties kernels need.
#pragma once
#include <cuda.h>

#include <string>

namespace apnn {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_smem_optin = 0;  // bytes of dynamic shared memory a block may opt into
  std::string arch() const;  // the NVRTC target we build for: sm_90 -> "sm_90a" (wgmma), else "sm_XY"
};

// Device 0 (or $APNN_DEVICE), with its primary context current on this thread.
// Throws Error(NoDriver / NoDevice) in one line on machines without a GPU.
const DeviceInfo& current_device();

}  // namespace apnn
