// A VSN's per-variable GRNs and their selection-weighted sum (eqs. 2-4, 7-8), whole, a tile
// of a few rows of one variable at a time: the tile's activations live in registers and a few
// KiB of buffers, so nothing of width [variables, rows, *] is written to memory, forward or
// backward. (long: forward, backward and the tile helpers they share are one idea.)
//
// Per cell, with z the GRN's input (its last feature the constant 1) and the weights
// "augmented" (their last input row is the bias, see variable_grns.py):
//   a2 = ELU(z @ in_w[:, :g+1])         [eta_2, 1]   (ELU(1) = 1 passes the 1 on)
//   e1 = (a2 @ fc2) * keep               [eta_1, 1]   (dropout; its rescaling is in glu)
//   gl = e1 @ glu                        GLU input [values | gates], 2d
//   y  = values * sigmoid(gates) + z @ in_w[:, g+1:]       (GLU and the skip)
//   out[r] += w[j, r] * (gain_j * LayerNorm(y) + bias_j)
// Backward recomputes the cell and returns every gradient; the "1" columns of in_w and fc2
// are constants and get no gradient.
//
// The dropout keep bits are hashed from a seed and each element's index (dropout.py's
// HashedMask, the same bits): recomputed in backward, never stored.
// Layout (float32, contiguous): z [n, R, k], w [n, R], in_w [n, k, g+1+d], fc2 [n, g+1, g+1],
// glu [n, g+1, 2d], gain and bias [n, d], out/grad [R, d].
// Forward splits the rows between threads (each owns its rows of `out`, tiles aligned to row 0
// whatever the split); backward splits the variables (each owns its variables' weight
// gradients, summed over the rows in order): no locks, no per-thread copies, and no sum split
// by thread, so every result is bit-identical at any thread count
// (tests/model/test_grn_cells.py).
#include "torch_api.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "fast_exp.h"

