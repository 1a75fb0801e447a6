// Tiled tensor maps (the copy engine's view of a device buffer) for the TMA-fed cores.
#pragma once
#include <cuda.h>

#include "runtime/driver_api.h"

namespace apnn {

// A densely packed tensor of `rank` (1..5) dimensions of elements of `elem_bytes` each,
// innermost first (each dimension's stride is the product of the ones inside it), read in
// boxes of `box` elements, every steps[i]-th element. Out-of-range elements read zeros.
struct TiledMapShape {
  CUtensorMapDataType type;
  int elem_bytes;
  int rank;
  cuuint64_t dims[5];
  cuuint32_t box[5];
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion promotion;
  cuuint32_t steps[5] = {1, 1, 1, 1, 1};
};

// cuTensorMapEncodeTiled over `base` into *map.
CUresult encode_tiled_map(CUtensorMap* map, CUdeviceptr base, const TiledMapShape& shape);
// The same, a failure being Error(Driver) naming the call and what() (built only then: the
// TMA cores encode their maps on every launch).
template <class What>
CUtensorMap encode_tiled_map(CUdeviceptr base, const TiledMapShape& shape, What&& what) {
  CUtensorMap map;
  driver::check(encode_tiled_map(&map, base, shape), "cuTensorMapEncodeTiled", what);
  return map;
}

}  // namespace apnn
