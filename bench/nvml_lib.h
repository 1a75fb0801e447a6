// NVML (libnvidia-ml.so.1, installed with the driver) is loaded with dlopen when `apnn bench`
// samples the GPU's clock and power, never linked. The toolkit here ships no nvml.h, so the
// few entry points used are declared in nvml_lib.cpp with NVML's C ABI.
#pragma once
#include <string>

namespace apnn::bench {

// One reading of the GPU: SM clock, board power (NVML averages it over the last second on
// this GPU generation, so a short row's reading mostly shows the second before it; 0 where
// the GPU does not report it), and whether a power or thermal limit was slowing the clocks
// at that moment (NVML's clock event reasons; false where not reported).
struct GpuSample {
  double sm_mhz = 0;
  double watts = 0;
  bool slowed = false;
};

// The NVML handle of the GPU at a PCI bus id ("0000:1B:00.0", as cuDeviceGetPCIBusId gives).
// Throws Error(InvalidInput) naming the library or the NVML call that failed.
class NvmlDevice {
 public:
  explicit NvmlDevice(const std::string& pci_bus_id);
  bool read(GpuSample* s) const;  // false when the clock could not be read (no sample then)

 private:
  void* handle_ = nullptr;
};

// The PCI bus id of the current CUDA device (runtime/device.h).
std::string current_pci_bus_id();

}  // namespace apnn::bench
