// gpuaug::augment on the GPU. Each block takes a tile of one sample's output (a band of rows, up
// to kTileWidth columns): it decodes its sample's program into shared memory (photometric.cu's
// block helpers), tabulates the resize taps of its tile's rows and columns there and, where they
// read few image rows, resizes those horizontally there too. Its threads then take the tile's
// pixels one at a time through the geometric front (kernels/augment/pixel.h's arithmetic, from
// those tables) into shared memory, and last take runs of a row's pixels from there through the
// program, the conversion and vector stores: the two phases apart, each with the registers it
// needs, so that several blocks share an SM. With a reduction stage a first pass writes each block's
// statistics of its pixels at that step, which the second combines per sample in a fixed order,
// and its tile's front, which the second reads instead of computing it again.
// The images travel as a table in the kernels' parameters (up to kTableSources per launch; a list
// of more takes a launch per that many): no copy of pointers to the GPU, which a CUDA graph could
// not replay. The adjoint adds each output pixel's gradient to its source pixels' with atomics.
// Built with --fmad=false, as photometric.cu: the program rounds as torchvision's.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>

#include "kernels/augment/augment.h"
#include "kernels/augment/pixel.h"
#include "kernels/augment/warp.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/photometric/cuda/block.cuh"
#include "kernels/photometric/photometric.h"
#include "kernels/photometric/program.h"
#include "kernels/photometric/stages.h"

