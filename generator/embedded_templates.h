// The device templates of templates/, embedded at build time (generator/embed_templates.cmake).
#pragma once
#include <string_view>
#include <vector>

namespace apnn::embedded {

struct Template {
  std::string_view name;     // file name, e.g. "apmm_sm80.cuh": the #include name the sources use
  std::string_view content;
};

const std::vector<Template>& templates();

}  // namespace apnn::embedded
