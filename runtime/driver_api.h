// The CUDA driver API, loaded with dlopen("libcuda.so.1") on first use and never
// linked, so that everything but a launch works on machines without a GPU.
#pragma once
#include <cuda.h>

#include <string>
#include <type_traits>

namespace apnn::driver {

// X(member, symbol): symbol names are the versioned ones cuda.h maps the API to. The
// cluster-occupancy and tensor-map entry points came with CUDA 12 drivers; NVRTC 13's cubins
// need a newer driver than that anyway.
#define APNN_DRIVER_FUNCTIONS(X)                          \
  X(Init, "cuInit")                                       \
  X(DriverGetVersion, "cuDriverGetVersion")               \
  X(GetErrorName, "cuGetErrorName")                       \
  X(GetErrorString, "cuGetErrorString")                   \
  X(DeviceGetCount, "cuDeviceGetCount")                   \
  X(DeviceGet, "cuDeviceGet")                             \
  X(DeviceGetName, "cuDeviceGetName")                     \
  X(DeviceGetAttribute, "cuDeviceGetAttribute")           \
  X(DeviceGetPCIBusId, "cuDeviceGetPCIBusId")             \
  X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")   \
  X(CtxSetCurrent, "cuCtxSetCurrent")                     \
  X(CtxSynchronize, "cuCtxSynchronize")                   \
  X(ModuleLoadData, "cuModuleLoadData")                   \
  X(ModuleUnload, "cuModuleUnload")                       \
  X(ModuleGetFunction, "cuModuleGetFunction")             \
  X(ModuleGetGlobal, "cuModuleGetGlobal_v2")              \
  X(FuncSetAttribute, "cuFuncSetAttribute")               \
  X(FuncGetAttribute, "cuFuncGetAttribute")               \
  X(LaunchKernel, "cuLaunchKernel")                       \
  X(LaunchKernelEx, "cuLaunchKernelEx")                   \
  X(OccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters") \
  X(TensorMapEncodeTiled, "cuTensorMapEncodeTiled")       \
  X(MemAlloc, "cuMemAlloc_v2")                            \
  X(MemFree, "cuMemFree_v2")                              \
  X(MemcpyHtoD, "cuMemcpyHtoD_v2")                        \
  X(MemcpyDtoH, "cuMemcpyDtoH_v2")                        \
  X(MemsetD32, "cuMemsetD32_v2")                          \
  X(MemsetD32Async, "cuMemsetD32Async")                   \
  X(EventCreate, "cuEventCreate")                         \
  X(EventDestroy, "cuEventDestroy_v2")                    \
  X(EventRecord, "cuEventRecord")                         \
  X(EventSynchronize, "cuEventSynchronize")               \
  X(EventElapsedTime, "cuEventElapsedTime_v2")

struct Api {
#define APNN_DECLARE(name, sym) decltype(&::cu##name) name = nullptr;
  APNN_DRIVER_FUNCTIONS(APNN_DECLARE)
#undef APNN_DECLARE
};

// Loads and initializes the driver once; throws Error(NoDriver) when libcuda.so.1 is
// missing or cuInit fails, Error(NoDevice) when it reports no device.
const Api& api();

// "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid) [<context>]"
std::string describe(CUresult r, const char* call, const std::string& context);
void check(CUresult r, const char* call, const std::string& context = {});
// The same with the context built only on failure: for hot paths (every kernel launch),
// where formatting a message each time would cost more than the call it describes.
template <class Context, class = std::enable_if_t<std::is_invocable_r_v<std::string, Context>>>
void check(CUresult r, const char* call, Context&& context) {
  if (r != CUDA_SUCCESS) check(r, call, std::string(context()));
}

}  // namespace apnn::driver
