// Host copies of a layer's GPU output (apnn::LayerResult), shared by apmm_layer and apconv_layer.
#pragma once
#include <vector>

#include "apnn/engine.h"
#include "engine/epilogue_device.h"

namespace apnn {

LayerResult download_layer(const Epilogue& e, const OutputDims& dims, const LayerBuffers& out, std::vector<int64_t> shape);

// Error(InvalidInput) when the spec's chain does not end in int32 (the plain apmm()/apconv()).
void require_int32_output(const KernelSpec& spec, const char* api);

}  // namespace apnn
