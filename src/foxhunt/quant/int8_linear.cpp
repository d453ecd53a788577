// An int8 Linear layer in one call: float32 in, float32 out.
//
// What foxhunt's QuantizedLinear (quant/linear.py) computes: a QAT layer on its frozen
// activation grids (static), or a post-training one whose input grid is chosen per call
// (dynamic, 7-bit), without materializing the quantized input and output tensors, with an
// int8 GEMM. Inputs and outputs round as ATen's fake_quantize_per_tensor_affine rounds
// (x * (1 / scale) in float, to nearest even, then the zero point), on 0..qmax (255 or 127):
//
//   xq  = clamp(round(x * (1 / x_scale)) + x_zp, 0, qmax)                (uint8 input)
//   acc = sum_k xq[k] * w[n, k] - x_zp * sum_k w[n, k]                    (exact, int32)
//   y   = acc * x_scale * w_scale[n] + bias[n]
//   y   = (clamp(round(y * (1 / out_scale)) + out_zp, 0, qmax) - out_zp) * out_scale  if out_scale > 0
//   out = y                                    or, with glu, the GLU of the layer's output:
//   out[c] = y[c] * sigmoid(y[c + N/2])        (GatedLinearUnit: its projection and F.glu)
//   out = LayerNorm(out + skip)                with a skip: a whole GateAddNorm in one call
//
// The weights are int8, symmetric per output channel, packed by kernel.py for VNNI's
// vpdpbusd: blocks of 16 output channels x 4 consecutive inputs, [N/16, K/4, 16, 4] (zero
// padded); for glu the output channels are ordered [32 values, their 32 gates, ...]
// (glu_order()), so that a tile of 4 blocks holds 32 outputs' values and gates. With AVX-512
// VNNI (Cascade Lake / Ice Lake and newer Xeons, Zen 4) a micro-kernel keeps a tile of 6 rows
// x 64 outputs in registers; with AVX2 only (older and client CPUs, Zen 2/3) products are
// widened to int16 and summed by vpmaddwd, 2 rows x 16 outputs a tile. Both compute the
// same integers and the same epilogue. Built without either, simd() is "none", linear()
// refuses, and QuantizedLinear's own (float32 reference) forward computes the layer.
#include "torch_api.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fast_exp.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define FOXHUNT_VNNI 1
#define FOXHUNT_AVX2 0
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define FOXHUNT_VNNI 0
#define FOXHUNT_AVX2 1
#else
#define FOXHUNT_VNNI 0
#define FOXHUNT_AVX2 0
#endif

