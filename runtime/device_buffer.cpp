#include "runtime/device_buffer.h"

#include <fmt/format.h>

#include "runtime/device.h"
#include "runtime/driver_api.h"

namespace apnn {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  current_device();
  // A zero-byte request still gets a distinct, valid pointer.
  driver::check(driver::api().MemAlloc(&ptr_, bytes ? bytes : 4), "cuMemAlloc", fmt::format("{} bytes", bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver::api().MemFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = 0;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver::api().MemFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void* src, size_t bytes) {
  if (bytes) driver::check(driver::api().MemcpyHtoD(ptr_, src, bytes), "cuMemcpyHtoD", fmt::format("{} bytes", bytes));
}

void DeviceBuffer::download(void* dst, size_t bytes) const {
  if (bytes) driver::check(driver::api().MemcpyDtoH(dst, ptr_, bytes), "cuMemcpyDtoH", fmt::format("{} bytes", bytes));
}

void DeviceBuffer::fill_u32(uint32_t value) {
  driver::check(driver::api().MemsetD32(ptr_, value, bytes_ / 4), "cuMemsetD32");
}

void DeviceBuffer::fill_u32_async(uint32_t value) {
  driver::check(driver::api().MemsetD32Async(ptr_, value, bytes_ / 4, nullptr), "cuMemsetD32Async");
}

}  // namespace apnn
