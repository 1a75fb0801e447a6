#include "engine/input_sets.h"

#include <algorithm>
#include <string>

#include "apnn/reference.h"
#include "runtime/device.h"
#include "runtime/module.h"
#include "runtime/steady_timing.h"

namespace apnn {

namespace {

// Draws both operands with room for kMaxInputSets shifted slices, then packs set 0 and as
// many more as `sets` (or, for 0, the L2 rule) asks: pack_set(ws, xs) packs the staged
// slices of one set; set_bytes() is one packed set's size. Waits for the packing before the
// staging buffers are freed (`context` names the module for errors).
template <class PackSet, class SetBytes>
void draw_and_pack(const KernelSpec& spec, size_t wn, size_t xn, int sets, uint64_t seed, std::vector<int16_t>* W,
                   std::vector<int16_t>* X, PackSet pack_set, SetBytes set_bytes, const std::string& context) {
  *W = random_operand(spec.w, wn + kMaxInputSets * kInputSetShift, seed);
  *X = random_operand(spec.x, xn + kMaxInputSets * kInputSetShift, seed + 1);
  DeviceBuffer ws(wn * 2), xs(xn * 2);
  auto add_set = [&](size_t i) {
    ws.upload(W->data() + i * kInputSetShift, wn * sizeof(int16_t));
    xs.upload(X->data() + i * kInputSetShift, xn * sizeof(int16_t));
    pack_set(ws, xs);
  };
  add_set(0);
  const int n = sets > 0 ? std::min(sets, kMaxInputSets) : rotation_sets(set_bytes(), l2_bytes());
  for (int i = 1; i < n; ++i) add_set(static_cast<size_t>(i));
  synchronize(context);
}

}  // namespace

ApmmInputSets::ApmmInputSets(ApmmRunner& packer, const KernelSpec& spec, const ApmmShape& s, int sets, uint64_t seed) {
  draw_and_pack(
      spec, static_cast<size_t>(s.M * s.K), static_cast<size_t>(s.N * s.K), sets, seed, &W, &X,
      [&](const DeviceBuffer& ws, const DeviceBuffer& xs) {
        w.push_back(packer.pack_w(ws, s.M, s.K));
        x.push_back(packer.pack_x(xs, s.N, s.K));
        y.push_back(EpilogueDevice::allocate(spec.epilogue, ApmmRunner::dims(s.M, s.N)));
      },
      [&] { return w[0].planes.bytes() + x[0].planes.bytes() + y[0].values.bytes(); }, packer.kernel().module->context());
}

ConvInputSets::ConvInputSets(ConvRunner& packer, const KernelSpec& spec, const ConvGeometry& g, int sets, uint64_t seed) {
  draw_and_pack(
      spec, static_cast<size_t>(g.O * g.C * g.kh * g.kw), static_cast<size_t>(g.N * g.C * g.H * g.W), sets, seed, &W, &X,
      [&](const DeviceBuffer& ws, const DeviceBuffer& xs) {
        w.push_back(packer.pack_w(ws, g));
        x.push_back(packer.pack_x(xs, g));
        y.push_back(EpilogueDevice::allocate(spec.epilogue, ConvRunner::dims(spec, g)));
      },
      [&] { return w[0].planes.bytes() + x[0].planes.bytes() + y[0].values.bytes(); }, packer.kernel().module->context());
}

}  // namespace apnn