namespace {

constexpr int64_t kLanes = 16;     // output channels per packed block (one zmm of int32)
constexpr int64_t kGroup = 4;      // inputs per vpdpbusd lane
constexpr int64_t kRowBlock = 48;  // rows quantized together (a multiple of every MR)

struct Epilogue {
  const int32_t* col_sum;  // [N] sum_k w[n, k]
  const float* w_scale;    // [N]
  const float* bias;       // [N] or nullptr
  int64_t n;               // output channels
  float x_scale;
  int32_t x_zp;
  float out_scale;  // 0: no output quantization (dynamic)
  float inv_out_scale;
  int32_t out_zp;
  int32_t qmax;  // top of the activation grid: 255 (8-bit) or 127 (7-bit)
  bool glu;     // channels in glu order; the output is [..., N/2]
  int64_t ldo;  // output row stride: N, or N/2 for glu
};

constexpr int64_t kGluTile = 2 * kLanes;  // GLU outputs per tile of 4 blocks

#if FOXHUNT_VNNI
// out[l] = y[l] * sigmoid(y[32 + l]) for the 32 outputs of a tile, y in glu order
inline void glu32(const float* y, float* out) {
  const __m512 one = _mm512_set1_ps(1.f);
  for (int h = 0; h < 2; ++h) {
    const __m512 gate = _mm512_load_ps(y + kGluTile + h * kLanes);
    const __m512 minus_gate = _mm512_sub_ps(_mm512_setzero_ps(), gate);
    const __m512 denom = _mm512_add_ps(one, foxhunt::exp_approx16(minus_gate));
    _mm512_storeu_ps(out + h * kLanes, _mm512_div_ps(_mm512_load_ps(y + h * kLanes), denom));
  }
}

// Rows [0, rows) of x quantized to uint8, each row padded to kp bytes (padding multiplies
// zero weights). Exactly as ATen's fake_quantize_per_tensor_affine: x * (1 / scale) in
// float, rounded half to even, plus the zero point, clamped to 0..qmax. Where an input sits
// on a rounding tie (common: one layer's output grid feeds the next layer), any other order
// (torch.ao's quantize_per_tensor adds the zero point before rounding) may round it to the
// other neighbour. Clamping to -zp..qmax-zp before rounding is the same (integer bounds)
// and keeps the conversion in int32's range.
void quantize_rows(const float* x, int64_t rows, int64_t k, int64_t kp, float inv_scale,
                   int32_t zp, int32_t qmax, uint8_t* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x + r * k;
    uint8_t* dst = out + r * kp;
    int64_t i = 0;
    const __m512 inv = _mm512_set1_ps(inv_scale);
    const __m512 lo = _mm512_set1_ps(static_cast<float>(-zp));
    const __m512 hi = _mm512_set1_ps(static_cast<float>(qmax - zp));
    const __m512i zero = _mm512_setzero_si512(), top = _mm512_set1_epi32(qmax);
    const __m512i z = _mm512_set1_epi32(zp);
    for (; i < k; i += 16) {
      const __mmask16 m = static_cast<__mmask16>(k - i >= 16 ? 0xFFFF : (1u << (k - i)) - 1u);
      __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, src + i), inv);
      v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));  // a NaN stays NaN
      // round half to even; a NaN converts to INT_MIN and clamps to 0, as in torch
      __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), z);
      q = _mm512_min_epi32(top, _mm512_max_epi32(zero, q));
      _mm512_mask_cvtepi32_storeu_epi8(dst + i, m, q);
    }
    std::memset(dst + k, 0, kp - k);
  }
}

// Writes out[i, c] for the MR rows and NB blocks of 16 channels from block b0 of a tile.
template <int MR, int NB>
void epilogue(const __m512i (&acc)[MR][NB], int64_t b0, const Epilogue& e, float* out,
              int64_t ldo) {
  // (clamp(round(y / s) + zp, 0, qmax) - zp) * s == clamp(round(y / s), -zp, qmax - zp) * s
  const __m512 inv = _mm512_set1_ps(e.inv_out_scale), so = _mm512_set1_ps(e.out_scale);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(-e.out_zp));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(e.qmax - e.out_zp));
  alignas(64) float glu_in[MR][NB * kLanes];  // glu: the tile's y, then its GLU
  for (int j = 0; j < NB; ++j) {
    const int64_t c0 = (b0 + j) * kLanes;
    const int64_t valid = std::min<int64_t>(kLanes, e.n - c0);
    const __mmask16 m = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512i comp = _mm512_mullo_epi32(_mm512_set1_epi32(e.x_zp),
                                            _mm512_maskz_loadu_epi32(m, e.col_sum + c0));
    const __m512 mult =
        _mm512_mul_ps(_mm512_set1_ps(e.x_scale), _mm512_maskz_loadu_ps(m, e.w_scale + c0));
    const __m512 bias = e.bias ? _mm512_maskz_loadu_ps(m, e.bias + c0) : _mm512_setzero_ps();
    for (int i = 0; i < MR; ++i) {
      __m512 y = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][j], comp));
      y = _mm512_fmadd_ps(y, mult, bias);
      if (e.out_scale > 0.f) {
        const __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(y, inv),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        y = _mm512_mul_ps(_mm512_min_ps(hi, _mm512_max_ps(lo, q)), so);
      }
      if (e.glu)
        _mm512_store_ps(glu_in[i] + j * kLanes, y);
      else
        _mm512_mask_storeu_ps(out + i * ldo + c0, m, y);
    }
  }
  if (e.glu)  // NB == 4 here: blocks of a GLU layer come in fours (glu_order)
    for (int i = 0; i < MR; ++i) glu32(glu_in[i], out + i * ldo + (b0 / 4) * kGluTile);
}

