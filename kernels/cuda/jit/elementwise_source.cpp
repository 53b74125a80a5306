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

// The expressions, in compute type, each on lines of its own so that NVRTC's log points at it.
// Everything else the source defines is named gpuaug_* or GPUAUG_*, which no input name may be.
std::string apply_function(const ElementwiseSpec& spec) {
  std::string s = "__forceinline__ void gpuaug_apply(const opmath_t (&gpuaug_in)[GPUAUG_NUM_IN], opmath_t (&gpuaug_out)[GPUAUG_NUM_OUT]) {\n";
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    s += "  const opmath_t " + spec.inputs[i] + " = gpuaug_in[" + std::to_string(i) + "];\n";
  }
  for (size_t o = 0; o < spec.outputs.size(); ++o) {
    s += "  gpuaug_out[" + std::to_string(o) + "] = static_cast<opmath_t>(\n" + spec.outputs[o] + "\n  );\n";
  }
  return s + "}\n";
}

// Contiguous operands: a full block takes kUnroll 16-byte vectors per thread and input (1-element
// "vectors" when some pointer is not aligned), all loads in flight before any store; the last,
// partial block goes element by element (a separate path keeps the unrolled one free of bounds
// checks, and the source small, which is most of the compile time).
const char* kFlatKernel = R"(
struct alignas(sizeof(gpuaug_scalar_t) * GPUAUG_WIDTH) gpuaug_vec { gpuaug_scalar_t v[GPUAUG_WIDTH]; };
extern "C" __global__ void __launch_bounds__(GPUAUG_THREADS) GPUAUG_KERNEL(long long n, gpuaug_pointers ptr) {
  const long long block_first = (long long)blockIdx.x * GPUAUG_UNROLL * GPUAUG_THREADS * GPUAUG_WIDTH;
  if (block_first + GPUAUG_UNROLL * GPUAUG_THREADS * GPUAUG_WIDTH <= n) {
    gpuaug_vec x[GPUAUG_UNROLL][GPUAUG_NUM_IN];
#pragma unroll
    for (int j = 0; j < GPUAUG_UNROLL; ++j) {
      const long long i = block_first + (long long)(j * GPUAUG_THREADS + threadIdx.x) * GPUAUG_WIDTH;
#pragma unroll
      for (int a = 0; a < GPUAUG_NUM_IN; ++a) {
        x[j][a] = *reinterpret_cast<const gpuaug_vec*>(ptr.p[GPUAUG_NUM_OUT + a] + i * sizeof(gpuaug_scalar_t));
      }
    }
#pragma unroll
    for (int j = 0; j < GPUAUG_UNROLL; ++j) {
      const long long i = block_first + (long long)(j * GPUAUG_THREADS + threadIdx.x) * GPUAUG_WIDTH;
      gpuaug_vec y[GPUAUG_NUM_OUT];
#pragma unroll
      for (int k = 0; k < GPUAUG_WIDTH; ++k) {
        opmath_t in[GPUAUG_NUM_IN], out[GPUAUG_NUM_OUT];
#pragma unroll
        for (int a = 0; a < GPUAUG_NUM_IN; ++a) in[a] = gpuaug_to_opmath(x[j][a].v[k]);
        gpuaug_apply(in, out);
#pragma unroll
        for (int o = 0; o < GPUAUG_NUM_OUT; ++o) y[o].v[k] = gpuaug_from_opmath(out[o]);
      }
#pragma unroll
      for (int o = 0; o < GPUAUG_NUM_OUT; ++o) {
        *reinterpret_cast<gpuaug_vec*>(ptr.p[o] + i * sizeof(gpuaug_scalar_t)) = y[o];
      }
    }
  } else {
    for (long long i = block_first + threadIdx.x; i < n; i += GPUAUG_THREADS) {
      opmath_t in[GPUAUG_NUM_IN], out[GPUAUG_NUM_OUT];
#pragma unroll
      for (int a = 0; a < GPUAUG_NUM_IN; ++a) {
        in[a] = gpuaug_to_opmath(reinterpret_cast<const gpuaug_scalar_t*>(ptr.p[GPUAUG_NUM_OUT + a])[i]);
      }
      gpuaug_apply(in, out);
#pragma unroll
      for (int o = 0; o < GPUAUG_NUM_OUT; ++o) reinterpret_cast<gpuaug_scalar_t*>(ptr.p[o])[i] = gpuaug_from_opmath(out[o]);
    }
  }
}
)";