namespace {

constexpr int64_t kRowGrain = 16;  // rows per forward task
// Rows of one variable computed together, and the output columns per register chunk of
// tile_matmul: its kTile x kWide accumulators take 16 of AVX-512's 32 zmm registers, 12 of
// AVX2's 16 ymm, leaving the rest for the weights and broadcasts (measured best of a few).
#if defined(__AVX512F__)
constexpr int kTile = 8, kWide = 32;
#else
constexpr int kTile = 6, kWide = 16;
#endif

struct Sizes {
  int64_t n, rows, k, g, d;
  int64_t in_cols() const { return g + 1 + d; }
};

// Dropout: the seed's halves and the keep threshold (of 2^16; 2^16 keeps all).
struct Dropout {
  uint32_t lo, hi, threshold;
  bool active() const { return threshold < (1u << 16); }
};

inline uint32_t fmix32(uint32_t x) {  // MurmurHash3's finalizer
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  return x ^ (x >> 16);
}

// keep[i] = 1 or 0 for the g elements from flat index `first` (HashedMask.keep's bits).
inline void keep_factors(const Dropout& drop, int64_t first, int64_t g, float* keep) {
#pragma omp simd
  for (int64_t i = 0; i < g; ++i) {
    const uint32_t x = fmix32(fmix32(static_cast<uint32_t>(first + i) + drop.lo) ^ drop.hi);
    keep[i] = (x >> 16) < drop.threshold ? 1.f : 0.f;
  }
}

// Columns [o, end) of out[t] (=, or += with Add) x[t, :fin] @ w[:fin, :] in chunks of C, x's
// element (t, f) at x[t * x_row + f * x_col]. The T x C accumulators stay in registers while
// w's rows stream by (T products per weight load). Returns the first column not done.
template <int T, int C, bool Add>
inline int64_t matmul_chunks(const float* x, int64_t x_row, int64_t x_col, const float* w,
                             int64_t w_stride, int64_t fin, int64_t o, int64_t end, float* out,
                             int64_t out_stride) {
  for (; o + C <= end; o += C) {
    float acc[T][C] = {};
    for (int64_t f = 0; f < fin; ++f) {
      const float* wf = w + f * w_stride + o;
      for (int t = 0; t < T; ++t) {
        const float xf = x[t * x_row + f * x_col];
#pragma omp simd
        for (int c = 0; c < C; ++c) acc[t][c] += xf * wf[c];
      }
    }
    for (int t = 0; t < T; ++t) {
      float* dst = out + t * out_stride + o;
#pragma omp simd
      for (int c = 0; c < C; ++c) dst[c] = Add ? dst[c] + acc[t][c] : acc[t][c];
    }
  }
  return o;
}

// out[t, :cols] (=, or += with Add) x[t, :fin] @ w[:fin, :cols] for the T rows of a tile;
// w and out are row-major with the given strides, x's element (t, f) at t * x_row + f * x_col.
template <int T, bool Add = false>
inline void tile_matmul(const float* x, int64_t x_row, int64_t x_col, const float* w,
                        int64_t w_stride, int64_t fin, int64_t cols, float* out,
                        int64_t out_stride) {
  int64_t o = matmul_chunks<T, kWide, Add>(x, x_row, x_col, w, w_stride, fin, 0, cols, out,
                                           out_stride);
  o = matmul_chunks<T, kWide / 2, Add>(x, x_row, x_col, w, w_stride, fin, o, cols, out,
                                       out_stride);
  for (; o < cols; ++o) {  // the last columns (of g + 1 = 17: the constant's)
    for (int t = 0; t < T; ++t) {
      float acc = 0.f;
      for (int64_t f = 0; f < fin; ++f) acc += x[t * x_row + f * x_col] * w[f * w_stride + o];
      float* dst = out + t * out_stride + o;
      *dst = Add ? *dst + acc : acc;
    }
  }
}

// w[i, :cols] += sum_t x[t, i] * y[t, :cols] for i < rows: a weight's gradient over a tile.
template <int T>
inline void tile_outer_add(const float* x, int64_t x_stride, int64_t rows, const float* y,
                           int64_t y_stride, int64_t cols, float* w, int64_t w_stride) {
  for (int64_t i = 0; i < rows; ++i) {
    float xi[T];
    for (int t = 0; t < T; ++t) xi[t] = x[t * x_stride + i];
    float* row = w + i * w_stride;
#pragma omp simd
    for (int64_t o = 0; o < cols; ++o) {
      float acc = row[o];
      for (int t = 0; t < T; ++t) acc += xi[t] * y[t * y_stride + o];
      row[o] = acc;
    }
  }
}

// A tile's activations, kTile rows: a2, e1 [g + 1], the dropout's keep factors [g], gl [2d],
// y [d] (the pre-LayerNorm sum, then its normed value in backward), s = sigmoid(gates) [d],
// LayerNorm mean and 1/std.
struct Tile {
  int64_t g1, d;
  std::vector<float> a2, e1, keep, gl, y, s, mean, rstd;
  explicit Tile(const Sizes& sz)
      : g1(sz.g + 1), d(sz.d), a2(kTile * g1), e1(kTile * g1), keep(kTile * sz.g),
        gl(kTile * 2 * d), y(kTile * d), s(kTile * d), mean(kTile), rstd(kTile) {}
};

// The forward of T consecutive cells of one variable, from cell index `cell`, up to the
// LayerNorm statistics; in_w, fc2, glu point at the variable's weights.
template <int T>
inline void tile_forward(const Sizes& sz, int64_t cell, const float* z_all, const Dropout& drop,
                         const float* in_w, const float* fc2, const float* glu, float eps,
                         Tile& c) {
  const float* z = z_all + cell * sz.k;
  const int64_t g1 = sz.g + 1, d = sz.d, d2 = 2 * sz.d, cols = sz.in_cols();
  float* a2 = c.a2.data();
  float* e1 = c.e1.data();
  float* gl = c.gl.data();
  tile_matmul<T>(z, sz.k, 1, in_w, cols, sz.k, g1, a2, g1);
  tile_matmul<T>(z, sz.k, 1, in_w + g1, cols, sz.k, d, c.y.data(), d);  // the skip
  for (int t = 0; t < T; ++t) {
    float* a = a2 + t * g1;
#pragma omp simd
    for (int64_t i = 0; i < g1; ++i) a[i] = a[i] > 0.f ? a[i] : foxhunt::exp_approx(a[i]) - 1.f;
  }
  tile_matmul<T>(a2, g1, 1, fc2, g1, g1, g1, e1, g1);
  if (drop.active()) {
    for (int t = 0; t < T; ++t) {
      float* e = e1 + t * g1;
      float* keep = c.keep.data() + t * sz.g;
      keep_factors(drop, (cell + t) * sz.g, sz.g, keep);
#pragma omp simd
      for (int64_t i = 0; i < sz.g; ++i) e[i] *= keep[i];
    }
  }
  tile_matmul<T>(e1, g1, 1, glu, d2, g1, d2, gl, d2);
  for (int t = 0; t < T; ++t) {
    const float* values = gl + t * d2;
    const float* gates = values + d;
    float* y = c.y.data() + t * d;
    float* s = c.s.data() + t * d;
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < d; ++i) {
      s[i] = 1.f / (1.f + foxhunt::exp_approx(-gates[i]));
      y[i] += values[i] * s[i];
      sum += y[i];
    }
    const float mean = sum / static_cast<float>(d);
    float sq = 0.f;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < d; ++i) {
      const float centred = y[i] - mean;
      sq += centred * centred;
    }
    c.mean[t] = mean;
    c.rstd[t] = 1.f / std::sqrt(sq / static_cast<float>(d) + eps);
  }
}