inline __m512i broadcast4(const uint8_t* p) {
  int32_t four;
  std::memcpy(&four, p, sizeof four);
  return _mm512_set1_epi32(four);
}

// out for MR rows x NB blocks of 16 channels from block b0: the edges of the matrix.
template <int MR, int NB>
void tile(const uint8_t* xq, int64_t kp, const int8_t* packed, int64_t kg, int64_t b0,
          const Epilogue& e, float* out, int64_t ldo) {
  __m512i acc[MR][NB];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_setzero_si512();
  for (int64_t g = 0; g < kg; ++g) {
    __m512i w[NB];
    for (int j = 0; j < NB; ++j)
      w[j] = _mm512_loadu_si512(packed + ((b0 + j) * kg + g) * kLanes * kGroup);
    for (int i = 0; i < MR; ++i) {
      const __m512i x = broadcast4(xq + i * kp + g * kGroup);
      for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], x, w[j]);
    }
  }
  epilogue<MR, NB>(acc, b0, e, out, ldo);
}

// The full 6 x 64 tile with its 24 accumulators written out, so that g++ keeps them in
// registers (it leaves an array of them on the stack, which costs ~4x).
#define FOXHUNT_ROW(i)                                   \
  x = broadcast4(xq + (i) * kp + g * kGroup);            \
  c##i##0 = _mm512_dpbusd_epi32(c##i##0, x, w0);         \
  c##i##1 = _mm512_dpbusd_epi32(c##i##1, x, w1);         \
  c##i##2 = _mm512_dpbusd_epi32(c##i##2, x, w2);         \
  c##i##3 = _mm512_dpbusd_epi32(c##i##3, x, w3);
template <>
void tile<6, 4>(const uint8_t* xq, int64_t kp, const int8_t* packed, int64_t kg, int64_t b0,
                const Epilogue& e, float* out, int64_t ldo) {
  const __m512i z = _mm512_setzero_si512();
  __m512i c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z;
  __m512i c20 = z, c21 = z, c22 = z, c23 = z, c30 = z, c31 = z, c32 = z, c33 = z;
  __m512i c40 = z, c41 = z, c42 = z, c43 = z, c50 = z, c51 = z, c52 = z, c53 = z;
  const int64_t stride = kg * kLanes * kGroup;  // between blocks of 16 channels
  const int8_t* wp = packed + b0 * stride;
  for (int64_t g = 0; g < kg; ++g, wp += kLanes * kGroup) {
    const __m512i w0 = _mm512_loadu_si512(wp), w1 = _mm512_loadu_si512(wp + stride);
    const __m512i w2 = _mm512_loadu_si512(wp + 2 * stride);
    const __m512i w3 = _mm512_loadu_si512(wp + 3 * stride);
    __m512i x;
    FOXHUNT_ROW(0) FOXHUNT_ROW(1) FOXHUNT_ROW(2) FOXHUNT_ROW(3) FOXHUNT_ROW(4) FOXHUNT_ROW(5)
  }
  const __m512i acc[6][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23},
                             {c30, c31, c32, c33}, {c40, c41, c42, c43}, {c50, c51, c52, c53}};
  epilogue<6, 4>(acc, b0, e, out, ldo);
}
#undef FOXHUNT_ROW

