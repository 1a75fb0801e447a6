#include "engine/input_sets.h"

#include <algorithm>

#include "apnn/reference.h"
#include "runtime/device.h"
#include "runtime/steady_timing.h"

namespace apnn {

namespace {

void upload_slice(DeviceBuffer& staging, const std::vector<int16_t>& v, size_t set, size_t count) {
  staging.upload(v.data() + set * kInputSetShift, count * sizeof(int16_t));
}

// Adds set 0, then as many more as `sets` (or the L2 rule for 0) asks.
template <class AddSet, class SetBytes>
void fill_sets(int sets, AddSet add_set, SetBytes set_bytes) {
  add_set(0);
  const int n = sets > 0 ? std::min(sets, kMaxInputSets) : rotation_sets(set_bytes(), l2_bytes());
  for (int i = 1; i < n; ++i) add_set(static_cast<size_t>(i));
}

}  // namespace

ApmmInputSets::ApmmInputSets(ApmmRunner& packer, const KernelSpec& spec, const ApmmShape& s, int sets, uint64_t seed) {
  const size_t wn = static_cast<size_t>(s.M * s.K), xn = static_cast<size_t>(s.N * s.K);
  W = random_operand(spec.w, wn + kMaxInputSets * kInputSetShift, seed);
  X = random_operand(spec.x, xn + kMaxInputSets * kInputSetShift, seed + 1);
  DeviceBuffer ws(wn * 2), xs(xn * 2);
  fill_sets(
      sets,
      [&](size_t i) {
        upload_slice(ws, W, i, wn);
        upload_slice(xs, X, i, xn);
        w.push_back(packer.pack_w(ws, s.M, s.K));
        x.push_back(packer.pack_x(xs, s.N, s.K));
        y.push_back(EpilogueDevice::allocate(spec.epilogue, ApmmRunner::dims(s.M, s.N)));
      },
      [&] { return w[0].planes.bytes() + x[0].planes.bytes() + y[0].values.bytes(); });
  synchronize(packer.kernel().module->context());  // the staging buffers die here
}

ConvInputSets::ConvInputSets(ConvRunner& packer, const KernelSpec& spec, const ConvGeometry& g, int sets, uint64_t seed) {
  const size_t wn = static_cast<size_t>(g.O * g.C * g.kh * g.kw), xn = static_cast<size_t>(g.N * g.C * g.H * g.W);
  W = random_operand(spec.w, wn + kMaxInputSets * kInputSetShift, seed);
  X = random_operand(spec.x, xn + kMaxInputSets * kInputSetShift, seed + 1);
  DeviceBuffer ws(wn * 2), xs(xn * 2);
  fill_sets(
      sets,
      [&](size_t i) {
        upload_slice(ws, W, i, wn);
        upload_slice(xs, X, i, xn);
        w.push_back(packer.pack_w(ws, g));
        x.push_back(packer.pack_x(xs, g));
        y.push_back(EpilogueDevice::allocate(spec.epilogue, ConvRunner::dims(spec, g)));
      },
      [&] { return w[0].planes.bytes() + x[0].planes.bytes() + y[0].values.bytes(); });
  synchronize(packer.kernel().module->context());
}

}  // namespace apnn