// One variable's weights (read) and, in backward, its gradients (written by one thread).
struct Weights {
  const float *in_w, *fc2, *glu, *gain, *bias;
};

struct Params {  // every variable's weights
  const float *in_w, *fc2, *glu, *gain, *bias;
};

Weights weights_of(const Sizes& sz, int64_t j, const Params& p) {
  const int64_t g1 = sz.g + 1;
  return {p.in_w + j * sz.k * sz.in_cols(), p.fc2 + j * g1 * g1, p.glu + j * g1 * 2 * sz.d,
          p.gain + j * sz.d, p.bias + j * sz.d};
}

// Forward of T cells (variable j, rows r..r+T): out[r + t] += w * (gain * LayerNorm(y) + bias).
template <int T>
inline void tile_add_out(const Sizes& sz, int64_t j, int64_t r, const float* z, const float* w,
                         const Dropout& drop, const Weights& wj, float eps, Tile& c,
                         float* out) {
  const int64_t cell = j * sz.rows + r, d = sz.d;
  tile_forward<T>(sz, cell, z, drop, wj.in_w, wj.fc2, wj.glu, eps, c);
  for (int t = 0; t < T; ++t) {
    const float wt = w[cell + t], a = wt * c.rstd[t], mean = c.mean[t];
    const float* y = c.y.data() + t * d;
    float* o = out + (r + t) * d;
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) o[i] += a * wj.gain[i] * (y[i] - mean) + wt * wj.bias[i];
  }
}

// Rows whose e1 and d_gl backward collects before adding their product to d_glu: one
// [g + 1, kBatch] x [kBatch, 2d] matmul instead of a rank-kTile update per tile.
constexpr int64_t kBatch = 8 * kTile;

// Backward's per-thread buffers: the transposed weights of the current variable; a tile's
// gradients of y [d], e1 [g] and fc1's pre-activation [g]; the batch's e1 [g + 1] and
// gradients of gl [2d], `filled` rows of them so far.
struct Grads {
  std::vector<float> glu_t, fc2_t, dy, d_e1, d_pre, e1s, d_gls;
  int64_t filled = 0;
  explicit Grads(const Sizes& sz)
      : glu_t(2 * sz.d * sz.g), fc2_t(sz.g * sz.g), dy(kTile * sz.d), d_e1(kTile * sz.g),
        d_pre(kTile * sz.g), e1s(kBatch * (sz.g + 1)), d_gls(kBatch * 2 * sz.d) {}
  // glu[:g] and fc2[:g, :g] transposed: backward's products run along the weights' rows
  void transpose(const Sizes& sz, const Weights& wj) {
    const int64_t g = sz.g, g1 = sz.g + 1, d2 = 2 * sz.d;
    for (int64_t i = 0; i < g; ++i)
      for (int64_t o = 0; o < d2; ++o) glu_t[o * g + i] = wj.glu[i * d2 + o];
    for (int64_t i = 0; i < g; ++i)
      for (int64_t o = 0; o < g; ++o) fc2_t[o * g + i] = wj.fc2[i * g1 + o];
  }
  // d_glu [g + 1, 2d] += e1s^T d_gls over the filled rows, kTile rows of d_glu at a time and
  // the last ones 4, 2, 1 at a time (one at a time, an accumulator waits on itself)
  void flush(const Sizes& sz, float* d_glu) {
    const int64_t g1 = sz.g + 1;
    int64_t i = 0;
    for (; i + kTile <= g1; i += kTile) add_product<kTile>(sz, i, d_glu);
    if (i + 4 <= g1) add_product<4>(sz, i, d_glu), i += 4;
    if (i + 2 <= g1) add_product<2>(sz, i, d_glu), i += 2;
    if (i < g1) add_product<1>(sz, i, d_glu);
    filled = 0;
  }
  template <int T>
  void add_product(const Sizes& sz, int64_t i, float* d_glu) {
    const int64_t g1 = sz.g + 1, d2 = 2 * sz.d;
    tile_matmul<T, true>(e1s.data() + i, 1, g1, d_gls.data(), d2, filled, d2, d_glu + i * d2,
                         d2);
  }
};

