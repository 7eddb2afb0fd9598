#include "util/h5_columns.hpp"

#include <atomic>
#include <sstream>

#include "util/output_file.hpp"

namespace servesim::h5 {

std::vector<std::string> read_string_column(H5::Group& g, const std::string& path,
                                            const std::string& name, hsize_t n) {
  if (!g.nameExists(name)) throw Error(path, 0, name, "missing column");
  H5::DataSet ds = g.openDataSet(name);
  if (ds.getTypeClass() != H5T_STRING) throw Error(path, 0, name, "is not a string column");
  H5::StrType type = ds.getStrType();
  if (type.isVariableStr()) throw Error(path, 0, name, "variable-length strings are not read");
  H5::DataSpace space = ds.getSpace();
  hsize_t got = 0;
  if (space.getSimpleExtentNdims() != 1) throw Error(path, 0, name, "is not a 1-D column");
  space.getSimpleExtentDims(&got);
  if (got != n) {
    throw Error(path, 0, name,
                "has " + std::to_string(got) + " elements, expected " + std::to_string(n));
  }
  const size_t width = type.getSize();
  if (width == 0 || width > (1u << 20)) throw Error(path, 0, name, "implausible string width");
  std::string packed(width * n, '\0');
  if (n > 0) ds.read(packed.data(), type);
  std::vector<std::string> out(n);
  for (size_t i = 0; i < n; ++i) {
    std::string s = packed.substr(i * width, width);
    s.resize(std::min(s.size(), s.find('\0')));
    while (!s.empty() && s.back() == ' ')
      s.pop_back();
    out[i] = std::move(s);
  }
  return out;
}

std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v)
    s.append(s.empty() ? "" : "\n").append(x);
  return s;
}

std::vector<std::string> split_lines(const std::string& s, bool keep_empty) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string line; std::getline(ss, line);) {
    if (keep_empty || !line.empty()) out.push_back(line);
  }
  return out;
}

void write_attr(H5::H5Object& o, const std::string& name, const std::string& text) {
  const std::string value = text.substr(0, 32768);
  H5::StrType type(H5::PredType::C_S1, std::max<size_t>(1, value.size()));
  H5::Attribute a = o.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  a.write(type, value.empty() ? std::string(" ") : value);
}

void write_attr(H5::H5Object& o, const std::string& name, int64_t value) {
  H5::Attribute a = o.createAttribute(name, H5::PredType::NATIVE_INT64, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_INT64, &value);
}

void write_attr(H5::H5Object& o, const std::string& name, double value) {
  H5::Attribute a = o.createAttribute(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_DOUBLE, &value);
}

namespace {

// Attributes servesim reads hold one value: an array (h5py writes one from a list) would be read
// into a one-element buffer.
void check_one_value(const H5::Attribute& a, const std::string& path, const std::string& name) {
  const H5::DataSpace space = a.getSpace();
  if (space.getSimpleExtentNpoints() != 1) {
    throw Error(path, 0, name,
                "must be a single value, not an array of " +
                    std::to_string(space.getSimpleExtentNpoints()));
  }
}

}  // namespace

std::string read_string_attr(H5::H5Object& o, const std::string& name) {
  H5::Attribute a = o.openAttribute(name);
  if (a.getTypeClass() != H5T_STRING) throw Error(o.getFileName(), 0, name, "must be a string");
  check_one_value(a, o.getFileName(), name);
  H5::StrType type = a.getStrType();
  std::string s;
  a.read(type, s);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' '))
    s.pop_back();
  return s;
}

int64_t read_int_attr(H5::H5Object& o, const std::string& path, const std::string& name) {
  if (!o.attrExists(name)) throw Error(path, 0, name, "missing attribute");
  H5::Attribute a = o.openAttribute(name);
  if (a.getTypeClass() != H5T_INTEGER) throw Error(path, 0, name, "must be an integer");
  check_one_value(a, path, name);
  int64_t v = 0;
  a.read(H5::PredType::NATIVE_INT64, &v);
  return v;
}

void write_file_atomically(const std::string& path, const std::function<void(H5::H5File&)>& write) {
  H5::Exception::dontPrint();
  output_target(path);  // refuse a directory, device or unwritable folder before any work
  // The file is built in memory (the core driver, no backing store) and written by
  // write_output_file: HDF5 never meets a full disk (its error path crashed in H5Fclose on
  // ENOSPC), and every write error carries its errno and path.
  std::string image;
  try {
    H5::FileAccPropList fapl;
    H5Pset_fapl_core(fapl.getId(), size_t(1) << 20, /*backing_store=*/false);
    static std::atomic<uint64_t> counter{0};
    H5::H5File f("servesim-image-" + std::to_string(counter++), H5F_ACC_TRUNC,
                 H5::FileCreatPropList::DEFAULT, fapl);
    write(f);
    f.flush(H5F_SCOPE_GLOBAL);
    const ssize_t size = H5Fget_file_image(f.getId(), nullptr, 0);
    if (size < 0) throw H5::FileIException("H5Fget_file_image", "cannot size the file image");
    image.resize(size_t(size));
    if (H5Fget_file_image(f.getId(), image.data(), image.size()) != size) {
      throw H5::FileIException("H5Fget_file_image", "cannot copy the file image");
    }
    f.close();
  } catch (const H5::Exception& e) {
    throw Error(path, 0, "", "cannot build the HDF5 file: " + e.getDetailMsg());
  }
  write_output_file(path, image);
}

H5::H5File open_checked(const std::string& path, const char* magic, int64_t version,
                        const char* what) {
  H5::Exception::dontPrint();
  if (const std::string problem = input_file_problem(path); !problem.empty()) {
    throw Error(path, 0, "", problem);
  }
  if (!H5::H5File::isHdf5(path.c_str())) throw Error(path, 0, "", "not an HDF5 file");
  H5::H5File f(path, H5F_ACC_RDONLY);
  if (!f.attrExists("magic") || read_string_attr(f, "magic") != magic) {
    throw Error(path, 0, "magic", std::string("an HDF5 file, but not a servesim ") + what);
  }
  const int64_t v = read_int_attr(f, path, "version");
  if (v != version) {
    throw Error(path, 0, "version",
                std::string(what) + " version " + std::to_string(v) +
                    " is not supported (this servesim reads " + std::to_string(version) + ")");
  }
  return f;
}

}  // namespace servesim::h5
