// The elementwise tail of a block of per-variable GRNs, fused: one pass per (variable, row)
// cell instead of a dozen ATen passes over [variables, rows, d] tensors.
//
// Per cell: y = values * sigmoid(gates) + z @ skip_w (GLU and residual, eq. 2), LayerNorm without
// its gain, then the selection-weighted sum of eq. 8: out[r] += w * gain * normed.
// Backward recomputes y from the same inputs and returns the gradients of the GLU input,
// of y (the skip path), of the selection weights and of the gains.
//
// Layout (all float32, contiguous): gl [v, r, 2d] (values | gates), z [v, r, k] (the GRN's
// input, its last feature the constant 1), skip_w [v, k, d], w [v, r], gain [v, d],
// grad/out [r, d]. Threads split the rows, so `out` needs no locks;
// the gain gradient is summed over rows in per-thread buffers.
#include <torch/extension.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "fast_exp.h"

namespace {

constexpr int64_t kGrain = 16;  // rows per task: each row is v cells of ~6d flops

// y = values * s + z @ skip_w with s = sigmoid(gates); returns mean and 1/std of y (biased
// variance, as LayerNorm).
inline void glu_residual(const float* gl, const float* z, const float* skip_w, int64_t k_in,
                         int64_t d, float eps, float* y, float* s, float& mean, float& rstd) {
  const float* values = gl;
  const float* gates = gl + d;
#pragma omp simd
  for (int64_t k = 0; k < d; ++k) y[k] = z[0] * skip_w[k];
  for (int64_t i = 1; i < k_in; ++i) {
    const float zi = z[i];
    const float* row = skip_w + i * d;
#pragma omp simd
    for (int64_t k = 0; k < d; ++k) y[k] += zi * row[k];
  }
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t k = 0; k < d; ++k) {
    s[k] = 1.f / (1.f + foxhunt::exp_approx(-gates[k]));
    y[k] += values[k] * s[k];
    sum += y[k];
  }
  mean = sum / static_cast<float>(d);
  float sq = 0.f;
#pragma omp simd reduction(+ : sq)
  for (int64_t k = 0; k < d; ++k) {
    const float c = y[k] - mean;
    sq += c * c;
  }
  rstd = 1.f / std::sqrt(sq / static_cast<float>(d) + eps);
}

void check(const torch::Tensor& t, const char* name, int64_t dim) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
              name, " must be a contiguous float32 CPU tensor");
  TORCH_CHECK(t.dim() == dim, name, " must have ", dim, " dimensions");
}

}  // namespace

// out [r, d] += sum_j w[j, r] * gain[j] * LayerNorm(values_j * sigmoid(gates_j) + skip_j)
void forward(const torch::Tensor& gl, const torch::Tensor& z, const torch::Tensor& skip_w,
             const torch::Tensor& w, const torch::Tensor& gain, torch::Tensor& out, double eps) {
  check(gl, "gl", 3), check(z, "z", 3), check(skip_w, "skip_w", 3), check(w, "w", 2);
  check(gain, "gain", 2), check(out, "out", 2);
  const int64_t v = z.size(0), rows = z.size(1), k_in = z.size(2), d = skip_w.size(2);
  const float* gl_p = gl.data_ptr<float>();
  const float* z_p = z.data_ptr<float>();
  const float* skip_w_p = skip_w.data_ptr<float>();
  const float* w_p = w.data_ptr<float>();
  const float* gain_p = gain.data_ptr<float>();
  float* out_p = out.data_ptr<float>();
  const float e = static_cast<float>(eps);
  at::parallel_for(0, rows, kGrain, [&](int64_t r0, int64_t r1) {
    std::vector<float> y(d), s(d);
    for (int64_t r = r0; r < r1; ++r) {
      float* o = out_p + r * d;
      for (int64_t j = 0; j < v; ++j) {
        const int64_t cell = j * rows + r;
        float mean, rstd;
        glu_residual(gl_p + cell * 2 * d, z_p + cell * k_in, skip_w_p + j * k_in * d, k_in, d, e,
                     y.data(), s.data(), mean, rstd);
        const float a = w_p[cell] * rstd;
        const float* g = gain_p + j * d;
#pragma omp simd
        for (int64_t k = 0; k < d; ++k) o[k] += a * g[k] * (y[k] - mean);
      }
    }
  });
}

