// Turns a validated epilogue chain into the generated kernel's struct Epi.
#pragma once
#include <string>

#include "apnn/epilogue.h"

namespace apnn {

std::string epilogue_source(const Epilogue& e);

}  // namespace apnn