template <int MR>
void row_tile(const uint8_t* xq, int64_t kp, const int8_t* packed, int64_t kg, int64_t blocks,
              const Epilogue& e, float* out, int64_t ldo) {
  int64_t b = 0;
  for (; b + 4 <= blocks; b += 4) tile<MR, 4>(xq, kp, packed, kg, b, e, out, ldo);
  switch (blocks - b) {
    case 3: tile<MR, 3>(xq, kp, packed, kg, b, e, out, ldo); break;
    case 2: tile<MR, 2>(xq, kp, packed, kg, b, e, out, ldo); break;
    case 1: tile<MR, 1>(xq, kp, packed, kg, b, e, out, ldo); break;
    default: break;
  }
}

void compute(const uint8_t* xq, int64_t rows, int64_t kp, const int8_t* packed, int64_t kg,
             int64_t blocks, const Epilogue& e, float* out) {
  constexpr int MR = 6;
  int64_t r = 0;
  for (; r + MR <= rows; r += MR)
    row_tile<MR>(xq + r * kp, kp, packed, kg, blocks, e, out + r * e.ldo, e.ldo);
  const uint8_t* xr = xq + r * kp;
  float* o = out + r * e.ldo;
  switch (rows - r) {
    case 5: row_tile<5>(xr, kp, packed, kg, blocks, e, o, e.ldo); break;
    case 4: row_tile<4>(xr, kp, packed, kg, blocks, e, o, e.ldo); break;
    case 3: row_tile<3>(xr, kp, packed, kg, blocks, e, o, e.ldo); break;
    case 2: row_tile<2>(xr, kp, packed, kg, blocks, e, o, e.ldo); break;
    case 1: row_tile<1>(xr, kp, packed, kg, blocks, e, o, e.ldo); break;
    default: break;
  }
}
#endif  // FOXHUNT_VNNI

#if FOXHUNT_AVX2
// Without VNNI: u8 x s8 products widened to int16 and summed in pairs by vpmaddwd (exact,
// unlike vpmaddubsw, which saturates with 8-bit activations), 2 rows x 16 channels a tile.
// The same packed weights, quantization and epilogue math as the VNNI path.

void quantize_rows(const float* x, int64_t rows, int64_t k, int64_t kp, float inv_scale,
                   int32_t zp, int32_t qmax, uint8_t* out) {
  const __m256 inv = _mm256_set1_ps(inv_scale);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(-zp));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(qmax - zp));
  const __m256i z = _mm256_set1_epi32(zp);
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x + r * k;
    uint8_t* dst = out + r * kp;
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {  // as ATen's fake quantization: round half to even, + zp
      __m256 v = _mm256_mul_ps(_mm256_loadu_ps(src + i), inv);
      v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));  // a NaN stays NaN, converts to INT_MIN
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), z);  // and saturates to 0
      const __m128i w =
          _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + i), _mm_packus_epi16(w, w));
    }
    for (; i < k; ++i) {
      const float v = src[i] * inv_scale;
      const float c = std::min(static_cast<float>(qmax - zp), std::max(static_cast<float>(-zp), v));
      dst[i] = v == v ? static_cast<uint8_t>(std::nearbyint(c) + zp) : 0;
    }
    std::memset(dst + k, 0, kp - k);
  }
}

inline __m256i broadcast4(const uint8_t* p) {  // 4 inputs as int16, repeated 4 times
  int32_t four;
  std::memcpy(&four, p, sizeof four);
  return _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(four)));
}

// 16 int8 weights (4 channels x 4 inputs) as int16
inline __m256i widen16(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 8 channels' int32 sums from the pair sums of 4 channels each: [c0a c0b c1a c1b | c2a ...]
inline __m256i channel_sums(__m256i a, __m256i b) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(a, b), 0xD8);
}

