// Inputs for the vendor libraries' rows, drawn and rotated the way ours are
// (engine/input_sets.h): one random draw per operand, set i a copy of its slice from element
// i * kInputSetShift on. Elements are never zero and never denormal, so no library can take a
// shortcut on them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/device_buffer.h"

namespace apnn::bench {

enum class Element { Int8, Fp8E4M3, Fp16 };
size_t element_bytes(Element e);

// `count` elements for each of kMaxInputSets sets: int8 in +-[1, 127], fp8 e4m3 and fp16 in
// +-[0.5, 1).
std::vector<uint8_t> draw_for_sets(Element e, size_t count, uint32_t seed);

// Device copies of the first `sets` slices of `count` elements of a draw_for_sets draw.
std::vector<DeviceBuffer> upload_sets(const std::vector<uint8_t>& draw, Element e, size_t count, int sets);

}  // namespace apnn::bench
