// Model files: a network's layers as kernel specs plus shapes, so a whole model's kernels
// can be compiled into the cache ahead of its first inference (`apnn prewarm`).
//
// Format (JSON), version 1:
//   {"model": "resnet18", "version": 1,
//    "layers": [
//      {"name": "conv1", "spec": {<an apconv spec>},
//       "shape": {"batch": 8, "in_channels": 3, "height": 224, "width": 224, "out_channels": 64}},
//      {"name": "fc", "spec": {<an apmm spec>}, "shape": {"m": 1000, "n": 8, "k": 512}}]}
// Unknown fields are errors; every error names the layer (by name and index) and the field.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "apnn/engine.h"
#include "apnn/spec.h"

namespace apnn {

struct ModelLayer {
  std::string name;
  KernelSpec spec;
  nlohmann::json shape;       // as given, validated for the spec's op
  ApmmShape apmm;             // op apmm
  ConvShape conv;             // op apconv
};

struct Model {
  std::string name;
  std::vector<ModelLayer> layers;
};

Model parse_model(const nlohmann::json& j, std::string_view origin);
Model load_model_file(const std::string& path);  // Error(Io) unreadable, Error(InvalidSpec) invalid

}  // namespace apnn
