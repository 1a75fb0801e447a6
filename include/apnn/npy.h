// Reading and writing NumPy .npy files of integers (the golden vectors' and the CLI's format).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace apnn {

// An integer array of any .npy integer dtype, widened to int64, in C (row-major) order.
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
};

// Reads format versions 1.0-3.0, dtypes b1 i1 u1 i2 u2 i4 u4 i8 u8 in any byte order, C or
// Fortran order. Throws Error(Io) if the file cannot be read and Error(InvalidInput) for any
// malformed content; both messages are one line starting with "<path>: ".
NpyArray read_npy_int(const std::string& path);

// A float array (float32 '<f4' or float64 '<f8', either byte order, C or Fortran order) as
// double; any other dtype is Error(InvalidInput) naming it.
struct NpyFloatArray {
  std::vector<int64_t> shape;
  std::vector<double> values;
};
NpyFloatArray read_npy_float(const std::string& path);

// Writes a version 1.0 file with numpy's exact header layout. The file is replaced atomically,
// so a failure (Error(Io)) never leaves a half-written file behind.
void write_npy_int32(const std::string& path, const std::vector<int64_t>& shape, const int32_t* data);

// A '<f4' file, atomically like write_npy_int32.
void write_npy_float32(const std::string& path, const std::vector<int64_t>& shape, const float* data);

// As above for any integer dtype descr ("<i2", ">u4", "|b1", ...); values that do not fit the
// dtype or a shape that does not match are Error(InvalidInput).
void write_npy_int(const std::string& path, const std::vector<int64_t>& shape, const int64_t* data,
                   const std::string& descr);

}  // namespace apnn