// Given grad [r, d] of `out`: writes d_gl [v, r, 2d], d_y [v, r, d] (the gradient of y, which
// is also the skip's output's), d_w [v, r]; adds the gain gradient to d_gain [v, d].
void backward(const torch::Tensor& gl, const torch::Tensor& z, const torch::Tensor& skip_w,
              const torch::Tensor& w, const torch::Tensor& gain, const torch::Tensor& grad,
              torch::Tensor& d_gl, torch::Tensor& d_y, torch::Tensor& d_w, torch::Tensor& d_gain,
              double eps) {
  check(gl, "gl", 3), check(z, "z", 3), check(skip_w, "skip_w", 3), check(w, "w", 2);
  check(gain, "gain", 2), check(grad, "grad", 2), check(d_gl, "d_gl", 3), check(d_y, "d_y", 3);
  check(d_w, "d_w", 2), check(d_gain, "d_gain", 2);
  const int64_t v = z.size(0), rows = z.size(1), k_in = z.size(2), d = skip_w.size(2);
  const float* gl_p = gl.data_ptr<float>();
  const float* z_p = z.data_ptr<float>();
  const float* skip_w_p = skip_w.data_ptr<float>();
  const float* w_p = w.data_ptr<float>();
  const float* gain_p = gain.data_ptr<float>();
  const float* grad_p = grad.data_ptr<float>();
  float* d_gl_p = d_gl.data_ptr<float>();
  float* d_y_p = d_y.data_ptr<float>();
  float* d_w_p = d_w.data_ptr<float>();
  float* d_gain_p = d_gain.data_ptr<float>();
  const float e = static_cast<float>(eps), inv_d = 1.f / static_cast<float>(d);
  std::mutex merge;
  at::parallel_for(0, rows, kGrain, [&](int64_t r0, int64_t r1) {
    std::vector<float> y(d), s(d), local_gain(v * d, 0.f);
    for (int64_t r = r0; r < r1; ++r) {
      const float* g_out = grad_p + r * d;
      for (int64_t j = 0; j < v; ++j) {
        const int64_t cell = j * rows + r;
        const float* cell_gl = gl_p + cell * 2 * d;
        float mean, rstd;
        glu_residual(cell_gl, z_p + cell * k_in, skip_w_p + j * k_in * d, k_in, d, e, y.data(),
                     s.data(), mean, rstd);
        const float* g = gain_p + j * d;
        const float wj = w_p[cell];
        float* lg = local_gain.data() + j * d;
        // normed n = (y - mean) * rstd; c = sum(grad * gain * n) = d out / d w;
        // t = sum(grad * gain): LayerNorm backward needs mean(dn) and mean(dn * n)
        float c = 0.f, t = 0.f;
#pragma omp simd reduction(+ : c, t)
        for (int64_t k = 0; k < d; ++k) {
          const float n = (y[k] - mean) * rstd;
          y[k] = n;
          const float gg = g_out[k] * g[k];
          c += gg * n;
          t += gg;
          lg[k] += wj * g_out[k] * n;
        }
        d_w_p[cell] = c;
        const float a = wj * rstd, m1 = t * inv_d, m2 = c * inv_d;
        const float* values = cell_gl;
        float* dy = d_y_p + cell * d;
        float* dv = d_gl_p + cell * 2 * d;
        float* dg = dv + d;
#pragma omp simd
        for (int64_t k = 0; k < d; ++k) {
          const float grad_y = a * (g_out[k] * g[k] - m1 - y[k] * m2);
          dy[k] = grad_y;
          dv[k] = grad_y * s[k];
          dg[k] = grad_y * values[k] * s[k] * (1.f - s[k]);
        }
      }
    }
    std::lock_guard<std::mutex> lock(merge);
    for (int64_t i = 0; i < v * d; ++i) d_gain_p[i] += local_gain[i];
  });
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "fused GLU + residual + LayerNorm + weighted sum (in place)");
  m.def("backward", &backward, "its backward");
}