struct Outputs {  // the gradients backward writes, full tensors
  const float* grad;
  float *d_w, *d_z, *d_in_w, *d_fc2, *d_glu, *d_gain, *d_bias;
};

// Backward of T cells (variable j, rows r..r+T), recomputing their forward.
template <int T>
inline void tile_backward(const Sizes& sz, int64_t j, int64_t r, const float* z, const float* w,
                          const Dropout& drop, const Weights& wj, float eps, Tile& c, Grads& b,
                          const Outputs& out) {
  const int64_t k = sz.k, g = sz.g, g1 = sz.g + 1, d = sz.d, d2 = 2 * sz.d;
  const int64_t cols = sz.in_cols(), cell = j * sz.rows + r;
  const float* zc = z + cell * k;
  tile_forward<T>(sz, cell, z, drop, wj.in_w, wj.fc2, wj.glu, eps, c);
  float* d_gain = out.d_gain + j * d;
  float* d_bias = out.d_bias + j * d;
  float* d_gl = b.d_gls.data() + b.filled * d2;  // this tile's rows of the batch
  std::copy(c.e1.begin(), c.e1.begin() + T * g1, b.e1s.begin() + b.filled * g1);
  b.filled += T;
  const float inv_d = 1.f / static_cast<float>(d);
  for (int t = 0; t < T; ++t) {  // LayerNorm and the weighted sum: normed = (y - mean) * rstd
    const float* g_out = out.grad + (r + t) * d;
    const float wt = w[cell + t], mean = c.mean[t], rstd = c.rstd[t];
    float* y = c.y.data() + t * d;
    const float* s = c.s.data() + t * d;
    const float* values = c.gl.data() + t * d2;
    float dot = 0.f, sum = 0.f, shift = 0.f;
#pragma omp simd reduction(+ : dot, sum, shift)
    for (int64_t i = 0; i < d; ++i) {
      const float normed = (y[i] - mean) * rstd;
      y[i] = normed;
      const float gg = g_out[i] * wj.gain[i];
      dot += gg * normed;
      sum += gg;
      shift += g_out[i] * wj.bias[i];
      d_gain[i] += wt * g_out[i] * normed;
      d_bias[i] += wt * g_out[i];
    }
    out.d_w[cell + t] = dot + shift;
    const float a = wt * rstd, m1 = sum * inv_d, m2 = dot * inv_d;
    float* dy = b.dy.data() + t * d;
    float* d_values = d_gl + t * d2;
    float* d_gates = d_values + d;
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) {
      const float grad_y = a * (g_out[i] * wj.gain[i] - m1 - y[i] * m2);
      dy[i] = grad_y;
      d_values[i] = grad_y * s[i];
      d_gates[i] = grad_y * values[i] * s[i] * (1.f - s[i]);
    }
  }
  // gl = e1 @ glu: d_e1 = d_gl @ glu[:g]^T, masked as e1 was (d_glu: Grads::flush)
  tile_matmul<T>(d_gl, d2, 1, b.glu_t.data(), g, d2, g, b.d_e1.data(), g);
  if (drop.active()) {
    for (int t = 0; t < T; ++t) {
      float* de = b.d_e1.data() + t * g;
      const float* keep = c.keep.data() + t * g;
#pragma omp simd
      for (int64_t i = 0; i < g; ++i) de[i] *= keep[i];
    }
  }
  // e1 = a2 @ fc2: d_fc2 += a2^T d_e1; d_a2 = d_e1 @ fc2[:g, :g]^T, then through the ELU
  tile_outer_add<T>(c.a2.data(), g1, g1, b.d_e1.data(), g, g, out.d_fc2 + j * g1 * g1, g1);
  tile_matmul<T>(b.d_e1.data(), g, 1, b.fc2_t.data(), g, g, g, b.d_pre.data(), g);
  for (int t = 0; t < T; ++t) {
    const float* a2 = c.a2.data() + t * g1;
    float* dp = b.d_pre.data() + t * g;
#pragma omp simd
    for (int64_t i = 0; i < g; ++i) dp[i] *= a2[i] > 0.f ? 1.f : a2[i] + 1.f;
  }
  // the input map [fc1 pre-activation | 1 | skip]: its gradient, and z's
  float* d_in_w = out.d_in_w + j * k * cols;
  tile_outer_add<T>(zc, k, k, b.d_pre.data(), g, g, d_in_w, cols);
  tile_outer_add<T>(zc, k, k, b.dy.data(), d, d, d_in_w + g1, cols);
  if (out.d_z == nullptr) return;
  for (int t = 0; t < T; ++t) {
    const float* dp = b.d_pre.data() + t * g;
    const float* dy = b.dy.data() + t * d;
    float* dz = out.d_z + (cell + t) * k;
    for (int64_t f = 0; f < k; ++f) {
      const float* row = wj.in_w + f * cols;
      float acc = 0.f;
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < g; ++i) acc += row[i] * dp[i];
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < d; ++i) acc += row[g1 + i] * dy[i];
      dz[f] = acc;
    }
  }
}

