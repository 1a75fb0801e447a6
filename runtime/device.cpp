#include "runtime/device.h"

#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "apnn/error.h"
#include "runtime/driver_api.h"

namespace apnn {

std::string DeviceInfo::arch() const {
  if (cc_major == 9 && cc_minor == 0) return "sm_90a";
  return fmt::format("sm_{}{}", cc_major, cc_minor);
}

const DeviceInfo& current_device() {
  static std::once_flag once;
  static DeviceInfo info;
  static CUcontext ctx = nullptr;
  const driver::Api& cu = driver::api();
  std::call_once(once, [&] {
    int count = 0;
    driver::check(cu.DeviceGetCount(&count), "cuDeviceGetCount");
    const char* env = std::getenv("APNN_DEVICE");
    info.ordinal = env ? std::atoi(env) : 0;
    if (info.ordinal < 0 || info.ordinal >= count)
      throw Error(ErrorKind::NoDevice, fmt::format("no CUDA device {} (APNN_DEVICE; {} present)", info.ordinal, count));
    CUdevice dev;
    driver::check(cu.DeviceGet(&dev, info.ordinal), "cuDeviceGet");
    char name[256] = {};
    driver::check(cu.DeviceGetName(name, sizeof(name), dev), "cuDeviceGetName");
    info.name = name;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      driver::check(cu.DeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
      return v;
    };
    info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info.max_smem_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    driver::check(cu.DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  });
  // Every calling thread needs the context current (thread pools, the CLI's main thread);
  // once per thread, not per request.
  thread_local bool current = false;
  if (!current) {
    driver::check(cu.CtxSetCurrent(ctx), "cuCtxSetCurrent");
    current = true;
  }
  return info;
}

}  // namespace apnn
