// gpuaug::color_transform's CPU loops; ops/color_transform.cpp checks, allocates and calls them.
#include <ATen/Parallel.h>
#include <ATen/ops/zeros.h>

#include "kernels/color_math.h"
#include "kernels/color_params.h"
#include "kernels/color_transform.h"

namespace gpuaug::cpu {
namespace {

using namespace gpuaug::color;

// Work is split into fixed runs of pixels of one image, so that the parameter gradients' partial
// sums (one per run) do not depend on the number of threads.
constexpr int64_t kPixelsPerTask = 4096;

struct Walk {
  ImageGeometry g;
  int64_t tasks_per_image;
  int64_t channel_step, pixel_step;  // element distance between channels, between pixels

  explicit Walk(const ImageGeometry& geometry)
      : g(geometry),
        tasks_per_image((geometry.pixels + kPixelsPerTask - 1) / kPixelsPerTask),
        channel_step(geometry.interleaved ? 1 : geometry.pixels),
        pixel_step(geometry.interleaved ? geometry.channels : 1) {}

  int64_t tasks() const { return g.samples * g.frames * tasks_per_image; }
};

// One task: its image's first element, its run of pixels and its sample's parameters.
template <typename P>
struct Task {
  int64_t offset, first, last;
  bool apply;
  const P* color;
  SampleParams<P> s;

  Task(const Walk& w, const Params<P>& p, int64_t task) {
    const int64_t image = task / w.tasks_per_image;
    const int64_t n = image / w.g.frames;
    offset = image * w.g.channels * w.g.pixels;
    first = (task % w.tasks_per_image) * kPixelsPerTask;
    last = std::min(first + kPixelsPerTask, w.g.pixels);
    apply = p.applies(n);
    color = p.color_of(n);
    s = p.sample(n);
  }
};

template <int C, typename in_t, typename out_t, typename P>
void forward_kernel(const in_t* in, out_t* out, const Walk& w, const Params<P>& p) {
  const int nc = static_cast<int>(w.g.channels);
  at::parallel_for(0, w.tasks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const Task<P> t(w, p, task);
      for (int64_t px = t.first; px < t.last; ++px) {
        const int64_t at = t.offset + px * w.pixel_step;
        P x[kArray<C>];
        for (int c = 0; c < nc; ++c) x[c] = load<P>(in[at + c * w.channel_step]);
        if (t.apply) forward_pixel<C>(x, nc, t.color, t.s);
        for (int c = 0; c < nc; ++c) {
          const P v = p.normalize ? (x[c] - p.mean[c]) * p.inv_std[c] : x[c];
          out[at + c * w.channel_step] = store<out_t>(v);
        }
      }
    }
  });
}

template <int C, typename in_t, typename g_t, typename P>
void backward_kernel(const in_t* in, const g_t* grad, in_t* grad_in, P* partial_sums,
                     const Walk& w, const Params<P>& p) {
  const int nc = static_cast<int>(w.g.channels);
  at::parallel_for(0, w.tasks(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const Task<P> t(w, p, task);
      P grad_color[kArray<C>] = {};
      ScalarGrads<P> acc;
      for (int64_t px = t.first; px < t.last; ++px) {
        const int64_t at = t.offset + px * w.pixel_step;
        P x[kArray<C>], g[kArray<C>];
        for (int c = 0; c < nc; ++c) {
          x[c] = load<P>(in[at + c * w.channel_step]);
          g[c] = load<P>(grad[at + c * w.channel_step]) * p.inv_std[c];
        }
        if (t.apply) backward_pixel<C>(x, g, nc, t.color, t.s, grad_color, acc);
        for (int c = 0; c < nc; ++c) grad_in[at + c * w.channel_step] = store<in_t>(g[c]);
      }
      P* sums = partial_sums + task * (nc + 3);
      for (int c = 0; c < nc; ++c) sums[c] = grad_color[c];
      sums[nc] = acc.brightness;
      sums[nc + 1] = acc.contrast;
      sums[nc + 2] = acc.gamma;
    }
  });
}

void color_transform(const at::Tensor& out, const at::Tensor& image, const at::Tensor& color,
                     const at::Tensor& brightness, const at::Tensor& contrast,
                     const at::Tensor& gamma, const std::optional<at::Tensor>& apply,
                     std::optional<c10::ArrayRef<double>> mean,
                     std::optional<c10::ArrayRef<double>> stddev) {
  const at::Tensor in = dense_image(image);
  const Walk walk(image_geometry(in));
  dispatch_dtypes<true>(in.scalar_type(), out.scalar_type(), [&](auto in_tag, auto out_tag) {
    using in_t = typename decltype(in_tag)::type;
    using out_t = typename decltype(out_tag)::type;
    using P = compute_t<in_t>;
    const auto params = make_params<P>(in, color, brightness, contrast, gamma, apply, mean, stddev);
    const auto* src = in.const_data_ptr<in_t>();
    auto* dst = out.mutable_data_ptr<out_t>();
    if (walk.g.channels == 3) {
      forward_kernel<3>(src, dst, walk, params.params);
    } else {
      forward_kernel<0>(src, dst, walk, params.params);
    }
  });
}

void color_transform_backward(ColorGrads& grads, const at::Tensor& grad, const at::Tensor& image,
                              const at::Tensor& color, const at::Tensor& brightness,
                              const at::Tensor& contrast, const at::Tensor& gamma,
                              const std::optional<at::Tensor>& apply,
                              std::optional<c10::ArrayRef<double>> stddev) {
  at::Tensor& grad_image = std::get<0>(grads);
  const at::Tensor in = dense_image(image);
  const at::Tensor grad_in = grad_in_image_layout(grad, grad_image);
  const Walk walk(image_geometry(in));
  const at::Tensor partial_sums =
      at::zeros({walk.g.samples * walk.g.frames, walk.tasks_per_image, walk.g.channels + 3},
                in.options().dtype(color_compute_dtype(in)));
  if (in.numel() > 0) {
    dispatch_dtypes<false>(in.scalar_type(), grad.scalar_type(), [&](auto in_tag, auto g_tag) {
      using in_t = typename decltype(in_tag)::type;
      using g_t = typename decltype(g_tag)::type;
      using P = compute_t<in_t>;
      const auto params =
          make_params<P>(in, color, brightness, contrast, gamma, apply, std::nullopt, stddev);
      auto run = [&](auto channels) {
        backward_kernel<decltype(channels)::value>(
            in.const_data_ptr<in_t>(), grad_in.const_data_ptr<g_t>(),
            grad_image.mutable_data_ptr<in_t>(), partial_sums.mutable_data_ptr<P>(), walk,
            params.params);
      };
      if (walk.g.channels == 3) {
        run(std::integral_constant<int, 3>{});
      } else {
        run(std::integral_constant<int, 0>{});
      }
    });
  }
  color_reduce_param_grads(partial_sums, walk.g, grads);
}

}  // namespace

GPUAUG_REGISTER_LOOP(color_transform_loops, cpu, &color_transform);
GPUAUG_REGISTER_LOOP(color_transform_backward_loops, cpu, &color_transform_backward);

}  // namespace gpuaug::cpu