void check(const torch::Tensor& t, const char* name, int64_t dim, at::ScalarType type) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == type && t.is_contiguous(), name,
              " must be a contiguous CPU tensor of ", type);
  TORCH_CHECK(t.dim() == dim, name, " must have ", dim, " dimensions");
}

Sizes sizes(const torch::Tensor& z, const torch::Tensor& w, const torch::Tensor& in_w,
            const torch::Tensor& fc2, const torch::Tensor& glu, const torch::Tensor& gain,
            const torch::Tensor& bias) {
  check(z, "z", 3, at::kFloat), check(w, "w", 2, at::kFloat);
  check(in_w, "in_w", 3, at::kFloat), check(fc2, "fc2", 3, at::kFloat);
  check(glu, "glu", 3, at::kFloat), check(gain, "gain", 2, at::kFloat);
  check(bias, "bias", 2, at::kFloat);
  TORCH_CHECK(bias.sizes() == gain.sizes(), "bias must be shaped like gain");
  const Sizes sz{z.size(0), z.size(1), z.size(2), fc2.size(2) - 1, gain.size(1)};
  TORCH_CHECK(in_w.size(1) == sz.k && in_w.size(2) == sz.in_cols(), "in_w: wrong shape");
  TORCH_CHECK(glu.size(1) == sz.g + 1 && glu.size(2) == 2 * sz.d, "glu: wrong shape");
  TORCH_CHECK(w.size(0) == sz.n && w.size(1) == sz.rows, "w: wrong shape");
  return sz;
}

Dropout dropout_of(int64_t seed, int64_t threshold) {
  TORCH_CHECK(threshold >= 0 && threshold <= (1 << 16), "threshold must be in [0, 2^16]");
  const auto bits = static_cast<uint64_t>(seed);
  return {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32),
          static_cast<uint32_t>(threshold)};
}

}  // namespace

Params params_of(const torch::Tensor& in_w, const torch::Tensor& fc2, const torch::Tensor& glu,
                 const torch::Tensor& gain, const torch::Tensor& bias) {
  return {in_w.data_ptr<float>(), fc2.data_ptr<float>(), glu.data_ptr<float>(),
          gain.data_ptr<float>(), bias.data_ptr<float>()};
}

