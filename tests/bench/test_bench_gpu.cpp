// `apnn bench`'s parts that need a GPU: the output floor's write kernel must write every word
// of the output, or the floor it times would be a flattering one.
#include "gpu_main.h"

#include <cstdint>
#include <vector>

#include "bench/output_floor.h"
#include "runtime/device_buffer.h"

using namespace apnn;

TEST_CASE("bench: the output floor's write kernel writes every word, tails and grid-stride passes included") {
  bench::OutputFloor floor;
  const size_t wave_words = size_t{2} * 512 * current_device().sm_count * 4;  // one 16-byte store a thread
  // Under one vector, odd tails, one block's worth and a bit, more than a wave of stores.
  for (size_t words : {size_t{1}, size_t{3}, size_t{5}, size_t{512 * 4 * 3 + 2}, wave_words * 3 + 7}) {
    DeviceBuffer y(words * 4);
    y.fill_u32_async(0xdeadbeefu);
    floor.write(y, 0x5a5a0000u + static_cast<uint32_t>(words % 1000));
    std::vector<uint32_t> host(words);
    y.download(host.data(), words * 4);
    size_t wrong = 0;
    for (uint32_t v : host) wrong += v != 0x5a5a0000u + static_cast<uint32_t>(words % 1000);
    INFO(words, " words");
    CHECK(wrong == 0);
  }
}