namespace gpuaug::cuda::augment_impl {
namespace {

using namespace gpuaug::geo;
using namespace gpuaug::photo;
namespace block = gpuaug::cuda::photometric_impl;

// 256 sources of 72 bytes: 18 KiB of the 32 KiB a kernel's parameters may take (sm_70 and newer,
// CUDA 12.1 and newer).
constexpr int kTableSources = 256;

struct SourceTable {
  int count;
  Source sources[kTableSources];
};

// The table's source that holds sample s.
__device__ __forceinline__ const Source& source_of(const SourceTable& table, int64_t s) {
  int lo = 0, hi = table.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (table.sources[mid].first_sample <= s) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return table.sources[lo];
}

// Each sample's blocks take tiles of its output: bands of tile_rows rows, each in column_chunks
// chunks of tile_columns (see tile_of below).
struct Launch {
  int64_t first_sample;       // the launch's first
  int64_t blocks_per_sample;  // every pass's: bands times column_chunks
  int64_t tile_rows, tile_columns, column_chunks;
};

struct OutputLayout {
  int64_t sample, channel, row, column;  // strides in elements
  int dtype;                             // an at::ScalarType
};

template <typename P>
struct Fill {
  P v[3];
};

// Each thread takes runs of kRun consecutive output pixels of a row at a time. With V = kRun the
// program runs on them together (its branches once a run) and the output takes them in vector
// stores: for the training pipelines' case (uint8 and float32 RGB images, programs of jitter
// kinds alone: ColorJitter, RandomPhotometricDistort, none). Else (V = 1) they go through it one
// by one: each pixel of a run is the program's code again, and the library's build time bounds
// that.
constexpr int kRun = 4;

// Stores n consecutive values at p in the widest stores p's alignment allows.
template <int N, typename E>
__device__ __forceinline__ void store_run(E* p, const E (&v)[N]) {
  constexpr int kBytes = N * static_cast<int>(sizeof(E));
  const auto address = reinterpret_cast<uintptr_t>(p);
  if constexpr (kBytes % 16 == 0) {
    if (address % 16 == 0) {
      GPUAUG_UNROLL
      for (int i = 0; i < kBytes / 16; ++i) {
        reinterpret_cast<uint4*>(p)[i] = reinterpret_cast<const uint4*>(v)[i];
      }
      return;
    }
  }
  if constexpr (kBytes % 8 == 0) {
    if (address % 8 == 0) {
      GPUAUG_UNROLL
      for (int i = 0; i < kBytes / 8; ++i) {
        reinterpret_cast<uint2*>(p)[i] = reinterpret_cast<const uint2*>(v)[i];
      }
      return;
    }
  }
  if constexpr (kBytes % 4 == 0) {
    if (address % 4 == 0) {
      GPUAUG_UNROLL
      for (int i = 0; i < kBytes / 4; ++i) {
        reinterpret_cast<uint32_t*>(p)[i] = reinterpret_cast<const uint32_t*>(v)[i];
      }
      return;
    }
  }
  GPUAUG_UNROLL
  for (int i = 0; i < N; ++i) p[i] = v[i];
}

// Output pixels x0..x0+n-1 of row y: planar rows or interleaved pixels in runs, else one by one.
template <int C, int V, typename out_t>
__device__ __forceinline__ void store_pixels(out_t* sample_out, const OutputLayout& layout,
                                             int64_t y, int64_t x0, int n,
                                             const out_t (&v)[V][3]) {
  out_t* first = sample_out + y * layout.row + x0 * layout.column;
  if constexpr (V > 1) {
    if (n == V && layout.column == 1) {
      GPUAUG_UNROLL
      for (int c = 0; c < C; ++c) {
        out_t plane[V];
        GPUAUG_UNROLL
        for (int j = 0; j < V; ++j) plane[j] = v[j][c];
        store_run(first + c * layout.channel, plane);
      }
      return;
    }
    if (n == V && layout.channel == 1 && layout.column == C) {
      out_t pixels[V * C];
      GPUAUG_UNROLL
      for (int j = 0; j < V; ++j) {
        GPUAUG_UNROLL
        for (int c = 0; c < C; ++c) pixels[j * C + c] = v[j][c];
      }
      store_run(first, pixels);
      return;
    }
  }
  for (int j = 0; j < n; ++j) {
    GPUAUG_UNROLL
    for (int c = 0; c < C; ++c) first[j * layout.column + c * layout.channel] = v[j][c];
  }
}

C10_HOST_DEVICE constexpr int code(at::ScalarType t) { return static_cast<int>(t); }

// The run's values (after the program) converted to the output's dtype and stored: a switch
// at run time rather than a kernel per output dtype, which would multiply the build.
template <int C, typename T, int V, typename P>
__device__ __forceinline__ void convert_store(void* out, const OutputLayout& layout,
                                              const Output<P>& o, int64_t s, int64_t y,
                                              int64_t x0, int n, const P (&x)[V][3]) {
  const auto as = [&](auto type) {
    using out_t = typename decltype(type)::type;
    out_t v[V][3];
    GPUAUG_UNROLL
    for (int j = 0; j < V; ++j) {
      GPUAUG_UNROLL
      for (int c = 0; c < C; ++c) v[j][c] = convert<T, out_t>(x[j][c], o, c);
    }
    store_pixels<C>(static_cast<out_t*>(out) + s * layout.sample, layout, y, x0, n, v);
  };
  if constexpr (kIsU8<T>) {  // uint8 images: to any floating dtype too (to_dtype)
    switch (layout.dtype) {
      case code(at::kFloat): return as(PhotometricType<float>{});
      case code(at::kHalf): return as(PhotometricType<at::Half>{});
      case code(at::kBFloat16): return as(PhotometricType<at::BFloat16>{});
      case code(at::kDouble): return as(PhotometricType<double>{});
      default: return as(PhotometricType<uint8_t>{});
    }
  } else {  // floating images: their own dtype or uint8
    if (layout.dtype == code(at::kByte)) return as(PhotometricType<uint8_t>{});
    return as(PhotometricType<T>{});
  }
}

// A block's output pixels: a tile of rows y0..y1-1 and columns x0..x1-1 of one sample. Its
// threads first tabulate the tile's columns' and rows' taps in shared memory (each resize axis's
// taps and weights once a block, not once a pixel). Where the tile's rows read few image rows
// (staged_rows), the block then resizes those rows horizontally into shared memory (each read
// once, not once for every output row that reads it) and each pixel sums its vertical taps from
// there; else each pixel reads its taps from the image. Both sum as geometric_pixel does, in its
// order (the same values). The front's values wait in shared memory (FrontTile) for the program.
constexpr int kTileWidth = 64;  // a multiple of kRun: runs start at the tile's columns
constexpr int kTableTaps = 6;  // an axis of more (downscales by more than 2.5): computed again
constexpr int kOutside = -1;   // an axis count: the output lies outside the resized image (fill)

// A tile's rows: uint8 tiles take twice the others' (each block's fixed work over more pixels),
// as their front's bytes allow within the 48 KiB of static shared memory a block may take.
template <typename T>
constexpr int kTileRows = sizeof(T) == 1 ? 32 : 16;

// The image rows a block stages (its rows' taps where they downscale by up to 1.25), and the
// fill's row after them (float64 images: none).
template <typename T, typename P>
constexpr int staged_rows = sizeof(P) == 4 ? kTileRows<T> * 5 / 4 + 2 : 0;

template <int Rows>
struct Tables {
  int column_count[kTileWidth];
  int32_t column_offset[kTableTaps][kTileWidth];  // ix * column_stride, or -1: fill
  float column_weight[kTableTaps][kTileWidth];
  int row_count[Rows];
  int32_t row_index[kTableTaps][Rows];  // iy, or -1: fill
  float row_weight[kTableTaps][Rows];
  int first_row, last_row;  // of the image rows the tile's rows read (none: first > last)
  int untabled;             // an axis has more taps than the tables hold
};

template <int C, typename T, typename P>
struct Staged {
  P v[staged_rows<T, P> + 1][C][kTileWidth];  // rows first_row..., then the fill's
};

// The front's values of a tile's pixels, as the image dtype holds them (exactly: held_as), for
// the program's phase to read in runs. Columns past the tile's, up to a whole run, hold zeros.
template <int C, typename T>
struct FrontTile {
  alignas(16) T v[C][kTileRows<T>][kTileWidth];
};

// kRun values of T read at once from a FrontTile (its rows and runs start aligned to this).
template <typename T>
struct alignas(sizeof(T) * kRun < 16 ? sizeof(T) * kRun : 16) FrontRun {
  T v[kRun];
};

struct Tile {
  int64_t y0, y1, x0, x1;
};

__device__ __forceinline__ Tile tile_of(const Launch& launch, const Settings& s, int64_t b) {
  const int64_t band = b / launch.column_chunks, chunk = b % launch.column_chunks;
  const int64_t y0 = band * launch.tile_rows, x0 = chunk * launch.tile_columns;
  return {y0, ::min(y0 + launch.tile_rows, s.out_height), x0,
          ::min(x0 + launch.tile_columns, s.out_width)};
}

// Entry i of `count`/`index`/`weight`: resized coordinate r's taps (kOutside where r lies outside
// 0..resized-1), each an image index times `stride` (-1 where constant padding gives the pixel).
template <int N>
__device__ __forceinline__ void tabulate_axis(int64_t r, int64_t window_start, int64_t window,
                                              bool flip, int64_t resized, int64_t size,
                                              int64_t stride, const Settings& s, int i,
                                              int (&count)[N], int32_t (&index)[kTableTaps][N],
                                              float (&weight)[kTableTaps][N], int& untabled) {
  if (r < 0 || r >= resized) {
    count[i] = kOutside;
    return;
  }
  const Axis a = axis_at(r, window, resized, s);
  count[i] = a.count;
  if (a.count > kTableTaps) atomicOr(&untabled, 1);
  GPUAUG_UNROLL  // constant indices keep the axis in registers (weight(j) reads its w[j])
  for (int j = 0; j < kTableTaps; ++j) {
    if (j >= a.count) break;
    const int64_t k = tap_index(a, j, window_start, flip, size, s.padding_mode);
    index[j][i] = k < 0 ? -1 : static_cast<int32_t>(k * stride);
    weight[j][i] = a.weight(j);
  }
}

// Fills the tables of `tile` (t.first_row, last_row and untabled set beforehand to none).
template <int Rows>
__device__ __forceinline__ void tabulate(Tables<Rows>& t, const Tile& tile, const Source& src,
                                         const SampleGeometry& g, const Settings& s) {
  const int columns = static_cast<int>(tile.x1 - tile.x0), rows = static_cast<int>(tile.y1 - tile.y0);
  // (a window of no pixels, which the op rejects where it can see the geometry: fill)
  const int64_t resized_width = g.height > 0 ? g.resized_width : 0;
  const int64_t resized_height = g.width > 0 ? g.resized_height : 0;
  for (int i = threadIdx.x; i < columns + rows; i += kThreads) {
    if (i < columns) {
      const int64_t x = tile.x0 + i;
      const int64_t rx = g.out_left + (g.out_hflip ? s.out_width - 1 - x : x);
      tabulate_axis(rx, g.left, g.width, g.window_hflip, resized_width, src.width,
                    src.column_stride, s, i, t.column_count, t.column_offset, t.column_weight,
                    t.untabled);
      continue;
    }
    const int r = i - columns;
    const int64_t y = tile.y0 + r;
    const int64_t ry = g.out_top + (g.out_vflip ? s.out_height - 1 - y : y);
    tabulate_axis(ry, g.top, g.height, g.window_vflip, resized_height, src.height, 1, s, r,
                  t.row_count, t.row_index, t.row_weight, t.untabled);
    for (int j = 0; j < kTableTaps && j < t.row_count[r]; ++j) {
      if (t.row_index[j][r] >= 0) {
        atomicMin(&t.first_row, t.row_index[j][r]);
        atomicMax(&t.last_row, t.row_index[j][r]);
      }
    }
  }
}

template <int Rows>
__device__ __forceinline__ int image_rows(const Tables<Rows>& t) {
  return t.last_row >= t.first_row ? t.last_row - t.first_row + 1 : 0;
}

// Image row `row` (or, at -1, the fill's) resized horizontally at tile column j: each tap's value
// times its weight, summed in order. The taps are unrolled so that a thread's loads are in flight
// together rather than one after another.
template <int C, typename T, typename P, int Rows>
__device__ __forceinline__ void row_sum(const Tables<Rows>& t, const T* image, const Source& src,
                                        const P (&fill)[3], int32_t row, int j, P (&sum)[C]) {
  const T* image_row = image + int64_t{row} * src.row_stride;
  const int count = t.column_count[j];
  P value[kTableTaps][C];
  GPUAUG_UNROLL
  for (int tx = 0; tx < kTableTaps; ++tx) {
    const int32_t column_offset = tx < count ? t.column_offset[tx][j] : -1;
    GPUAUG_UNROLL
    for (int c = 0; c < C; ++c) {
      value[tx][c] = row < 0 || column_offset < 0
                         ? fill[c]
                         : photo::load<P>(image_row[c * src.channel_stride + column_offset]);
    }
  }
  GPUAUG_UNROLL
  for (int c = 0; c < C; ++c) sum[c] = P(0);
  GPUAUG_UNROLL
  for (int tx = 0; tx < kTableTaps; ++tx) {
    if (tx < count) {
      const P wx = t.column_weight[tx][j];
      GPUAUG_UNROLL
      for (int c = 0; c < C; ++c) sum[c] += value[tx][c] * wx;
    }
  }
}

// The tile's image rows and the fill's row, resized horizontally, into `staged`.
template <int C, typename T, typename P, int Rows>
__device__ __forceinline__ void stage(Staged<C, T, P>& staged, const Tables<Rows>& t, int columns,
                                      const T* image, const Source& src, const P (&fill)[3]) {
  const int rows = image_rows(t);
  for (int k = threadIdx.x; k < (rows + 1) * columns; k += kThreads) {
    const int r = k / columns, j = k % columns;
    if (t.column_count[j] == kOutside) continue;
    P sum[C];
    row_sum<C, T, P>(t, image, src, fill, r < rows ? t.first_row + r : -1, j, sum);
    GPUAUG_UNROLL
    for (int c = 0; c < C; ++c) staged.v[r < rows ? r : staged_rows<T, P>][c][j] = sum[c];
  }
}

// Output pixel (tile row i, column j) through the geometric front, from the tables: from the
// staged rows where the block staged them, else from the image. The same sums, in the same
// order, as geometric_pixel.
template <int C, typename T, typename P, int Rows>
__device__ __forceinline__ void front_pixel(const Tables<Rows>& t, const Staged<C, T, P>& staged,
                                            bool is_staged, const T* image, const Source& src,
                                            const Settings& s, const P (&fill)[3], int i, int j,
                                            P (&v)[3]) {
  const int rows = t.row_count[i], columns = t.column_count[j];
  if (rows == kOutside || columns == kOutside) {
    GPUAUG_UNROLL
    for (int c = 0; c < C; ++c) v[c] = fill[c];
    return;
  }
  P acc[C];
  GPUAUG_UNROLL
  for (int c = 0; c < C; ++c) acc[c] = P(0);
  for (int ty = 0; ty < rows; ++ty) {
    const int32_t row = t.row_index[ty][i];
    P sum[C];
    if (is_staged) {
      const int r = row < 0 ? staged_rows<T, P> : row - t.first_row;
      GPUAUG_UNROLL
      for (int c = 0; c < C; ++c) sum[c] = staged.v[r][c][j];
    } else {
      row_sum<C, T, P>(t, image, src, fill, row, j, sum);
    }
    const P wy = t.row_weight[ty][i];
    GPUAUG_UNROLL
    for (int c = 0; c < C; ++c) acc[c] += (s.uint8_passes ? held_as<T, P>(sum[c]) : sum[c]) * wy;
  }
  GPUAUG_UNROLL
  for (int c = 0; c < C; ++c) v[c] = held_as<T, P>(acc[c]);
}

// Calls pixel(i, j, v) for each pixel of the tile, a pixel a thread at a time, and keeps its
// value in `front` (zeros past the tile's columns, to the end of their run).
template <int C, typename T, typename P, typename Pixel>
__device__ __forceinline__ void fill_front(FrontTile<C, T>& front, const Tile& tile,
                                           const Pixel& pixel) {
  const int columns = static_cast<int>(tile.x1 - tile.x0);
  const int padded = (columns + kRun - 1) / kRun * kRun;
  const int pixels = static_cast<int>(tile.y1 - tile.y0) * padded;
  for (int k = threadIdx.x; k < pixels; k += kThreads) {
    const int i = k / padded, j = k % padded;
    P v[3] = {P(0), P(0), P(0)};
    if (j < columns) pixel(i, j, v);
    GPUAUG_UNROLL
    for (int c = 0; c < C; ++c) front.v[c][i][j] = static_cast<T>(v[c]);
  }
}

// The front of a tile one of whose axes has more taps than the tables hold (a downscale by more
// than 2.5): each pixel as geometric_pixel computes it, out of line. The out-of-line fronts take
// scalars and pointers (into the kernel's __grid_constant__ parameters), not the kernel's local
// structures: an address of one would put it on every thread's stack, written at the kernel's
// start whichever front runs.
template <int C, typename T, typename P>
__device__ __noinline__ void untabled_front(FrontTile<C, T>& front, int64_t y0, int64_t y1,
                                            int64_t x0, int64_t x1, const T* image,
                                            const Source& src, const int64_t* geometry_row,
                                            const Settings& s, const Fill<P>& fill) {
  const Tile tile{y0, y1, x0, x1};
  const SampleGeometry g = sample_geometry(geometry_row);
  fill_front<C, T, P>(front, tile, [&](int i, int j, P (&v)[3]) {
    geometric_pixel<C, T, P>(image, src, g, s, fill.v, row_taps(src, g, s, tile.y0 + i),
                             tile.x0 + j, v);
  });
}

// The front of a warped sample's tile (its warp row `row`): each pixel as warped_pixel computes
// it, out of line (the warp's registers stay out of the kernel's).
template <int C, typename T, typename P>
__device__ __noinline__ void warped_front(FrontTile<C, T>& front, int64_t y0, int64_t y1,
                                          int64_t x0, int64_t x1, const T* image,
                                          const Source& src, const int64_t* geometry_row,
                                          const Settings& s, const Fill<P>& fill,
                                          const double* row) {
  const Tile tile{y0, y1, x0, x1};
  const SampleGeometry g = sample_geometry(geometry_row);
  fill_front<C, T, P>(front, tile, [&](int i, int j, P (&v)[3]) {
    warped_pixel<C, T, P>(image, src, g, s, fill.v, row, tile.y0 + i, tile.x0 + j, v);
  });
}

// The pixels of tile row i from column j0 (V of them) as the program takes them.
template <int C, typename T, int V, typename P>
__device__ __forceinline__ void front_run(const FrontTile<C, T>& front, int i, int j0,
                                          P (&x)[V][3]) {
  GPUAUG_UNROLL
  for (int c = 0; c < 3; ++c) {
    if (c >= C) {
      GPUAUG_UNROLL
      for (int k = 0; k < V; ++k) x[k][c] = P(0);
      continue;
    }
    if constexpr (V == kRun) {
      const FrontRun<T> run = *reinterpret_cast<const FrontRun<T>*>(&front.v[c][i][j0]);
      GPUAUG_UNROLL
      for (int k = 0; k < V; ++k) x[k][c] = photo::load<P>(run.v[k]);
    } else {
      GPUAUG_UNROLL
      for (int k = 0; k < V; ++k) x[k][c] = photo::load<P>(front.v[c][i][j0 + k]);
    }
  }
}

// What a block's program phase needs beside its tile's front: its sample's program and
// statistics, and where its statistics (the reduction pass) or its pixels (the element-wise
// pass) go.
template <typename P>
struct TilePass {
  Tile tile;
  int64_t sample;
  int reduction;
  double* block_partials;
  void* out;
  OutputLayout layout;
  Output<P> o;
};

// The program's phase over the tile's front, a run of up to kRun pixels of a row a thread at a
// time. Stats: the pixels to the program's reduction step, into the block's statistics; else
// through the program, converted and stored. V: a run's pixels through the program together
// (kRun) or one by one (1), see kRun.
template <int C, typename T, int V, typename P, bool Stats, bool JitterKinds>
__device__ __forceinline__ void program_phase(const TilePass<P>& a, const FrontTile<C, T>& front,
                                              const SampleProgram<P>& prog,
                                              const Reduced<P>& reduced) {
  const Tile& tile = a.tile;
  const int columns = static_cast<int>(tile.x1 - tile.x0);
  const int runs_per_row = (columns + kRun - 1) / kRun;
  const int runs = runs_per_row * static_cast<int>(tile.y1 - tile.y0);
  // Run r's row and first column in the tile, and its pixels (a row's last run may be shorter).
  const auto run_of = [&](int r, int& i, int& j0) {
    i = r / runs_per_row;
    j0 = (r % runs_per_row) * kRun;
    return ::min(kRun, columns - j0);
  };
  if constexpr (Stats) {
    const int kind = a.reduction;
    double stats[kStats];
    GPUAUG_UNROLL
    for (int k = 0; k < kStats; ++k) stats[k] = initial_stat(kind, k);
    if (prog.reduce_at >= 0) {
      const Reduced<P> none{};
      for (int r = threadIdx.x; r < runs; r += kThreads) {
        int i, j0;
        const int n = run_of(r, i, j0);
        P grays = 0;  // contrast: the run's grays summed first, one double addition a run
        const auto add = [&](const P (&x)[3]) {
          if (kind == kContrast) {
            grays += contrast_gray<C, T>(x);
          } else {
            add_pixel_stats<C, T>(kind, x, stats);
          }
        };
        if constexpr (V == kRun) {
          P x[kRun][3];
          front_run<C, T, kRun>(front, i, j0, x);
          run_steps<C, T, JitterKinds>(prog, 0, prog.reduce_at, x, none);
          GPUAUG_UNROLL
          for (int k = 0; k < kRun; ++k) {
            if (k < n) add(x[k]);
          }
        } else {
#pragma unroll 1
          for (int k = 0; k < n; ++k) {
            P x[1][3];
            front_run<C, T, 1>(front, i, j0 + k, x);
            run_steps<C, T, JitterKinds>(prog, 0, prog.reduce_at, x, none);
            add(x[0]);
          }
        }
        if (kind == kContrast) stats[0] += grays;
      }
    }
    block::block_stats(kind, stats, a.block_partials);
  } else {
    for (int r = threadIdx.x; r < runs; r += kThreads) {
      int i, j0;
      const int n = run_of(r, i, j0);
      if constexpr (V == kRun) {  // the run's pixels through the program together
        P x[kRun][3];
        front_run<C, T, kRun>(front, i, j0, x);
        run_steps<C, T, JitterKinds>(prog, 0, prog.count, x, reduced);
        convert_store<C, T>(a.out, a.layout, a.o, a.sample, tile.y0 + i, tile.x0 + j0, n, x);
      } else {  // one by one
#pragma unroll 1
        for (int k = 0; k < n; ++k) {
          P x[1][3];
          front_run<C, T, 1>(front, i, j0 + k, x);
          run_steps<C, T, JitterKinds>(prog, 0, prog.count, x, reduced);
          convert_store<C, T>(a.out, a.layout, a.o, a.sample, tile.y0 + i, tile.x0 + j0 + k, 1,
                              x);
        }
      }
    }
  }
}

// Resident blocks per SM the kernels ask the compiler for (64 registers): the program's phase
// is photometric.cu's element-wise arithmetic, whose latency needs as many warps.
constexpr int kBlocksPerSM = 4;

// The front of sample s's tile into `front` (the block's threads; ends past a barrier).
template <int C, typename T, typename P>
__device__ __forceinline__ void compute_front(FrontTile<C, T>& front, Tables<kTileRows<T>>& tables,
                                              Staged<C, T, P>& staged, const Tile& tile,
                                              const SourceTable& table, int64_t s,
                                              const int64_t* geometry, const Settings& settings,
                                              const Fill<P>& fill) {
  const Source& src = source_of(table, s);
  const T* image = static_cast<const T*>(src.data) + (s - src.first_sample) * src.sample_stride;
  const int64_t* geometry_row = geometry + s * kColumns;
  const SampleGeometry sg = sample_geometry(geometry_row);
  if (threadIdx.x == 0) {
    tables.first_row = INT32_MAX;
    tables.last_row = -1;
    tables.untabled = 0;
  }
  __syncthreads();
  const double* warp = warp_row(settings, s);  // block-uniform: a tile is of one sample
  if (warp == nullptr) tabulate(tables, tile, src, sg, settings);
  __syncthreads();
  if (warp != nullptr) {
    warped_front<C, T, P>(front, tile.y0, tile.y1, tile.x0, tile.x1, image, src, geometry_row,
                          settings, fill, warp);
  } else if (tables.untabled) {
    untabled_front<C, T, P>(front, tile.y0, tile.y1, tile.x0, tile.x1, image, src, geometry_row,
                            settings, fill);
  } else {
    const bool is_staged = image_rows(tables) <= staged_rows<T, P>;
    if (is_staged) {
      stage<C, T, P>(staged, tables, static_cast<int>(tile.x1 - tile.x0), image, src, fill.v);
      __syncthreads();
    }
    fill_front<C, T, P>(front, tile, [&](int i, int j, P (&v)[3]) {
      front_pixel<C, T, P>(tables, staged, is_staged, image, src, settings, fill.v, i, j, v);
    });
  }
  __syncthreads();
}

// One tile's front copied by the block's threads in 16-byte words (after a barrier where the
// source was just written).
template <int C, typename T>
__device__ __forceinline__ void copy_front(FrontTile<C, T>& to, const FrontTile<C, T>& from) {
  static_assert(sizeof(FrontTile<C, T>) % sizeof(uint4) == 0);
  constexpr int kWords = sizeof(FrontTile<C, T>) / sizeof(uint4);
  for (int w = threadIdx.x; w < kWords; w += kThreads) {
    reinterpret_cast<uint4*>(&to)[w] = reinterpret_cast<const uint4*>(&from)[w];
  }
}

// Stats: the reduction pass (each block's statistics into partials); else the element-wise pass.
// V: see kRun. JitterKinds: the program's stages are all jitter kinds (is_jitter_kind): the
// others' code left out of the loop. The structures are __grid_constant__: read where they lie,
// where a copy would cost every thread a stack frame of their size written at its start.
template <int C, typename T, int V, typename P, bool Stats, bool JitterKinds>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
    augment_kernel(const __grid_constant__ SourceTable table, const int64_t* geometry,
                   const __grid_constant__ Settings settings, const __grid_constant__ Fill<P> fill,
                   const __grid_constant__ Launch launch, const __grid_constant__ Program program,
                   const __grid_constant__ Rows<P> rows, double* partials,
                   FrontTile<C, T>* fronts, void* out,
                   const __grid_constant__ OutputLayout layout,
                   const __grid_constant__ Output<P> o) {
  __shared__ SampleProgram<P> prog;
  __shared__ Reduced<P> reduced;
  __shared__ Tables<kTileRows<T>> tables;
  __shared__ Staged<C, T, P> staged;
  __shared__ FrontTile<C, T> front;
  const int64_t s = launch.first_sample + blockIdx.x / launch.blocks_per_sample;
  const Tile tile = tile_of(launch, settings, blockIdx.x % launch.blocks_per_sample);
  block::Geometry g{};
  g.pixels = settings.out_height * settings.out_width;
  g.blocks_per_image = launch.blocks_per_sample;
  block::decode_block_program(prog, program, rows, s);
  if constexpr (!Stats) block::load_reduced<T>(reduced, partials, g, s, program.reduction);
  // the block's tile across launches (a list's sources may take several)
  const int64_t block_index = launch.first_sample * launch.blocks_per_sample + blockIdx.x;
  if (!Stats && fronts != nullptr) {
    copy_front(front, fronts[block_index]);
  } else {
    compute_front<C, T, P>(front, tables, staged, tile, table, s, geometry, settings, fill);
    if (Stats && fronts != nullptr) copy_front(fronts[block_index], front);
  }
  __syncthreads();
  const TilePass<P> pass{
      tile, s, program.reduction,
      Stats ? partials + block_index * kStats : nullptr,
      out, layout, o};
  program_phase<C, T, V, P, Stats, JitterKinds>(pass, front, prog, reduced);
}

template <typename T, typename G>
__global__ void __launch_bounds__(kThreads)
    adjoint_kernel(const __grid_constant__ SourceTable table, const int64_t* geometry,
                   Settings settings, const T* grad, int64_t channels, int64_t first_sample,
                   int64_t samples) {
  const int64_t pixels = settings.out_height * settings.out_width;
  const int64_t total = samples * pixels;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * kThreads) {
    const int64_t s = first_sample + i / pixels, p = i % pixels;
    const Source& src = source_of(table, s);
    G* image = static_cast<G*>(const_cast<void*>(src.data)) + (s - src.first_sample) * src.sample_stride;
    const T* sample_grad = grad + s * channels * pixels;
    G values[3] = {G(0), G(0), G(0)};
    for (int c = 0; c < channels; ++c) values[c] = static_cast<G>(sample_grad[c * pixels + p]);
    const SampleGeometry g = sample_geometry(geometry + s * kColumns);
    const auto add = [](G* at, G v) { atomicAdd(at, v); };
    const double* warp = warp_row(settings, s);
    if (warp != nullptr) {
      warped_adjoint(image, src, g, settings, warp, static_cast<int>(channels),
                     p / settings.out_width, p % settings.out_width, values, add);
    } else {
      geometric_adjoint(image, src, g, settings, static_cast<int>(channels),
                        p / settings.out_width, p % settings.out_width, values, add);
    }
  }
}

// Calls f(table, first sample, samples) for each run of up to kTableSources sources.
template <typename F>
void for_each_table(const std::vector<Source>& sources, F&& f) {
  for (size_t begin = 0; begin < sources.size(); begin += kTableSources) {
    const size_t end = std::min(sources.size(), begin + kTableSources);
    SourceTable table{};
    table.count = static_cast<int>(end - begin);
    std::copy(sources.begin() + begin, sources.begin() + end, table.sources);
    const Source& last = sources[end - 1];
    const int64_t first = sources[begin].first_sample;
    const int64_t samples = last.first_sample + last.samples - first;
    if (samples > 0) f(table, first, samples);
  }
}

// The tiles of each sample, a function of the sizes alone (statistics combine in the same order
// on every GPU): enough blocks in all to fill any GPU, each thread a few runs of pixels.
Launch tiles(int64_t samples, int64_t height, int64_t width, int tile_rows) {
  constexpr int64_t kTargetBlocks = 4096;
  const int64_t columns =  // the same for every chunk, within kRun
      ceil_div(ceil_div(width, ceil_div(width, kTileWidth)), kRun) * kRun;
  const int64_t chunks = ceil_div(width, columns);
  const int64_t wanted = ceil_div(ceil_div(kTargetBlocks, std::max<int64_t>(samples, 1)), chunks);
  const int64_t bands = std::clamp<int64_t>(wanted, ceil_div(height, tile_rows), height);
  const int64_t rows = ceil_div(height, bands);
  return {0, ceil_div(height, rows) * chunks, rows, columns, chunks};
}

bool only_jitter_kinds(const Program& program) {
  for (int k = 0; k < program.count; ++k) {
    if (!is_jitter_kind(program.kinds[k])) return false;
  }
  return true;
}

void augment(const at::Tensor& out, const std::vector<Source>& sources, at::ScalarType image_dtype,
             const at::Tensor& geometry, const Settings& settings, const Program& program,
             const at::Tensor& factors, const at::Tensor& order, const at::Tensor& apply,
             std::optional<c10::ArrayRef<double>> mean,
             std::optional<c10::ArrayRef<double>> stddev) {
  const c10::cuda::CUDAGuard device_guard(out.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int64_t samples = out.size(0);
  for (const Source& source : sources) {  // the tables' rows and column offsets are 32-bit
    TORCH_CHECK(source.height < INT32_MAX &&
                    (source.width - 1) * source.column_stride < INT32_MAX,
                "gpuaug::augment: expected images of fewer than 2^31 rows, each spanning fewer "
                "than 2^31 elements, on the GPU, but got ", source.height, " rows of width ",
                source.width, " and column stride ", source.column_stride);
  }
  const int tile_rows = image_dtype == at::kByte ? kTileRows<uint8_t> : kTileRows<float>;
  const Launch shape = tiles(samples, out.size(2), out.size(3), tile_rows);
  const int64_t per_sample = shape.blocks_per_sample;
  const OutputLayout layout{out.stride(0), out.stride(1), out.stride(2), out.stride(3),
                            code(out.scalar_type())};
  at::Tensor partials;
  if (program.reduction) {
    partials = at::empty({samples * per_sample, kStats}, out.options().dtype(at::kDouble));
  }
  double* sums = partials.defined() ? partials.mutable_data_ptr<double>() : nullptr;
  const bool jitter_kinds = only_jitter_kinds(program);
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, image_dtype,
                                  "gpuaug::augment", [&] {
    using T = scalar_t;
    using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const Rows<P> rows = photometric_rows<P>(factors, order, apply);
    const Output<P> o = photometric_output<P>(mean, stddev);
    Fill<P> fill;
    fill_values<T>(settings, fill.v);
    void* dst = out.mutable_data_ptr();
    const int64_t* geo = geometry.const_data_ptr<int64_t>();
    // the statistics' pass (where the program reduces), then the element-wise pass
    const auto run = [&](auto channels, auto jitter, auto run_length) {
      constexpr int C = decltype(channels)::value;
      constexpr bool J = decltype(jitter)::value;
      constexpr int V = decltype(run_length)::value;
      at::Tensor kept;
      FrontTile<C, T>* fronts = nullptr;
      if (sums != nullptr) {
        // the first pass keeps each tile's front for the second: its bytes written and read
        // again cost less than computing it twice
        const int64_t bytes = samples * per_sample * int64_t{sizeof(FrontTile<C, T>)};
        kept = at::empty({bytes}, out.options().dtype(at::kByte));
        fronts = reinterpret_cast<FrontTile<C, T>*>(kept.mutable_data_ptr());
        for_each_table(sources, [&](const SourceTable& table, int64_t first, int64_t count) {
          const Launch launch{first, per_sample, shape.tile_rows, shape.tile_columns,
                              shape.column_chunks};
          augment_kernel<C, T, V, P, true, J><<<count * per_sample, kThreads, 0, stream>>>(
              table, geo, settings, fill, launch, program, rows, sums, fronts, nullptr, layout,
              o);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
      }
      for_each_table(sources, [&](const SourceTable& table, int64_t first, int64_t count) {
        const Launch launch{first, per_sample, shape.tile_rows, shape.tile_columns,
                              shape.column_chunks};
        augment_kernel<C, T, V, P, false, J><<<count * per_sample, kThreads, 0, stream>>>(
            table, geo, settings, fill, launch, program, rows, sums, fronts, dst, layout, o);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    };
    // The training pipelines' programs (ColorJitter, RandomPhotometricDistort) on uint8 and
    // float32 RGB images are built apart, for the other dtypes not at all (chosen by type: the
    // dispatch's body is no template, where `if constexpr` would leave a branch unbuilt).
    constexpr bool kJitterBuild = std::is_same_v<T, uint8_t> || std::is_same_v<T, float>;
    using One = std::integral_constant<int, 1>;
    using JitterKinds = std::bool_constant<kJitterBuild>;
    using JitterRun = std::integral_constant<int, kJitterBuild ? kRun : 1>;
    using Gray = std::integral_constant<int, 1>;
    using RGB = std::integral_constant<int, 3>;
    if (out.size(1) == 1) {
      run(Gray{}, std::false_type{}, One{});
    } else if (kJitterBuild && jitter_kinds) {
      run(RGB{}, JitterKinds{}, JitterRun{});
    } else {
      run(RGB{}, std::false_type{}, One{});
    }
  });
}

void augment_adjoint(const at::Tensor& grad, const std::vector<Source>& grads,
                     const at::Tensor& geometry, const Settings& settings) {
  const c10::cuda::CUDAGuard device_guard(grad.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(),
                                  "gpuaug::_augment_backward", [&] {
    using G = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
    for_each_table(grads, [&](const SourceTable& table, int64_t first, int64_t count) {
      const int64_t total = count * settings.out_height * settings.out_width;
      const int64_t blocks = std::clamp<int64_t>(ceil_div(total, kThreads), 1, 65536);
      adjoint_kernel<scalar_t, G><<<blocks, kThreads, 0, stream>>>(
          table, geometry.const_data_ptr<int64_t>(), settings, grad.const_data_ptr<scalar_t>(),
          grad.size(1), first, count);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

}  // namespace
}  // namespace gpuaug::cuda::augment_impl

namespace gpuaug {
GPUAUG_REGISTER_LOOP(augment_loops, cuda, &cuda::augment_impl::augment);
GPUAUG_REGISTER_LOOP(augment_adjoint_loops, cuda, &cuda::augment_impl::augment_adjoint);
}  // namespace gpuaug