// out [R, d] += sum_j w[j, r] * (gain_j * LayerNorm(GRN_j(z[j, r])) + bias_j).
void forward(const torch::Tensor& z, const torch::Tensor& w, int64_t seed, int64_t threshold,
             const torch::Tensor& in_w, const torch::Tensor& fc2, const torch::Tensor& glu,
             const torch::Tensor& gain, const torch::Tensor& bias, torch::Tensor& out,
             double eps) {
  const Sizes sz = sizes(z, w, in_w, fc2, glu, gain, bias);
  const Dropout drop = dropout_of(seed, threshold);
  check(out, "out", 2, at::kFloat);
  const float* z_p = z.data_ptr<float>();
  const float* w_p = w.data_ptr<float>();
  const Params p = params_of(in_w, fc2, glu, gain, bias);
  float* out_p = out.data_ptr<float>();
  const float e = static_cast<float>(eps);
  // whole tiles per task: a row's tile, and so its arithmetic, is the same at any split
  const int64_t tiles = (sz.rows + kTile - 1) / kTile;
  at::parallel_for(0, tiles, (kRowGrain + kTile - 1) / kTile, [&](int64_t t0, int64_t t1) {
    Tile c(sz);
    const int64_t r0 = t0 * kTile, r1 = std::min(t1 * kTile, sz.rows);
    for (int64_t j = 0; j < sz.n; ++j) {  // a variable's weights stay in cache over the rows
      const Weights wj = weights_of(sz, j, p);
      int64_t r = r0;
      for (; r + kTile <= r1; r += kTile)
        tile_add_out<kTile>(sz, j, r, z_p, w_p, drop, wj, e, c, out_p);
      for (; r < r1; ++r) tile_add_out<1>(sz, j, r, z_p, w_p, drop, wj, e, c, out_p);
    }
  });
}

// Given grad [R, d] of `out`, writes d_w [n, R] and (if not empty) d_z [n, R, k]; adds the
// weight gradients to d_in_w, d_fc2, d_glu, d_gain and d_bias (their "1" columns untouched).
void backward(const torch::Tensor& z, const torch::Tensor& w, int64_t seed, int64_t threshold,
              const torch::Tensor& in_w, const torch::Tensor& fc2, const torch::Tensor& glu,
              const torch::Tensor& gain, const torch::Tensor& bias, const torch::Tensor& grad,
              torch::Tensor& d_w, torch::Tensor& d_z, torch::Tensor& d_in_w,
              torch::Tensor& d_fc2, torch::Tensor& d_glu, torch::Tensor& d_gain,
              torch::Tensor& d_bias, double eps) {
  const Sizes sz = sizes(z, w, in_w, fc2, glu, gain, bias);
  const Dropout drop = dropout_of(seed, threshold);
  check(grad, "grad", 2, at::kFloat), check(d_w, "d_w", 2, at::kFloat);
  check(d_in_w, "d_in_w", 3, at::kFloat), check(d_fc2, "d_fc2", 3, at::kFloat);
  check(d_glu, "d_glu", 3, at::kFloat), check(d_gain, "d_gain", 2, at::kFloat);
  check(d_bias, "d_bias", 2, at::kFloat);
  if (d_z.numel() > 0) check(d_z, "d_z", 3, at::kFloat);
  const float* z_p = z.data_ptr<float>();
  const float* w_p = w.data_ptr<float>();
  const Params p = params_of(in_w, fc2, glu, gain, bias);
  const Outputs out{grad.data_ptr<float>(),  d_w.data_ptr<float>(),
                    d_z.numel() > 0 ? d_z.data_ptr<float>() : nullptr,
                    d_in_w.data_ptr<float>(), d_fc2.data_ptr<float>(),
                    d_glu.data_ptr<float>(),  d_gain.data_ptr<float>(),
                    d_bias.data_ptr<float>()};
  const float e = static_cast<float>(eps);
  at::parallel_for(0, sz.n, 1, [&](int64_t j0, int64_t j1) {
    Tile c(sz);
    Grads b(sz);
    for (int64_t j = j0; j < j1; ++j) {
      const Weights wj = weights_of(sz, j, p);
      b.transpose(sz, wj);
      float* d_glu_j = out.d_glu + j * (sz.g + 1) * 2 * sz.d;
      int64_t r = 0;
      for (; r + kTile <= sz.rows; r += kTile) {
        tile_backward<kTile>(sz, j, r, z_p, w_p, drop, wj, e, c, b, out);
        if (b.filled == kBatch) b.flush(sz, d_glu_j);
      }
      for (; r < sz.rows; ++r) {
        tile_backward<1>(sz, j, r, z_p, w_p, drop, wj, e, c, b, out);
        if (b.filled == kBatch) b.flush(sz, d_glu_j);
      }
      b.flush(sz, d_glu_j);
    }
  });
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "a VSN's GRNs and weighted sum, tile by tile (adds to out)");
  m.def("backward", &backward, "its backward (recomputes each tile)");
}
