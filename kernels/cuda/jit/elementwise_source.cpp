#include "kernels/cuda/jit/elementwise_source.h"

#include <c10/util/Exception.h>

namespace gpuaug::jit {
namespace {

const char* layout_suffix(Layout layout) {
  switch (layout) {
    case Layout::kVectorized: return "vectorized";
    case Layout::kContiguous: return "contiguous";
    case Layout::kStrided32: return "strided32";
    case Layout::kStrided64: return "strided64";
  }
  return "";
}

// The storage type, the compute type and the conversions between them. The half types convert
// with PTX instructions (sm_80 has both), so the source needs no header and compiles fast.
std::string dtype_prelude(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return "typedef float gpuaug_scalar_t;\ntypedef float opmath_t;\n"
             "__forceinline__ float gpuaug_to_opmath(float v) { return v; }\n"
             "__forceinline__ float gpuaug_from_opmath(float v) { return v; }\n";
    case at::kDouble:
      return "typedef double gpuaug_scalar_t;\ntypedef double opmath_t;\n"
             "__forceinline__ double gpuaug_to_opmath(double v) { return v; }\n"
             "__forceinline__ double gpuaug_from_opmath(double v) { return v; }\n";
    case at::kHalf:
      return "typedef unsigned short gpuaug_scalar_t;\ntypedef float opmath_t;\n"
             "__forceinline__ float gpuaug_to_opmath(unsigned short v) {\n"
             "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(v)); return f;\n}\n"
             "__forceinline__ unsigned short gpuaug_from_opmath(float v) {\n"
             "  unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(v)); return h;\n}\n";
    case at::kBFloat16:
      return "typedef unsigned short gpuaug_scalar_t;\ntypedef float opmath_t;\n"
             "__forceinline__ float gpuaug_to_opmath(unsigned short v) { return __uint_as_float(unsigned(v) << 16); }\n"
             "__forceinline__ unsigned short gpuaug_from_opmath(float v) {\n"
             "  unsigned short h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(v)); return h;\n}\n";
    default:
      TORCH_CHECK(false, "gpuaug.jit: no element-wise kernels for ", c10::toString(dtype));
  }
}

// The expressions as a function of the inputs, in compute type, each on lines of its own so that
// NVRTC's log points at it. Everything else the source defines is named gpuaug_* (or
// opmath_t), which no input name may be.
std::string apply_function(const ElementwiseSpec& spec) {
  std::string s = "__forceinline__ void gpuaug_apply(";
  for (const auto& input : spec.inputs) s += "const opmath_t " + input + ", ";
  for (size_t o = 0; o < spec.outputs.size(); ++o) {
    s += "opmath_t& gpuaug_out" + std::to_string(o) + (o + 1 < spec.outputs.size() ? ", " : ") {\n");
  }
  for (size_t o = 0; o < spec.outputs.size(); ++o) {
    s += "  gpuaug_out" + std::to_string(o) + " = static_cast<opmath_t>(\n" + spec.outputs[o] + "\n  );\n";
  }
  return s + "}\n";
}

// The kernels are written out without loops over operands, vector lanes or unrolled steps
// (only over dimensions): with NVRTC's fast-compile level, which does not unroll, a loop over a
// local array would keep that array in local memory instead of registers.
struct Writer {
  const ElementwiseSpec& spec;
  size_t num_in() const { return spec.inputs.size(); }
  size_t num_out() const { return spec.outputs.size(); }
  size_t operands() const { return num_in() + num_out(); }

  // "opmath_t r_0, r_1; gpuaug_apply(in(0), in(1), r_0, r_1);" then store(o, "r_o") for each.
  template <typename In, typename Store>
  std::string apply(const std::string& indent, In in, Store store) const {
    std::string s = indent + "{\n" + indent + "  opmath_t";
    for (size_t o = 0; o < num_out(); ++o) s += (o ? ", r" : " r") + std::to_string(o);
    s += ";\n" + indent + "  gpuaug_apply(";
    for (size_t a = 0; a < num_in(); ++a) s += in(a) + ", ";
    for (size_t o = 0; o < num_out(); ++o) s += "r" + std::to_string(o) + (o + 1 < num_out() ? ", " : ");\n");
    for (size_t o = 0; o < num_out(); ++o) s += indent + "  " + store(o, "r" + std::to_string(o)) + "\n";
    return s + indent + "}\n";
  }

  static std::string operand(size_t i) { return "ptr.p[" + std::to_string(i) + "]"; }