// y (float, before GLU / LayerNorm) of 16 channels of block b for rows r0 and r1
// (r1 == r0 for a lone last row), into y0 / y1 at the block's channel offset.
void tile(const uint8_t* x0, const uint8_t* x1, const int8_t* packed, int64_t kg, int64_t b,
          const Epilogue& e, float* y0, float* y1) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;  // row 0, 4 channels each
  __m256i b0 = a0, b1 = a0, b2 = a0, b3 = a0;                      // row 1
  const int8_t* wp = packed + b * kg * kLanes * kGroup;
  for (int64_t g = 0; g < kg; ++g, wp += kLanes * kGroup) {
    const __m256i w0 = widen16(wp), w1 = widen16(wp + 16), w2 = widen16(wp + 32);
    const __m256i w3 = widen16(wp + 48);
    const __m256i u = broadcast4(x0 + g * kGroup), v = broadcast4(x1 + g * kGroup);
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(w0, u));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(w1, u));
    a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(w2, u));
    a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(w3, u));
    b0 = _mm256_add_epi32(b0, _mm256_madd_epi16(w0, v));
    b1 = _mm256_add_epi32(b1, _mm256_madd_epi16(w1, v));
    b2 = _mm256_add_epi32(b2, _mm256_madd_epi16(w2, v));
    b3 = _mm256_add_epi32(b3, _mm256_madd_epi16(w3, v));
  }
  const __m256i sums[2][2] = {{channel_sums(a0, a1), channel_sums(a2, a3)},
                              {channel_sums(b0, b1), channel_sums(b2, b3)}};
  const __m256 inv = _mm256_set1_ps(e.inv_out_scale), so = _mm256_set1_ps(e.out_scale);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(-e.out_zp));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(e.qmax - e.out_zp));
  for (int h = 0; h < 2; ++h) {  // channels c0 .. c0 + 8; those past n: masked, then dropped
    const int64_t c0 = b * kLanes + h * 8;
    const int64_t valid = std::max<int64_t>(0, std::min<int64_t>(8, e.n - c0));
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(valid)),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i comp =
        _mm256_mullo_epi32(_mm256_set1_epi32(e.x_zp), _mm256_maskload_epi32(e.col_sum + c0, m));
    const __m256 mult =
        _mm256_mul_ps(_mm256_set1_ps(e.x_scale), _mm256_maskload_ps(e.w_scale + c0, m));
    const __m256 bias = e.bias ? _mm256_maskload_ps(e.bias + c0, m) : _mm256_setzero_ps();
    for (int i = 0; i < 2; ++i) {
      const __m256 acc = _mm256_cvtepi32_ps(_mm256_sub_epi32(sums[i][h], comp));
      __m256 y = _mm256_fmadd_ps(acc, mult, bias);
      if (e.out_scale > 0.f) {
        const __m256 q = _mm256_round_ps(_mm256_mul_ps(y, inv),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        y = _mm256_mul_ps(_mm256_min_ps(hi, _mm256_max_ps(lo, q)), so);
      }
      _mm256_storeu_ps((i ? y1 : y0) + c0, y);
    }
  }
}

// out[l] = y[l] * sigmoid(y[32 + l]) for the 32 outputs of a GLU tile, y in glu order
inline void glu32(const float* y, float* out) {
  const __m256 one = _mm256_set1_ps(1.f);
  for (int h = 0; h < 4; ++h) {
    const __m256 gate = _mm256_loadu_ps(y + kGluTile + 8 * h);
    const __m256 minus_gate = _mm256_sub_ps(_mm256_setzero_ps(), gate);
    const __m256 denom = _mm256_add_ps(one, foxhunt::exp_approx8(minus_gate));
    _mm256_storeu_ps(out + 8 * h, _mm256_div_ps(_mm256_loadu_ps(y + 8 * h), denom));
  }
}

void finish_row(const float* y, const Epilogue& e, float* out) {
  if (!e.glu) {
    std::memcpy(out, y, e.n * sizeof(float));
    return;
  }
  for (int64_t t = 0; t < e.n / (2 * kGluTile); ++t)
    glu32(y + 2 * kGluTile * t, out + kGluTile * t);
}

