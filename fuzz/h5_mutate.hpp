// The HDF5 fuzz targets' input: a valid servesim file (written once per process by servesim
// itself) edited as the fuzz bytes say. libhdf5's own parsing of corrupt bytes is not servesim's
// to fix; what servesim owns is its validation of the attributes and datasets it reads, so the
// edits are structural: an attribute or dataset replaced by one of another type, shape or value,
// removed, or one element overwritten.
#pragma once

#include <H5Cpp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.hpp"

namespace servesim::fuzz {

// The fuzz bytes, read front to back; zeros once they run out.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v = v << 8 | byte();
    return v;
  }
  std::string text(size_t max) {
    std::string s;
    for (size_t n = byte() % (max + 1); n > 0 && !empty(); --n)
      s.push_back(char(byte()));
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

// Where an edit can land: an attribute or a dataset, by the group that holds it and its name.
struct Site {
  std::string group, name;
  bool attribute;
};

inline void list_sites(H5::H5File& f, const std::string& group, std::vector<Site>& out) {
  H5::Group g = f.openGroup(group);
  for (int i = 0; i < g.getNumAttrs(); ++i)
    out.push_back({group, g.openAttribute(unsigned(i)).getName(), true});
  for (hsize_t i = 0; i < g.getNumObjs(); ++i) {
    const std::string name = g.getObjnameByIdx(i);
    const std::string path = group == "/" ? "/" + name : group + "/" + name;
    if (g.getObjTypeByIdx(i) == H5G_GROUP) {
      list_sites(f, path, out);
    } else {
      out.push_back({group, name, false});
    }
  }
}

// A replacement's type: the few that servesim writes or a foreign tool might.
inline H5::DataType pick_type(Bytes& b) {
  switch (b.byte() % 8) {
    case 0:
      return H5::PredType::NATIVE_INT64;
    case 1:
      return H5::PredType::NATIVE_INT32;
    case 2:
      return H5::PredType::NATIVE_UINT64;
    case 3:
      return H5::PredType::NATIVE_UINT8;
    case 4:
      return H5::PredType::NATIVE_DOUBLE;
    case 5:
      return H5::PredType::NATIVE_FLOAT;
    case 6:
      return H5::StrType(H5::PredType::C_S1, 1 + b.byte() % 16);
    default:
      return H5::StrType(H5::PredType::C_S1, H5T_VARIABLE);
  }
}

// N values of TYPE from the fuzz bytes (variable-length strings point into KEEP).
inline std::vector<char> values(Bytes& b, const H5::DataType& type, hsize_t n,
                                std::vector<std::string>& keep, std::vector<const char*>& ptrs) {
  if (type.getClass() == H5T_STRING && H5Tis_variable_str(type.getId()) > 0) {
    keep.clear();
    ptrs.clear();
    for (hsize_t i = 0; i < n; ++i)
      keep.push_back(b.text(24));
    for (const std::string& s : keep)
      ptrs.push_back(s.c_str());
    std::vector<char> raw(ptrs.size() * sizeof(char*));
    if (!ptrs.empty()) std::memcpy(raw.data(), ptrs.data(), raw.size());
    return raw;
  }
  std::vector<char> raw(type.getSize() * n);
  const uint8_t fill = b.byte();
  for (size_t i = 0; i < raw.size(); ++i)
    raw[i] = char(b.empty() ? fill + i : b.byte());
  return raw;
}

// Applies up to 4 edits the bytes describe to the file at PATH.
inline void mutate(const std::string& path, Bytes& b) {
  H5::Exception::dontPrint();
  H5::H5File f(path, H5F_ACC_RDWR);
  for (int edit = 0; edit < 4 && !b.empty(); ++edit) {
    std::vector<Site> sites;
    list_sites(f, "/", sites);
    if (sites.empty()) return;
    const Site& s = sites[b.byte() % sites.size()];
    H5::Group g = f.openGroup(s.group);
    const int op = b.byte() % 4;
    std::vector<std::string> keep;
    std::vector<const char*> ptrs;
    if (op == 0 && s.attribute) {  // another type or shape
      g.removeAttr(s.name);
      const H5::DataType type = pick_type(b);
      const hsize_t n = b.byte() % 4 == 0 ? 1 + b.byte() % 9 : 1;
      const H5::DataSpace space = n == 1 ? H5::DataSpace(H5S_SCALAR) : H5::DataSpace(1, &n);
      const std::vector<char> v = values(b, type, n, keep, ptrs);
      g.createAttribute(s.name, type, space).write(type, v.data());
    } else if (op == 0) {
      g.unlink(s.name);
      const H5::DataType type = pick_type(b);
      hsize_t n = b.byte() % 40;
      const std::vector<char> v = values(b, type, n, keep, ptrs);
      g.createDataSet(s.name, type, H5::DataSpace(1, &n)).write(v.data(), type);
    } else if (op == 1) {  // gone
      if (s.attribute) {
        g.removeAttr(s.name);
      } else {
        g.unlink(s.name);
      }
    } else if (!s.attribute) {  // one element overwritten, the type kept
      H5::DataSet ds = g.openDataSet(s.name);
      const H5::DataType type = ds.getDataType();
      if (type.getClass() == H5T_STRING && H5Tis_variable_str(type.getId()) > 0) continue;
      const hssize_t n = ds.getSpace().getSimpleExtentNpoints();
      if (n <= 0 || type.getSize() > 64) continue;
      std::vector<char> raw(size_t(n) * type.getSize());
      ds.read(raw.data(), type);
      const size_t at = size_t(b.u64() % uint64_t(n)) * type.getSize();
      for (size_t i = 0; i < type.getSize(); ++i)
        raw[at + i] = char(b.byte());
      ds.write(raw.data(), type);
    } else {  // a scalar attribute of the same type with another value
      H5::Attribute a = g.openAttribute(s.name);
      const H5::DataType type = a.getDataType();
      const hssize_t n = a.getSpace().getSimpleExtentNpoints();
      const std::vector<char> v = values(b, type, hsize_t(n), keep, ptrs);
      a.write(type, v.data());
    }
  }
}

// A copy of TEMPLATE_FILE at this process's scratch path for SUFFIX, edited by DATA; "" when
// the edits themselves were refused by libhdf5 (nothing to read then).
inline std::string mutated_copy(const std::string& template_file, const std::string& suffix,
                                const uint8_t* data, size_t size) {
  const std::string path = scratch_path(suffix);
  std::filesystem::copy_file(template_file, path,
                             std::filesystem::copy_options::overwrite_existing);
  Bytes b(data, size);
  try {
    mutate(path, b);
  } catch (const H5::Exception&) {
    return "";
  }
  return path;
}

}  // namespace servesim::fuzz