  // Contiguous operands: a full block takes kFlatVectors 16-byte vectors per thread and input
  // (1-element "vectors" when some pointer is not aligned), all loads before any store; the last,
  // partial block goes element by element.
  std::string flat(const std::string& name, int width) const {
    const std::string W = std::to_string(width), block = std::to_string(kFlatVectors * kThreads * width);
    std::string s = "struct alignas(sizeof(gpuaug_scalar_t) * " + W + ") gpuaug_vec { gpuaug_scalar_t v[" + W + "]; };\n";
    s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + name +
         "(long long n, gpuaug_pointers ptr) {\n";
    s += "  const long long first = (long long)blockIdx.x * " + block + ";\n";
    s += "  if (first + " + block + " <= n) {\n";
    auto offset = [&](int j) {
      return "(first + (long long)(" + std::to_string(j * kThreads) + " + threadIdx.x) * " + W +
             ") * sizeof(gpuaug_scalar_t)";
    };
    for (int j = 0; j < kFlatVectors; ++j) {
      for (size_t a = 0; a < num_in(); ++a) {
        s += "    const gpuaug_vec x" + std::to_string(j) + "_" + std::to_string(a) +
             " = *reinterpret_cast<const gpuaug_vec*>(" + operand(num_out() + a) + " + " + offset(j) + ");\n";
      }
    }
    for (int j = 0; j < kFlatVectors; ++j) {
      const std::string J = std::to_string(j);
      s += "    {\n      gpuaug_vec";
      for (size_t o = 0; o < num_out(); ++o) s += (o ? ", y" : " y") + std::to_string(o);
      s += ";\n";
      for (int k = 0; k < width; ++k) {
        const std::string K = std::to_string(k);
        s += apply("      ",
                   [&](size_t a) { return "gpuaug_to_opmath(x" + J + "_" + std::to_string(a) + ".v[" + K + "])"; },
                   [&](size_t o, const std::string& r) { return "y" + std::to_string(o) + ".v[" + K + "] = gpuaug_from_opmath(" + r + ");"; });
      }
      for (size_t o = 0; o < num_out(); ++o) {
        s += "      *reinterpret_cast<gpuaug_vec*>(" + operand(o) + " + " + offset(j) + ") = y" + std::to_string(o) + ";\n";
      }
      s += "    }\n";
    }
    s += "  } else {\n";
    s += "    for (long long i = first + threadIdx.x; i < n; i += " + std::to_string(kThreads) + ")\n";
    s += apply("    ",
               [&](size_t a) { return "gpuaug_to_opmath(reinterpret_cast<const gpuaug_scalar_t*>(" + operand(num_out() + a) + ")[i])"; },
               [&](size_t o, const std::string& r) { return "reinterpret_cast<gpuaug_scalar_t*>(" + operand(o) + ")[i] = gpuaug_from_opmath(" + r + ");"; });
    return s + "  }\n}\n";
  }

  // Offsets o<u>_<operand> of a linear index, dimension 0 fastest: 32-bit with multiply-high
  // divisions (Granlund and Montgomery), or 64-bit with real ones.
  std::string offsets(const std::string& indent, const std::string& u, bool wide) const {
    const std::string type = wide ? "long long" : "unsigned";
    std::string s;
    s += indent + type + " rest = linear" + u + ";\n";
    s += indent + "for (int d = 0; d < (int)layout.ndim; ++d) {\n";
    if (wide) {
      s += indent + "  const long long index = rest % layout.sizes[d];\n";
      s += indent + "  rest /= layout.sizes[d];\n";
    } else {
      s += indent + "  const unsigned next = (__umulhi(rest, layout.divider[d][1]) + rest) >> layout.divider[d][2];\n";
      s += indent + "  const unsigned index = rest - next * layout.divider[d][0];\n";
      s += indent + "  rest = next;\n";
    }
    for (size_t a = 0; a < operands(); ++a) {
      const std::string A = std::to_string(a);
      s += indent + "  o" + u + "_" + A + " += index * layout.strides[d][" + A + "];\n";
    }
    return s + indent + "}\n";
  }

  std::string declare_offsets(const std::string& indent, const std::string& type, const std::string& u) const {
    std::string s = indent + type;
    for (size_t a = 0; a < operands(); ++a) s += (a ? ", o" : " o") + u + "_" + std::to_string(a) + " = 0";
    return s + ";\n";
  }

