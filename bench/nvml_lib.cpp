#include "bench/nvml_lib.h"

#include <fmt/format.h>

#include "apnn/error.h"
#include "bench/dlopen_util.h"
#include "runtime/device.h"
#include "runtime/driver_api.h"

namespace apnn::bench {

namespace {

// NVML's C ABI (nvml.h): every call returns 0 on success; handles are opaque pointers.
using NvmlReturn = int;
using NvmlHandle = void*;
constexpr int kClockSm = 1;  // NVML_CLOCK_SM
// nvmlClocksEventReason*: SwPowerCap 0x4, HwSlowdown 0x8, SwThermalSlowdown 0x20,
// HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80. Idle (0x1) and application clock
// settings (0x2) are not a slowdown under load.
constexpr unsigned long long kSlowdownReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

struct NvmlApi {
  NvmlReturn (*init)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*handle_by_pci_bus_id)(const char*, NvmlHandle*) = nullptr;
  NvmlReturn (*clock_info)(NvmlHandle, int, unsigned*) = nullptr;
  NvmlReturn (*power_usage)(NvmlHandle, unsigned*) = nullptr;  // milliwatts
  NvmlReturn (*event_reasons)(NvmlHandle, unsigned long long*) = nullptr;
};

const NvmlApi& nvml() {
  static const NvmlApi api = [] {
    void* lib = open_any({"libnvidia-ml.so.1", "libnvidia-ml.so"}, "NVML (the driver's libnvidia-ml)");
    NvmlApi a;
    bind(lib, "nvmlInit_v2", &a.init);
    bind(lib, "nvmlErrorString", &a.error_string);
    bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", &a.handle_by_pci_bus_id);
    bind(lib, "nvmlDeviceGetClockInfo", &a.clock_info);
    bind(lib, "nvmlDeviceGetPowerUsage", &a.power_usage);
    // The newer name (drivers of 2023 on) first; the same call under its old name otherwise.
    if (!(a.event_reasons = reinterpret_cast<decltype(a.event_reasons)>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"))))
      bind(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", &a.event_reasons);
    if (NvmlReturn r = a.init(); r != 0)
      throw Error(ErrorKind::InvalidInput, fmt::format("nvmlInit_v2 failed: {}", a.error_string(r)));
    return a;
  }();
  return api;
}

}  // namespace

NvmlDevice::NvmlDevice(const std::string& pci_bus_id) {
  const NvmlApi& a = nvml();
  if (NvmlReturn r = a.handle_by_pci_bus_id(pci_bus_id.c_str(), &handle_); r != 0)
    throw Error(ErrorKind::InvalidInput,
                fmt::format("nvmlDeviceGetHandleByPciBusId_v2({}) failed: {}", pci_bus_id, a.error_string(r)));
}

bool NvmlDevice::read(GpuSample* s) const {
  const NvmlApi& a = nvml();
  unsigned mhz = 0, milliwatts = 0;
  unsigned long long reasons = 0;
  if (a.clock_info(handle_, kClockSm, &mhz) != 0) return false;
  // Power and reasons are not reported everywhere (MIG, some virtual GPUs): 0 / none then.
  if (a.power_usage(handle_, &milliwatts) != 0) milliwatts = 0;
  if (a.event_reasons(handle_, &reasons) != 0) reasons = 0;
  *s = {static_cast<double>(mhz), milliwatts * 1e-3, (reasons & kSlowdownReasons) != 0};
  return true;
}

std::string current_pci_bus_id() {
  const driver::Api& cu = driver::api();
  CUdevice dev = 0;
  driver::check(cu.DeviceGet(&dev, current_device().ordinal), "cuDeviceGet");
  char id[32] = {};
  driver::check(cu.DeviceGetPCIBusId(id, sizeof id, dev), "cuDeviceGetPCIBusId");
  return id;
}

}  // namespace apnn::bench
