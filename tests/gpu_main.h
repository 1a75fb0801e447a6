// main() of GPU suites: skip (exit 77, CTest's SKIP_RETURN_CODE) with the reason when
// there is no CUDA driver or device, else run doctest.
#pragma once
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "apnn/error.h"
#include "runtime/device.h"

int main(int argc, char** argv) {
  try {
    const apnn::DeviceInfo& d = apnn::current_device();
    std::printf("GPU: %s (%s, %d SMs)\n", d.name.c_str(), d.arch().c_str(), d.sm_count);
  } catch (const apnn::Error& e) {
    std::printf("SKIP: %s\n", e.what());
    return 77;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