// Any strides, 32-bit offsets: multiply-high divisions (Granlund and Montgomery) split the linear
// index; kUnroll elements in flight per thread. Layout32 is what the host packs, word for word.
const char* kStrided32Kernel = R"(
struct gpuaug_layout32 {
  unsigned ndim;
  unsigned divider[GPUAUG_MAX_DIMS][3];  // divisor, magic, shift
  unsigned strides[GPUAUG_MAX_DIMS][GPUAUG_NUM_OUT + GPUAUG_NUM_IN];  // bytes
};
extern "C" __global__ void __launch_bounds__(GPUAUG_THREADS)
GPUAUG_KERNEL(unsigned n, gpuaug_pointers ptr, const __grid_constant__ gpuaug_layout32 layout) {
  opmath_t in[GPUAUG_UNROLL][GPUAUG_NUM_IN];
  unsigned out_offset[GPUAUG_UNROLL][GPUAUG_NUM_OUT];
  const unsigned first = blockIdx.x * GPUAUG_THREADS * GPUAUG_UNROLL + threadIdx.x;
#pragma unroll
  for (int u = 0; u < GPUAUG_UNROLL; ++u) {
    unsigned rest = first + u * GPUAUG_THREADS;
    if (rest >= n) break;
    unsigned offset[GPUAUG_NUM_OUT + GPUAUG_NUM_IN] = {};
    for (unsigned d = 0; d < layout.ndim; ++d) {
      const unsigned next = (__umulhi(rest, layout.divider[d][1]) + rest) >> layout.divider[d][2];
      const unsigned index = rest - next * layout.divider[d][0];
      rest = next;
#pragma unroll
      for (int a = 0; a < GPUAUG_NUM_OUT + GPUAUG_NUM_IN; ++a) offset[a] += index * layout.strides[d][a];
    }
#pragma unroll
    for (int o = 0; o < GPUAUG_NUM_OUT; ++o) out_offset[u][o] = offset[o];
#pragma unroll
    for (int a = 0; a < GPUAUG_NUM_IN; ++a) {
      in[u][a] = gpuaug_to_opmath(*reinterpret_cast<const gpuaug_scalar_t*>(ptr.p[GPUAUG_NUM_OUT + a] + offset[GPUAUG_NUM_OUT + a]));
    }
  }
#pragma unroll
  for (int u = 0; u < GPUAUG_UNROLL; ++u) {
    if (first + u * GPUAUG_THREADS >= n) break;
    opmath_t out[GPUAUG_NUM_OUT];
    gpuaug_apply(in[u], out);
#pragma unroll
    for (int o = 0; o < GPUAUG_NUM_OUT; ++o) {
      *reinterpret_cast<gpuaug_scalar_t*>(ptr.p[o] + out_offset[u][o]) = gpuaug_from_opmath(out[o]);
    }
  }
}
)";

// Any strides and sizes: 64-bit offsets, a grid-stride loop.
const char* kStrided64Kernel = R"(
struct gpuaug_layout64 {
  long long ndim;
  long long sizes[GPUAUG_MAX_DIMS];
  long long strides[GPUAUG_MAX_DIMS][GPUAUG_NUM_OUT + GPUAUG_NUM_IN];  // bytes
};
extern "C" __global__ void __launch_bounds__(GPUAUG_THREADS)
GPUAUG_KERNEL(long long n, gpuaug_pointers ptr, const __grid_constant__ gpuaug_layout64 layout) {
  for (long long linear = (long long)blockIdx.x * GPUAUG_THREADS + threadIdx.x; linear < n;
       linear += (long long)gridDim.x * GPUAUG_THREADS) {
    long long offset[GPUAUG_NUM_OUT + GPUAUG_NUM_IN] = {};
    long long rest = linear;
    for (int d = 0; d < layout.ndim; ++d) {
      const long long index = rest % layout.sizes[d];
      rest /= layout.sizes[d];
#pragma unroll
      for (int a = 0; a < GPUAUG_NUM_OUT + GPUAUG_NUM_IN; ++a) offset[a] += index * layout.strides[d][a];
    }
    opmath_t in[GPUAUG_NUM_IN], out[GPUAUG_NUM_OUT];
#pragma unroll
    for (int a = 0; a < GPUAUG_NUM_IN; ++a) {
      in[a] = gpuaug_to_opmath(*reinterpret_cast<const gpuaug_scalar_t*>(ptr.p[GPUAUG_NUM_OUT + a] + offset[GPUAUG_NUM_OUT + a]));
    }
    gpuaug_apply(in, out);
#pragma unroll
    for (int o = 0; o < GPUAUG_NUM_OUT; ++o) {
      *reinterpret_cast<gpuaug_scalar_t*>(ptr.p[o] + offset[o]) = gpuaug_from_opmath(out[o]);
    }
  }
}
)";

std::string define(const char* name, const std::string& value) {
  return std::string("#define ") + name + " " + value + "\n";
}

}  // namespace

std::string kernel_name(const ElementwiseSpec& spec, Layout layout) {
  return "gpuaug_" + spec.name + "_" + layout_suffix(layout);
}

std::string elementwise_source(const ElementwiseSpec& spec, at::ScalarType dtype, Layout layout) {
  const size_t element_size = c10::elementSize(dtype);
  std::string s = "// gpuaug.jit element-wise kernel '" + spec.name + "', " +
                  c10::toString(dtype) + ", " + layout_suffix(layout) + "\n";
  s += define("GPUAUG_KERNEL", kernel_name(spec, layout));
  s += define("GPUAUG_NUM_IN", std::to_string(spec.inputs.size()));
  s += define("GPUAUG_NUM_OUT", std::to_string(spec.outputs.size()));
  s += define("GPUAUG_THREADS", std::to_string(kThreads));
  s += define("GPUAUG_UNROLL", std::to_string(kUnroll));
  s += define("GPUAUG_MAX_DIMS", std::to_string(kMaxDims));
  s += define("GPUAUG_WIDTH", layout == Layout::kVectorized ? std::to_string(16 / element_size) : "1");
  s += dtype_prelude(dtype);
  s += "struct gpuaug_pointers { char* p[GPUAUG_NUM_OUT + GPUAUG_NUM_IN]; };\n";
  s += apply_function(spec);
  switch (layout) {
    case Layout::kVectorized:
    case Layout::kContiguous: return s + kFlatKernel;
    case Layout::kStrided32: return s + kStrided32Kernel;
    case Layout::kStrided64: return s + kStrided64Kernel;
  }
  return s;
}

}  // namespace gpuaug::jit