void compute(const uint8_t* xq, int64_t rows, int64_t kp, const int8_t* packed, int64_t kg,
             int64_t blocks, const Epilogue& e, float* out) {
  std::vector<float> y(2 * blocks * kLanes);
  float* y0 = y.data();
  float* y1 = y0 + blocks * kLanes;
  for (int64_t r = 0; r < rows; r += 2) {
    const bool pair = r + 1 < rows;
    const uint8_t* x0 = xq + r * kp;
    const uint8_t* x1 = pair ? x0 + kp : x0;
    for (int64_t b = 0; b < blocks; ++b) tile(x0, x1, packed, kg, b, e, y0, y1);
    finish_row(y0, e, out + r * e.ldo);
    if (pair) finish_row(y1, e, out + (r + 1) * e.ldo);
  }
}
#endif  // FOXHUNT_AVX2

// rows of out = LayerNorm(out + skip) * gain + shift, in place (nn.LayerNorm: biased variance)
void add_norm(float* out, const float* skip, int64_t rows, int64_t d, const float* gain,
              const float* shift, float eps) {
  const float inv_d = 1.f / static_cast<float>(d);
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + r * d;
    const float* s = skip + r * d;
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < d; ++c) {
      o[c] += s[c];
      sum += o[c];
    }
    const float mean = sum * inv_d;
    float sq = 0.f;
#pragma omp simd reduction(+ : sq)
    for (int64_t c = 0; c < d; ++c) sq += (o[c] - mean) * (o[c] - mean);
    const float rstd = 1.f / std::sqrt(sq * inv_d + eps);
#pragma omp simd
    for (int64_t c = 0; c < d; ++c) o[c] = (o[c] - mean) * rstd * gain[c] + shift[c];
  }
}

void check(const torch::Tensor& t, const char* name, torch::ScalarType type) {
  TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == type && t.is_contiguous(), name,
              " must be a contiguous CPU tensor of ", type);
}

}  // namespace

