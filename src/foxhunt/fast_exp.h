// Shared by foxhunt's C++ kernels (included from the package directory, cpp_kernels.py).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace foxhunt {

// Cephes' expf: x = n ln2 + r with ln2 = kLn2Hi - kLn2Lo (split for precision), then
// exp(r) = 1 + r + r^2 * P(r), P's coefficients highest degree first. One set of constants
// for the scalar, 8- and 16-lane versions below, which compute the same values.
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = 2.12194440e-4f;
constexpr float kExpPoly[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                              4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
constexpr int kExpDegree = sizeof(kExpPoly) / sizeof(kExpPoly[0]);

// exp(x): relative error < 1e-7 on [-87, 88] (clamped outside), and unlike a libm
// call it vectorizes inline. The clamp is written with comparisons so that a NaN stays NaN
// (fmin/fmax would return the bound) and the trainer's non-finite check still sees it.
inline float exp_approx(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  const float n = std::floor(x * kLog2e + 0.5f);  // x = n ln2 + r
  const float r = x - n * kLn2Hi + n * kLn2Lo;
  float p = kExpPoly[0];
  for (int i = 1; i < kExpDegree; ++i) p = p * r + kExpPoly[i];
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

#if defined(__AVX512F__)
// exp_approx on 16 lanes (AVX-512): the same polynomial, 2^n by scalef. A NaN
// stays NaN through the clamp (max/min return their second operand for a NaN).
inline __m512 exp_approx16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.f), _mm512_max_ps(_mm512_set1_ps(-87.f), x));
  const __m512 n = _mm512_roundscale_ps(
      _mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)),
      _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpPoly[0]);
  for (int i = 1; i < kExpDegree; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpPoly[i]));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return _mm512_scalef_ps(p, n);
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
// exp_approx on 8 lanes (AVX2): the same polynomial and 2^n by exponent bits; a NaN stays NaN.
inline __m256 exp_approx8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.f), _mm256_max_ps(_mm256_set1_ps(-87.f), x));
  const __m256 n = _mm256_floor_ps(
      _mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpPoly[0]);
  for (int i = 1; i < kExpDegree; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpPoly[i]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  const __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);  // 2^n
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}
#endif

}  // namespace foxhunt
