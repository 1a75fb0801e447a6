// CPU references of APConv (zero padding: every padded position holds the value 0,
// whatever the encoding) and of the channel-major bit-plane layout.
#pragma once
#include <cstdint>
#include <vector>

#include "apnn/conv_layout.h"
#include "apnn/encoding.h"

namespace apnn {

// Direct integer convolution. W (O,C,Kh,Kw), X (N,C,H,W) int16; Y (N,O,Ho,Wo) int32.
std::vector<int32_t> conv_reference_direct(const ConvGeometry& g, const int16_t* W, const int16_t* X);
// Independent path: im2col of X (zeros at padded positions) then the APMM direct reference.
std::vector<int32_t> conv_reference_im2col(const ConvGeometry& g, const int16_t* W, const int16_t* X);

// Layout v1 (conv_layout.h) on the CPU: what the GPU packing kernels must produce bit for bit.
struct PackedActivations { std::vector<uint32_t> planes; std::vector<int32_t> pixsum; };
struct PackedWeights { std::vector<uint32_t> planes; std::vector<int32_t> possum, rowsum; };
PackedActivations pack_activations_reference(const OperandFormat& f, const int16_t* X, int64_t N, int64_t C, int64_t H,
                                             int64_t W);
PackedWeights pack_weights_reference(const OperandFormat& f, const int16_t* Wt, int64_t O, int64_t C, int64_t Kh,
                                     int64_t Kw);
// Inverse of pack_activations_reference: NCHW values.
std::vector<int16_t> unpack_activations_reference(const OperandFormat& f, const uint32_t* planes, int64_t N, int64_t C,
                                                  int64_t H, int64_t W);

}  // namespace apnn