// x [..., K] float32 -> [..., N] float32; see the top of this file.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& packed,
                     const torch::Tensor& col_sum, const torch::Tensor& w_scale,
                     const c10::optional<torch::Tensor>& bias, double x_scale, int64_t x_zp,
                     double out_scale, int64_t out_zp, bool glu,
                     const c10::optional<torch::Tensor>& skip,
                     const c10::optional<torch::Tensor>& norm_weight,
                     const c10::optional<torch::Tensor>& norm_bias, double eps, int64_t qmax) {
#if !FOXHUNT_VNNI && !FOXHUNT_AVX2
  TORCH_CHECK(false, "foxhunt's int8 kernel was built without AVX-512 VNNI or AVX2 (simd() is "
              "\"none\"); keep foxhunt's reference int8 layers on this CPU");
#endif
  check(x, "x", torch::kFloat32), check(packed, "packed", torch::kInt8);
  check(col_sum, "col_sum", torch::kInt32), check(w_scale, "w_scale", torch::kFloat32);
  TORCH_CHECK(x.dim() >= 1 && packed.dim() == 4, "x must be [..., K], packed [N/16, K/4, 16, 4]");
  const int64_t k = x.size(-1), m = k ? x.numel() / k : 0, n = col_sum.size(0);
  const int64_t blocks = packed.size(0), kg = packed.size(1), kp = kg * kGroup;
  TORCH_CHECK(packed.size(2) == kLanes && packed.size(3) == kGroup && kp >= k && kp < k + kGroup &&
                  blocks == (n + kLanes - 1) / kLanes && w_scale.size(0) == n,
              "packed weights do not match x or col_sum");
  const float* bias_p = nullptr;
  if (bias.has_value() && bias->defined()) {
    check(*bias, "bias", torch::kFloat32);
    TORCH_CHECK(bias->numel() == n, "bias must have N entries");
    bias_p = bias->data_ptr<float>();
  }
  TORCH_CHECK(qmax > 0 && qmax <= 255 && x_scale > 0 && x_zp >= 0 && x_zp <= qmax &&
                  out_scale >= 0 && out_zp >= 0 && out_zp <= qmax,
              "invalid quantization parameters");
  TORCH_CHECK(!glu || n % (2 * kGluTile) == 0, "glu needs N a multiple of ", 2 * kGluTile);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = glu ? n / 2 : n;
  auto out = torch::empty(shape, x.options());
  const float *skip_p = nullptr, *gain_p = nullptr, *shift_p = nullptr;
  if (skip.has_value() && skip->defined()) {
    check(*skip, "skip", torch::kFloat32);
    TORCH_CHECK(skip->sizes() == out.sizes(), "skip must be shaped like the output");
    TORCH_CHECK(norm_weight.has_value() && norm_bias.has_value(), "skip needs the LayerNorm");
    check(*norm_weight, "norm_weight", torch::kFloat32);
    check(*norm_bias, "norm_bias", torch::kFloat32);
    TORCH_CHECK(norm_weight->numel() == shape.back() && norm_bias->numel() == shape.back(),
                "LayerNorm parameters must match the output size");
    skip_p = skip->data_ptr<float>();
    gain_p = norm_weight->data_ptr<float>();
    shift_p = norm_bias->data_ptr<float>();
  }
  const Epilogue e{col_sum.data_ptr<int32_t>(), w_scale.data_ptr<float>(), bias_p, n,
                   static_cast<float>(x_scale), static_cast<int32_t>(x_zp),
                   static_cast<float>(out_scale),
                   out_scale > 0 ? 1.f / static_cast<float>(out_scale) : 0.f,  // as ATen
                   static_cast<int32_t>(out_zp), static_cast<int32_t>(qmax), glu, glu ? n / 2 : n};
  const float* x_p = x.data_ptr<float>();
  const int8_t* w_p = packed.data_ptr<int8_t>();
  float* out_p = out.data_ptr<float>();
  const float inv_x = 1.f / static_cast<float>(x_scale);  // in float, as torch
#if FOXHUNT_VNNI || FOXHUNT_AVX2
  at::parallel_for(0, (m + kRowBlock - 1) / kRowBlock, 1, [&](int64_t t0, int64_t t1) {
    std::vector<uint8_t> xq(kRowBlock * kp);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = t * kRowBlock, rows = std::min(kRowBlock, m - r0);
      quantize_rows(x_p + r0 * k, rows, k, kp, inv_x, e.x_zp, e.qmax, xq.data());
      compute(xq.data(), rows, kp, w_p, kg, blocks, e, out_p + r0 * e.ldo);
      if (skip_p)  // while the block is in cache
        add_norm(out_p + r0 * e.ldo, skip_p + r0 * e.ldo, rows, e.ldo, gain_p, shift_p,
                 static_cast<float>(eps));
    }
  });
#endif
  return out;
}

std::string simd() { return FOXHUNT_VNNI ? "avx512-vnni" : FOXHUNT_AVX2 ? "avx2" : "none"; }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("linear", &linear, "int8 Linear: quantize, int8 GEMM, dequantize (one call)",
        py::arg("x"), py::arg("packed"), py::arg("col_sum"), py::arg("w_scale"), py::arg("bias"),
        py::arg("x_scale"), py::arg("x_zp"), py::arg("out_scale"), py::arg("out_zp"),
        py::arg("glu") = false, py::arg("skip") = py::none(),
        py::arg("norm_weight") = py::none(), py::arg("norm_bias") = py::none(),
        py::arg("eps") = 1e-5, py::arg("qmax") = 255);
  m.def("simd", &simd, "the instruction set this build computes with (avx512-vnni, avx2, none)");
}
