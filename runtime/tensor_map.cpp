#include "runtime/tensor_map.h"

namespace apnn {

CUresult encode_tiled_map(CUtensorMap* map, CUdeviceptr base, const TiledMapShape& shape) {
  cuuint64_t strides[4] = {};  // bytes, of dimensions 1..rank-1
  cuuint64_t stride = static_cast<cuuint64_t>(shape.elem_bytes);
  for (int i = 0; i + 1 < shape.rank; ++i) strides[i] = stride *= shape.dims[i];
  return driver::api().TensorMapEncodeTiled(map, shape.type, static_cast<cuuint32_t>(shape.rank), reinterpret_cast<void*>(base),
                                            shape.dims, strides, shape.box, shape.steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            shape.swizzle, shape.promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace apnn