  std::string load(const std::string& u, size_t a) const {
    return "gpuaug_to_opmath(*reinterpret_cast<const gpuaug_scalar_t*>(" + operand(num_out() + a) +
           " + o" + u + "_" + std::to_string(num_out() + a) + "))";
  }

  std::string store(const std::string& u, size_t o, const std::string& r) const {
    return "*reinterpret_cast<gpuaug_scalar_t*>(" + operand(o) + " + o" + u + "_" + std::to_string(o) +
           ") = gpuaug_from_opmath(" + r + ");";
  }

  std::string layout_struct(bool wide) const {
    const std::string M = std::to_string(operands()), D = std::to_string(kMaxDims);
    if (wide) {
      return "struct gpuaug_layout { long long ndim; long long sizes[" + D + "]; long long strides[" + D + "][" + M + "]; };\n";
    }
    // divider: divisor, magic, shift
    return "struct gpuaug_layout { unsigned ndim; unsigned divider[" + D + "][3]; unsigned strides[" + D + "][" + M + "]; };\n";
  }

  // Any strides, 32-bit offsets, kStridedUnroll elements per thread: every load before any store.
  std::string strided32(const std::string& name) const {
    std::string s = layout_struct(false);
    s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + name +
         "(unsigned n, gpuaug_pointers ptr, const __grid_constant__ gpuaug_layout layout) {\n";
    s += "  const unsigned first = blockIdx.x * " + std::to_string(kThreads * kStridedUnroll) + " + threadIdx.x;\n";
    for (int u = 0; u < kStridedUnroll; ++u) {
      const std::string U = std::to_string(u);
      s += "  const unsigned linear" + U + " = first + " + std::to_string(u * kThreads) + ";\n";
      s += declare_offsets("  ", "unsigned", U);
      s += "  opmath_t";
      for (size_t a = 0; a < num_in(); ++a) s += (a ? ", v" : " v") + U + "_" + std::to_string(a) + " = 0";
      s += ";\n  if (linear" + U + " < n) {\n" + offsets("    ", U, false);
      for (size_t a = 0; a < num_in(); ++a) s += "    v" + U + "_" + std::to_string(a) + " = " + load(U, a) + ";\n";
      s += "  }\n";
    }
    for (int u = 0; u < kStridedUnroll; ++u) {
      const std::string U = std::to_string(u);
      s += "  if (linear" + U + " < n)\n";
      s += apply("  ", [&](size_t a) { return "v" + U + "_" + std::to_string(a); },
                 [&](size_t o, const std::string& r) { return store(U, o, r); });
    }
    return s + "}\n";
  }

  // Any strides and sizes: 64-bit offsets, a grid-stride loop.
  std::string strided64(const std::string& name) const {
    std::string s = layout_struct(true);
    s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + name +
         "(long long n, gpuaug_pointers ptr, const __grid_constant__ gpuaug_layout layout) {\n";
    s += "  for (long long linear = (long long)blockIdx.x * " + std::to_string(kThreads) +
         " + threadIdx.x; linear < n; linear += (long long)gridDim.x * " + std::to_string(kThreads) + ") {\n";
    s += declare_offsets("    ", "long long", "");
    s += offsets("    ", "", true);
    s += apply("    ", [&](size_t a) { return load("", a); },
               [&](size_t o, const std::string& r) { return store("", o, r); });
    return s + "  }\n}\n";
  }
};

}  // namespace

std::string kernel_name(const ElementwiseSpec& spec, Layout layout) {
  return "gpuaug_" + spec.name + "_" + layout_suffix(layout);
}

std::string elementwise_source(const ElementwiseSpec& spec, at::ScalarType dtype, Layout layout) {
  std::string s = "// gpuaug.jit element-wise kernel '" + spec.name + "', " +
                  c10::toString(dtype) + ", " + layout_suffix(layout) + "\n";
  s += dtype_prelude(dtype);
  s += "struct gpuaug_pointers { char* p[" + std::to_string(spec.inputs.size() + spec.outputs.size()) +
       "]; };  // outputs, then inputs\n";
  s += apply_function(spec);
  const Writer writer{spec};
  const std::string name = kernel_name(spec, layout);
  switch (layout) {
    case Layout::kVectorized: return s + writer.flat(name, 16 / static_cast<int>(c10::elementSize(dtype)));
    case Layout::kContiguous: return s + writer.flat(name, 1);
    case Layout::kStrided32: return s + writer.strided32(name);
    case Layout::kStrided64: return s + writer.strided64(name);
  }
  return s;
}

}  // namespace gpuaug::jit
