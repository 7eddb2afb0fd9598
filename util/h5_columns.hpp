// HDF5 column files: the few operations servesim's trace, results, sweep and capacity files are
// made of. A table is a group of equal-length 1-D datasets, one per column, chunked and
// deflate-compressed with the shuffle filter; strings are fixed-length (h5py reads them as
// bytes); metadata are scalar attributes.
// Promises: no modification times are stored (H5Pset_obj_track_times off), so equal contents give
// byte-identical files; reads check a column's type class, size, sign and rank before
// allocating, so a foreign file is an Error naming the file and column, never a silent
// conversion.
#pragma once

#include <H5Cpp.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "util/error.hpp"

namespace servesim::h5 {

template <class T>
const H5::PredType& type_of() {
  if constexpr (std::is_same_v<T, double>) return H5::PredType::NATIVE_DOUBLE;
  if constexpr (std::is_same_v<T, int32_t>) return H5::PredType::NATIVE_INT32;
  if constexpr (std::is_same_v<T, int64_t>) return H5::PredType::NATIVE_INT64;
  if constexpr (std::is_same_v<T, uint64_t>) return H5::PredType::NATIVE_UINT64;
  if constexpr (std::is_same_v<T, uint8_t>) return H5::PredType::NATIVE_UINT8;
  if constexpr (std::is_same_v<T, int8_t>) return H5::PredType::NATIVE_INT8;
}

constexpr hsize_t kChunk = 1 << 16;

// A creation property list for a column of N elements: chunked and compressed when non-empty,
// without timestamps.
inline H5::DSetCreatPropList column_props(hsize_t n) {
  H5::DSetCreatPropList props;
  H5Pset_obj_track_times(props.getId(), false);
  if (n > 0) {
    const hsize_t chunk = std::min<hsize_t>(kChunk, n);
    props.setChunk(1, &chunk);
    props.setShuffle();
    props.setDeflate(1);
  }
  return props;
}

// A new group without timestamps.
inline H5::Group create_group(H5::Group& parent, const std::string& name) {
  const hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_obj_track_times(gcpl, false);
  const hid_t id = H5Gcreate2(parent.getId(), name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT);
  H5Pclose(gcpl);
  if (id < 0) throw H5::GroupIException("create_group", "cannot create group " + name);
  H5::Group g(id);
  H5Gclose(id);  // H5::Group(id) took its own reference
  return g;
}

template <class T>
void write_column(H5::Group& g, const std::string& name, const std::vector<T>& v) {
  const hsize_t n = v.size();
  H5::DataSpace space(1, &n);
  H5::DataSet ds = g.createDataSet(name, type_of<T>(), space, column_props(n));
  if (n > 0) ds.write(v.data(), type_of<T>());
}

// Fixed-length strings, as long as the longest (at least 1).
inline void write_column(H5::Group& g, const std::string& name, const std::vector<std::string>& v) {
  size_t width = 1;
  for (const std::string& s : v)
    width = std::max(width, s.size());
  std::string packed(width * v.size(), '\0');
  for (size_t i = 0; i < v.size(); ++i)
    std::copy(v[i].begin(), v[i].end(), packed.begin() + std::ptrdiff_t(i * width));
  const hsize_t n = v.size();
  H5::StrType type(H5::PredType::C_S1, width);
  type.setStrpad(H5T_STR_NULLPAD);
  H5::DataSpace space(1, &n);
  H5::DataSet ds = g.createDataSet(name, type, space, column_props(n));
  if (n > 0) ds.write(packed.data(), type);
}

// The length of 1-D column NAME of G after checking that its type is T's (HDF5 would otherwise
// convert silently: truncate floats, clamp large integers). PATH names the file in errors.
template <class T>
hsize_t column_length(H5::Group& g, const std::string& path, const std::string& name, hsize_t max) {
  if (!g.nameExists(name)) throw Error(path, 0, name, "missing column");
  H5::DataSet ds = g.openDataSet(name);
  const H5::DataType type = ds.getDataType();
  const bool is_float = std::is_floating_point_v<T>;
  const bool class_ok = type.getClass() == (is_float ? H5T_FLOAT : H5T_INTEGER);
  const bool size_ok = type.getSize() == sizeof(T);
  bool sign_ok = true;
  if (class_ok && !is_float) {
    sign_ok = ds.getIntType().getSign() == (std::is_signed_v<T> ? H5T_SGN_2 : H5T_SGN_NONE);
  }
  if (!class_ok || !size_ok || !sign_ok) {
    const std::string want = std::string(is_float              ? "float"
                                         : std::is_signed_v<T> ? "int"
                                                               : "uint") +
                             std::to_string(sizeof(T) * 8);
    throw Error(path, 0, name, "has the wrong type (servesim writes " + want + ")");
  }
  H5::DataSpace space = ds.getSpace();
  if (space.getSimpleExtentNdims() != 1) throw Error(path, 0, name, "is not a 1-D column");
  hsize_t n = 0;
  space.getSimpleExtentDims(&n);
  if (n > max) throw Error(path, 0, name, "claims " + std::to_string(n) + " elements: too many");
  return n;
}

template <class T>
std::vector<T> read_column(H5::Group& g, const std::string& name, hsize_t n) {
  std::vector<T> v(n);
  if (n > 0) g.openDataSet(name).read(v.data(), type_of<T>());
  return v;
}

// A column of N elements, type-checked.
template <class T>
std::vector<T> read_checked(H5::Group& g, const std::string& path, const std::string& name,
                            hsize_t n) {
  const hsize_t got = column_length<T>(g, path, name, n);
  if (got != n) {
    throw Error(path, 0, name,
                "has " + std::to_string(got) + " elements, expected " + std::to_string(n));
  }
  return read_column<T>(g, name, n);
}

std::vector<std::string> read_string_column(H5::Group& g, const std::string& path,
                                            const std::string& name, hsize_t n);

// Lists kept in one string attribute, one item per line. KEEP_EMPTY keeps empty items.
std::string join_lines(const std::vector<std::string>& v);
std::vector<std::string> split_lines(const std::string& s, bool keep_empty = false);

// Attributes live in the object header (64 KiB in all): long texts are cut at 32 KiB.
void write_attr(H5::H5Object& o, const std::string& name, const std::string& text);
void write_attr(H5::H5Object& o, const std::string& name, int64_t value);
void write_attr(H5::H5Object& o, const std::string& name, double value);
std::string read_string_attr(H5::H5Object& o, const std::string& name);
int64_t read_int_attr(H5::H5Object& o, const std::string& path, const std::string& name);

// Builds a file through WRITE(file) in memory and writes it to PATH with write_output_file: a
// failed write never leaves half a file or destroys the one that was there, and never reaches
// HDF5. HDF5 errors become one Error naming PATH (HDF5's own error stack is silenced).
void write_file_atomically(const std::string& path, const std::function<void(H5::H5File&)>& write);

// Opens PATH for reading after checking that it is an HDF5 file whose root attribute `magic` is
// MAGIC and `version` is VERSION; WHAT names the kind of file in errors ("results file").
H5::H5File open_checked(const std::string& path, const char* magic, int64_t version,
                        const char* what);

}  // namespace servesim::h5
